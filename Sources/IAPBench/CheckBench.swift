import Crypto
import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSigning
import IAPSupport
import IAPValidatorAPI
import Synchronization

/// `iapcheck bench check`: how close a signed check runs to the cost of its cryptography, and how it scales over the
/// cores.
public enum CheckBench {
    /// What the cryptography costs on its own, in a tight loop: the price of each operation a case makes.
    public struct Prices: Codable, Sendable {
        /// ES256 on `inputBytes` of signing input, hashing included.
        public var microsecondsPerSign: Double
        public var microsecondsPerVerify: Double
        public var inputBytes: Int
        /// SHA-256, to price inputs of other sizes (a notification nests two tokens).
        public var microsecondsPerKilobyteHashed: Double
        /// P-384 on a certificate's to-be-signed bytes, as the test PKI and Apple's intermediate and root sign.
        public var microsecondsPerCertificateSign: Double
        public var microsecondsPerCertificateVerify: Double

        /// The mean of two measurements.
        static func mean(_ a: Prices, _ b: Prices) -> Prices {
            Prices(
                microsecondsPerSign: (a.microsecondsPerSign + b.microsecondsPerSign) / 2,
                microsecondsPerVerify: (a.microsecondsPerVerify + b.microsecondsPerVerify) / 2,
                inputBytes: a.inputBytes,
                microsecondsPerKilobyteHashed: (a.microsecondsPerKilobyteHashed + b.microsecondsPerKilobyteHashed) / 2,
                microsecondsPerCertificateSign: (a.microsecondsPerCertificateSign + b.microsecondsPerCertificateSign)
                    / 2,
                microsecondsPerCertificateVerify: (a.microsecondsPerCertificateVerify
                    + b.microsecondsPerCertificateVerify) / 2)
        }
    }

    /// One round: a signed check of the bench's cases on one job, in slices, each priced at the bursts of tight-loop
    /// measurements taken before and after it; the ratio they give.
    public struct Round: Codable, Sendable {
        /// The mean of the round's bursts.
        public var prices: Prices
        public var signedCasesPerSecond: Double
        public var signaturesPerCase: Double
        public var verificationsPerCase: Double
        /// Kilobytes hashed per case by the signatures and verifications (a signature whose token starts with a shared
        /// prefix hashes only what follows it).
        public var kilobytesPerCase: Double
        /// ES256 per case at the prices (each operation at its real input size).
        public var es256MicrosecondsPerCase: Double
        /// P-384 work per case: certificates signed for new leaves, certificate signatures of new chains checked.
        public var certificateMicrosecondsPerCase: Double
        /// The µs a signature and a verification took where they ran, among the rest of each case, and what the
        /// prices say they cost at the same input sizes.
        public var inPlaceMicrosecondsPerSign: Double
        public var inPlaceMicrosecondsPerVerify: Double
        public var pricedMicrosecondsPerSign: Double
        public var pricedMicrosecondsPerVerify: Double
        public var cryptoLimitRatio: Double
        /// The ratio counting the ES256 operations only.
        public var es256LimitRatio: Double
    }

    public struct Figures: Codable, Sendable {
        public var unsignedCasesPerSecond: Double
        public var rounds: [Round]
        /// Medians over the rounds.
        public var signedCasesPerSecond: Double
        public var cryptoLimitRatio: Double
        public var es256LimitRatio: Double
        public var jobs: Int
        /// Nil when not measured: the process could run on one CPU only.
        public var signedCasesPerSecondWithJobs: Double?
        public var scaling: Double?
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Measures, in this process: unsigned cases/s on one job; then `rounds` rounds of a signed check on one job, in
    /// slices of about 50 cases with bursts of ES256 and P-384 prices on a real token's signing input between them,
    /// each round giving the ECDSA operations per case and a crypto-limit ratio; the medians; then signed cases/s
    /// with `jobs` jobs.
    public static func run(cases: Int, unsignedCases: Int, rounds: Int = 3, jobs: Int, emit: (String) -> Void) throws
        -> Figures
    {
        // The cryptography alone, on a real token's signing input (the 3-certificate header and a transaction).
        let pki = TestPKI.harness
        let (sample, _) = Checker(options: CheckOptions(), validator: ReferenceValidator()).generate(caseIndex: 0)
        let renderer = ArtifactRenderer(pki: pki, appAppleId: sample.config.catalog.appAppleId)
        guard
            let token = sample.steps.lazy.compactMap({ step -> String? in
                if case .deliver(let d) = step, case .appTransaction(let s) = d.delivery {
                    return renderer.transaction(s.transaction)
                }
                return nil
            }).first
        else { throw Failure(description: "the sample case has no app transaction to measure") }
        let dot = token.lastIndex(of: ".")!
        let input = Data(token[..<dot].utf8)
        let leaf = pki.leaf(at: 0)
        let tbs = Data(leaf.issued.certificate.tbsCertificateBytes)
        let caKey = P384.Signing.PrivateKey()
        let block = Data(repeating: 0x61, count: 64 * 1024)  // SHA-256 per KB is priced on it

        // Hashed and signed as the harness and the reference do (the digest through the hasher's buffer entry point),
        // so the prices are of the same calls. Short bursts (some 30 ms), taken between slices of a round's cases: on
        // a shared machine the speed drifts within a second, and each slice is priced at the bursts on either side.
        func prices(scale: Int = 1) throws -> Prices {
            // A signature: the digest, the signing, the raw r‖s bytes a token carries. A verification: the signature
            // object from those bytes, the digest, the check. The same calls the harness and the reference make.
            let raw = try input.withUnsafeBytes { try leaf.key.signature(for: JWSSigner.sha256($0)).rawRepresentation }
            let sign = Measure.microseconds(perCall: 150 * scale) {
                _ = input.withUnsafeBytes { try? leaf.key.signature(for: JWSSigner.sha256($0)).rawRepresentation }
            }
            // A stored public key, as the reference keeps the leaf's (`publicKey` of a private key copies the key).
            let publicKey = leaf.key.publicKey
            let verify = Measure.microseconds(perCall: 150 * scale) {
                _ = input.withUnsafeBytes { bytes in
                    (try? P256.Signing.ECDSASignature(rawRepresentation: raw)).map {
                        publicKey.isValidSignature($0, for: JWSSigner.sha256(bytes))
                    }
                }
            }
            let sha =
                Measure.microseconds(perCall: 16 * scale) { _ = block.withUnsafeBytes { JWSSigner.sha256($0) } } / 64
            let caSignature = try caKey.signature(for: tbs)
            let certificateSign = Measure.microseconds(perCall: 6 * scale) { _ = try? caKey.signature(for: tbs) }
            let caPublicKey = caKey.publicKey
            let certificateVerify = Measure.microseconds(perCall: 6 * scale) {
                _ = caPublicKey.isValidSignature(caSignature, for: tbs)
            }
            return Prices(
                microsecondsPerSign: sign, microsecondsPerVerify: verify, inputBytes: input.count,
                microsecondsPerKilobyteHashed: sha, microsecondsPerCertificateSign: certificateSign,
                microsecondsPerCertificateVerify: certificateVerify)
        }

        func checker(_ n: Int, signed: Bool, jobs: Int) -> Checker {
            var o = CheckOptions()
            o.cases = n
            o.seed = 1
            o.signed = signed
            o.jobs = jobs
            var checker = Checker(options: o, validator: ReferenceValidator())
            checker.makeWorker = { ReferenceValidator() }
            return checker
        }
        func check(_ n: Int, signed: Bool, jobs: Int) -> CheckReport { checker(n, signed: signed, jobs: jobs).run() }
        // Warm-up, not timed: the same cases as each round, so that every round finds the process alike (the test
        // PKI's leaves for their dates signed, tables built, pages faulted in).
        _ = try prices(scale: 10)
        _ = check(cases, signed: true, jobs: 1)
        let unsignedRun = check(unsignedCases, signed: false, jobs: 1)
        let unsigned = Double(unsignedRun.cases) / unsignedRun.seconds
        emit("unsigned check, 1 job: \(Int(unsigned)) cases/s")

        var done: [Round] = []
        let slice = 50
        for r in 1...max(1, rounds) {
            // One run, as `check` makes it (one validator, its caches warm across the cases); every `slice` cases it
            // stops the clock, prices the cryptography in a burst and starts the clock again.
            let state = SliceState(before: try prices())
            var run = checker(cases, signed: true, jobs: 1)
            run.progress = { n, total in
                guard n % slice == 0 || n == total else { return }
                CryptoCounters.timing.store(false, ordering: .relaxed)
                let seconds = Measure.seconds(since: state.clock)
                let after = (try? prices()) ?? state.before
                state.tally.add(Prices.mean(state.before, after), cases: n - state.counted, seconds: seconds)
                state.counted = n
                state.before = after
                CryptoCounters.reset()
                CryptoCounters.timing.store(true, ordering: .relaxed)
                state.clock = Measure.now()
            }
            CryptoCounters.reset()
            CryptoCounters.timing.store(true, ordering: .relaxed)
            state.clock = Measure.now()
            let report = run.run()
            CryptoCounters.timing.store(false, ordering: .relaxed)
            guard report.failure == nil, state.counted == cases else {
                throw Failure(description: "the reference failed a case; fix that before benchmarking")
            }
            let tally = state.tally
            let round = tally.round
            done.append(round)
            let p = round.prices
            emit(
                "round \(r): ES256 on \(p.inputBytes) bytes sign \(f1(p.microsecondsPerSign)) µs, verify \(f1(p.microsecondsPerVerify)) µs, SHA-256 \(f2(p.microsecondsPerKilobyteHashed)) µs/KB; P-384 sign \(f0(p.microsecondsPerCertificateSign)) µs, verify \(f0(p.microsecondsPerCertificateVerify)) µs (means of \(tally.prices.count) pairs of bursts)"
            )
            emit(
                "  signed check, 1 job: \(Int(round.signedCasesPerSecond)) cases/s; per case \(f1(round.signaturesPerCase)) signatures + \(f1(round.verificationsPerCase)) verifications over \(Int(round.kilobytesPerCase)) KB = \(f0(round.es256MicrosecondsPerCase)) µs of ES256, + \(f0(round.certificateMicrosecondsPerCase)) µs of P-384 (new leaves and chains)"
            )
            emit(
                "  in place, among the rest of each case: sign \(f1(round.inPlaceMicrosecondsPerSign)) µs, verify \(f1(round.inPlaceMicrosecondsPerVerify)) µs on average (priced at their input sizes: \(f1(round.pricedMicrosecondsPerSign)) and \(f1(round.pricedMicrosecondsPerVerify)))"
            )
            emit("  crypto-limit ratio: \(f2(round.cryptoLimitRatio)) (ES256 alone: \(f2(round.es256LimitRatio)))")
        }
        let ratio = Measure.median(done.map(\.cryptoLimitRatio)), es256 = Measure.median(done.map(\.es256LimitRatio))
        let signed = Measure.median(done.map(\.signedCasesPerSecond))
        emit(
            "crypto-limit ratio (signed cases/s × ECDSA µs per case), median of \(done.count): \(f2(ratio)) (ES256 alone: \(f2(es256))); signed check \(Int(signed)) cases/s"
        )
        // Scaling against one job run the same way (no bursts between its cases, which would cost it the caches
        // they evict). Not where the process may use one CPU only (pinned with taskset): its jobs would
        // take turns on that CPU, and the figure would say nothing about the cores.
        let usable = Measure.usableCPUs() ?? jobs
        var parallel: Double?, scaling: Double?
        if jobs < 2 {
            emit("signed check, 1 job: no scaling to measure (give --jobs 2 or more)")
        } else if usable < 2 {
            emit(
                "signed check, \(jobs) jobs: not measured: this process may run on one CPU only (an affinity mask, as taskset sets); run without taskset for the scaling over the cores"
            )
        } else {
            // One job just before and just after, their mean the baseline: a machine whose speed drifts during
            // the three runs moves both sides alike (a single run before was ×1.5 to ×2.5 on this machine).
            func rate(_ r: CheckReport) -> Double { Double(r.cases) / r.seconds }
            let before = rate(check(cases * jobs, signed: true, jobs: 1))
            let many = rate(check(cases * jobs, signed: true, jobs: jobs))
            let after = rate(check(cases * jobs, signed: true, jobs: 1))
            let one = (before + after) / 2
            let note = usable < jobs ? " (this process may run on \(usable) CPUs only: the jobs share them)" : ""
            emit(
                "signed check, \(jobs) jobs: \(Int(many)) cases/s against \(Int(one)) with 1 job (the mean of \(Int(before)) just before and \(Int(after)) just after): scaling ×\(f2(many / one))\(note)"
            )
            parallel = many
            scaling = many / one
        }
        return Figures(
            unsignedCasesPerSecond: unsigned, rounds: done, signedCasesPerSecond: signed, cryptoLimitRatio: ratio,
            es256LimitRatio: es256, jobs: jobs, signedCasesPerSecondWithJobs: parallel, scaling: scaling)
    }

    /// What the progress callback of a round's run carries from one slice to the next (it runs on the checking
    /// thread, between cases).
    final class SliceState {
        var before: Prices
        var tally = Tally()
        var counted = 0
        var clock: UInt64 = 0
        init(before: Prices) { self.before = before }
    }

    /// A round's sums over its slices: each slice's ES256 operations priced at the bursts around it, at their real
    /// input sizes (the measured cost on the sample input, plus or minus SHA-256 of the difference).
    struct Tally {
        var cases = 0
        var seconds = 0.0
        var signs = 0.0, verifies = 0.0, bytes = 0.0
        var es256 = 0.0, certificates = 0.0
        var signing = 0.0, verifying = 0.0
        var inPlaceSign = 0.0, inPlaceVerify = 0.0
        var prices: [Prices] = []

        /// Adds the slice the counters hold, priced at `p`.
        mutating func add(_ p: Prices, cases n: Int, seconds: Double) {
            func count(_ a: borrowing Atomic<Int>) -> Double { Double(a.load(ordering: .relaxed)) }
            let s = count(CryptoCounters.signatures), v = count(CryptoCounters.verifications)
            let signedBytes = count(CryptoCounters.signedBytes), verifiedBytes = count(CryptoCounters.verifiedBytes)
            let input = Double(p.inputBytes), shaPerByte = p.microsecondsPerKilobyteHashed / 1024
            let signCost = s * p.microsecondsPerSign + (signedBytes - s * input) * shaPerByte
            let verifyCost = v * p.microsecondsPerVerify + (verifiedBytes - v * input) * shaPerByte
            es256 += signCost + verifyCost
            signing += signCost
            verifying += verifyCost
            certificates +=
                count(CryptoCounters.chainSignatureChecks) * p.microsecondsPerCertificateVerify
                + count(CryptoCounters.certificateSignatures) * p.microsecondsPerCertificateSign
            signs += s
            verifies += v
            bytes += signedBytes + verifiedBytes
            inPlaceSign += count(CryptoCounters.signNanoseconds) / 1e3
            inPlaceVerify += count(CryptoCounters.verifyNanoseconds) / 1e3
            cases += n
            self.seconds += seconds
            prices.append(p)
        }

        var round: Round {
            let n = Double(max(1, cases)), k = Double(max(1, prices.count))
            let mean = Prices(
                microsecondsPerSign: prices.map(\.microsecondsPerSign).reduce(0, +) / k,
                microsecondsPerVerify: prices.map(\.microsecondsPerVerify).reduce(0, +) / k,
                inputBytes: prices.first?.inputBytes ?? 0,
                microsecondsPerKilobyteHashed: prices.map(\.microsecondsPerKilobyteHashed).reduce(0, +) / k,
                microsecondsPerCertificateSign: prices.map(\.microsecondsPerCertificateSign).reduce(0, +) / k,
                microsecondsPerCertificateVerify: prices.map(\.microsecondsPerCertificateVerify).reduce(0, +) / k)
            let busy = max(seconds, 1e-9) * 1e6
            return Round(
                prices: mean, signedCasesPerSecond: Double(cases) / max(seconds, 1e-9), signaturesPerCase: signs / n,
                verificationsPerCase: verifies / n, kilobytesPerCase: bytes / 1024 / n,
                es256MicrosecondsPerCase: es256 / n,
                certificateMicrosecondsPerCase: certificates / n,
                inPlaceMicrosecondsPerSign: inPlaceSign / max(1, signs),
                inPlaceMicrosecondsPerVerify: inPlaceVerify / max(1, verifies),
                pricedMicrosecondsPerSign: signing / max(1, signs),
                pricedMicrosecondsPerVerify: verifying / max(1, verifies),
                cryptoLimitRatio: (es256 + certificates) / busy, es256LimitRatio: es256 / busy)
        }
    }

    static func f0(_ x: Double) -> String { String(format: "%.0f", x) }
    static func f1(_ x: Double) -> String { String(format: "%.1f", x) }
    static func f2(_ x: Double) -> String { String(format: "%.2f", x) }
}
