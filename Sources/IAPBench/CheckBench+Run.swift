import Crypto
import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSigning
import IAPSupport
import IAPValidatorAPI

extension CheckBench {
    /// Measures, in this process: unsigned cases/s on one job; then `rounds` rounds of a signed check on one job, in
    /// slices of about 50 cases with bursts of ES256 and P-384 prices on a real token's signing input between them,
    /// each round giving the ECDSA operations per case and a crypto-limit ratio; the medians; then signed cases/s
    /// with `jobs` jobs.
    public static func run(cases: Int, unsignedCases: Int, rounds: Int = 3, jobs: Int, emit: (String) -> Void) throws
        -> Figures
    {
        let pricing = try Pricing()
        // Warm-up, not timed: the same cases as each round, so that every round finds the process alike (the test
        // PKI's leaves for their dates signed, tables built, pages faulted in).
        _ = try pricing.prices(scale: 10)
        _ = check(cases, signed: true, jobs: 1)
        let unsignedRun = check(unsignedCases, signed: false, jobs: 1)
        let unsigned = Double(unsignedRun.cases) / unsignedRun.seconds
        emit("unsigned check, 1 job: \(Int(unsigned)) cases/s")
        var done: [Round] = []
        for r in 1...max(1, rounds) {
            let (round, pairs) = try Self.round(cases: cases, pricing: pricing)
            done.append(round)
            emitRound(r, round, pairs: pairs, emit)
        }
        let ratio = Measure.median(done.map(\.cryptoLimitRatio)), es256 = Measure.median(done.map(\.es256LimitRatio))
        let signed = Measure.median(done.map(\.signedCasesPerSecond))
        emit(
            "crypto-limit ratio (signed cases/s × ECDSA µs per case), median of \(done.count): \(f2(ratio)) (ES256 alone: \(f2(es256))); signed check \(Int(signed)) cases/s"
        )
        let (parallel, scaling) = Self.scaling(cases: cases, jobs: jobs, emit: emit)
        return Figures(
            unsignedCasesPerSecond: unsigned, rounds: done, signedCasesPerSecond: signed, cryptoLimitRatio: ratio,
            es256LimitRatio: es256, jobs: jobs, signedCasesPerSecondWithJobs: parallel, scaling: scaling)
    }

    /// The reference checking `n` cases of seed 1, on `jobs` jobs.
    static func checker(_ n: Int, signed: Bool, jobs: Int) -> Checker {
        var o = CheckOptions()
        o.cases = n
        o.seed = 1
        o.signed = signed
        o.jobs = jobs
        var checker = Checker(options: o, validator: ReferenceValidator())
        checker.makeWorker = { ReferenceValidator() }
        return checker
    }

    static func check(_ n: Int, signed: Bool, jobs: Int) -> CheckReport { checker(n, signed: signed, jobs: jobs).run() }

    /// One round: one run, as `check` makes it (one validator, its caches warm across the cases); every `slice` cases
    /// it stops the clock, prices the cryptography in a burst and starts the clock again. The round, and how many
    /// pairs of bursts priced it.
    static func round(cases: Int, pricing: Pricing, slice: Int = 50) throws -> (Round, Int) {
        let state = SliceState(before: try pricing.prices())
        var run = checker(cases, signed: true, jobs: 1)
        run.progress = { n, total in
            guard n % slice == 0 || n == total else { return }
            CryptoCounters.timing.store(false, ordering: .relaxed)
            let seconds = Measure.seconds(since: state.clock)
            let after = (try? pricing.prices()) ?? state.before
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
        return (state.tally.round, state.tally.prices.count)
    }

    /// A round's four lines: the prices, the operations per case, their cost in place, the ratio.
    static func emitRound(_ r: Int, _ round: Round, pairs: Int, _ emit: (String) -> Void) {
        let p = round.prices
        emit(
            "round \(r): ES256 on \(p.inputBytes) bytes sign \(f1(p.microsecondsPerSign)) µs, verify \(f1(p.microsecondsPerVerify)) µs, SHA-256 \(f2(p.microsecondsPerKilobyteHashed)) µs/KB; P-384 sign \(f0(p.microsecondsPerCertificateSign)) µs, verify \(f0(p.microsecondsPerCertificateVerify)) µs (means of \(pairs) pairs of bursts)"
        )
        emit(
            "  signed check, 1 job: \(Int(round.signedCasesPerSecond)) cases/s; per case \(f1(round.signaturesPerCase)) signatures + \(f1(round.verificationsPerCase)) verifications over \(Int(round.kilobytesPerCase)) KB = \(f0(round.es256MicrosecondsPerCase)) µs of ES256, + \(f0(round.certificateMicrosecondsPerCase)) µs of P-384 (new leaves and chains)"
        )
        emit(
            "  in place, among the rest of each case: sign \(f1(round.inPlaceMicrosecondsPerSign)) µs, verify \(f1(round.inPlaceMicrosecondsPerVerify)) µs on average (priced at their input sizes: \(f1(round.pricedMicrosecondsPerSign)) and \(f1(round.pricedMicrosecondsPerVerify)))"
        )
        emit("  crypto-limit ratio: \(f2(round.cryptoLimitRatio)) (ES256 alone: \(f2(round.es256LimitRatio)))")
    }

    /// Scaling against one job run the same way (no bursts between its cases, which would cost it the caches they
    /// evict). Not where the process may use one CPU only (pinned with taskset): its jobs would take turns on that
    /// CPU, and the figure would say nothing about the cores. Cases/s with `jobs` jobs and the scaling, or nils.
    static func scaling(cases: Int, jobs: Int, emit: (String) -> Void) -> (Double?, Double?) {
        let usable = Measure.usableCPUs() ?? jobs
        if jobs < 2 {
            emit("signed check, 1 job: no scaling to measure (give --jobs 2 or more)")
            return (nil, nil)
        }
        if usable < 2 {
            emit(
                "signed check, \(jobs) jobs: not measured: this process may run on one CPU only (an affinity mask, as taskset sets); run without taskset for the scaling over the cores"
            )
            return (nil, nil)
        }
        // One job just before and just after, their mean the baseline: a machine whose speed drifts during the three
        // runs moves both sides alike (a single run before was ×1.5 to ×2.5 on this machine).
        func rate(_ r: CheckReport) -> Double { Double(r.cases) / r.seconds }
        let before = rate(check(cases * jobs, signed: true, jobs: 1))
        let many = rate(check(cases * jobs, signed: true, jobs: jobs))
        let after = rate(check(cases * jobs, signed: true, jobs: 1))
        let one = (before + after) / 2
        let note = usable < jobs ? " (this process may run on \(usable) CPUs only: the jobs share them)" : ""
        emit(
            "signed check, \(jobs) jobs: \(Int(many)) cases/s against \(Int(one)) with 1 job (the mean of \(Int(before)) just before and \(Int(after)) just after): scaling ×\(f2(many / one))\(note)"
        )
        return (many, many / one)
    }
}

/// The cryptography alone, on a real token's signing input (the 3-certificate header and a transaction): hashed and
/// signed as the harness and the reference do (the digest through the hasher's buffer entry point), so the prices
/// are of the same calls. Short bursts (some 30 ms), taken between slices of a round's cases: on a shared machine the
/// speed drifts within a second, and each slice is priced at the bursts on either side.
struct Pricing {
    let input: Data
    let leaf: TestPKI.Leaf
    let tbs: Data
    let caKey = P384.Signing.PrivateKey()
    /// SHA-256 per KB is priced on it.
    let block = Data(repeating: 0x61, count: 64 * 1024)

    init() throws {
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
        else { throw CheckBench.Failure(description: "the sample case has no app transaction to measure") }
        input = Data(token[..<token.lastIndex(of: ".")!].utf8)
        leaf = pki.leaf(at: 0)
        tbs = Data(leaf.issued.certificate.tbsCertificateBytes)
    }

    /// A signature: the digest, the signing, the raw r‖s bytes a token carries. A verification: the signature object
    /// from those bytes, the digest, the check (against a stored public key, as the reference keeps the leaf's).
    func prices(scale: Int = 1) throws -> CheckBench.Prices {
        let (input, leaf, tbs, caKey, block) = (input, leaf, tbs, caKey, block)
        let raw = try input.withUnsafeBytes { try leaf.key.signature(for: JWSSigner.sha256($0)).rawRepresentation }
        let sign = Measure.microseconds(perCall: 150 * scale) {
            _ = input.withUnsafeBytes { try? leaf.key.signature(for: JWSSigner.sha256($0)).rawRepresentation }
        }
        let publicKey = leaf.key.publicKey
        let verify = Measure.microseconds(perCall: 150 * scale) {
            _ = input.withUnsafeBytes { bytes in
                (try? P256.Signing.ECDSASignature(rawRepresentation: raw)).map {
                    publicKey.isValidSignature($0, for: JWSSigner.sha256(bytes))
                }
            }
        }
        let sha = Measure.microseconds(perCall: 16 * scale) { _ = block.withUnsafeBytes { JWSSigner.sha256($0) } } / 64
        let caSignature = try caKey.signature(for: tbs)
        let certificateSign = Measure.microseconds(perCall: 6 * scale) { _ = try? caKey.signature(for: tbs) }
        let caPublicKey = caKey.publicKey
        let certificateVerify = Measure.microseconds(perCall: 6 * scale) {
            _ = caPublicKey.isValidSignature(caSignature, for: tbs)
        }
        return CheckBench.Prices(
            microsecondsPerSign: sign, microsecondsPerVerify: verify, inputBytes: input.count,
            microsecondsPerKilobyteHashed: sha, microsecondsPerCertificateSign: certificateSign,
            microsecondsPerCertificateVerify: certificateVerify)
    }
}
