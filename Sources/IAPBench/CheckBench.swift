import Crypto
import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSigning
import IAPValidatorAPI

/// `iapcheck bench check`: how close a signed check runs to the cost of its cryptography, and how it scales over the
/// cores.
public enum CheckBench {
    public struct Figures: Codable, Sendable {
        public var microsecondsPerSign: Double
        public var microsecondsPerVerify: Double
        public var unsignedCasesPerSecond: Double
        public var signedCasesPerSecond: Double
        public var signaturesPerCase: Double
        public var verificationsPerCase: Double
        /// P-384 work per case: certificates signed for new leaves, certificate signatures of new chains checked.
        public var certificateMicrosecondsPerCase: Double
        public var cryptoLimitRatio: Double
        /// The ratio counting the ES256 operations only.
        public var es256LimitRatio: Double
        public var jobs: Int
        public var signedCasesPerSecondWithJobs: Double
        public var scaling: Double
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Measures, in this process: ES256 sign and verify on a real token's signing input, unsigned and signed cases/s
    /// on one job, the ECDSA operations per case and the crypto-limit ratio, then signed cases/s with `jobs` jobs.
    public static func run(cases: Int, unsignedCases: Int, jobs: Int, emit: (String) -> Void) throws -> Figures {
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
        let signature = try leaf.key.signature(for: input)
        _ = Measure.microseconds(perCall: 200) { _ = try? leaf.key.signature(for: input) }  // warm up
        let sign = Measure.microseconds(perCall: 3000) { _ = try? leaf.key.signature(for: input) }
        let verify = Measure.microseconds(perCall: 3000) {
            _ = leaf.key.publicKey.isValidSignature(signature, for: input)
        }
        // SHA-256 per byte, to price the signing inputs of other sizes (a notification nests two tokens).
        let block = Data(repeating: 0x61, count: 64 * 1024)
        let shaPerByte = Measure.microseconds(perCall: 300) { _ = SHA256.hash(data: block) } / Double(block.count)
        emit(
            "ES256 on a \(input.count)-byte signing input: sign \(String(format: "%.1f", sign)) µs, verify \(String(format: "%.1f", verify)) µs; SHA-256 \(String(format: "%.2f", shaPerByte * 1000)) µs per KB"
        )
        // Certificates are signed with P-384 (SHA-384), as Apple's intermediate and root are: the test PKI signs a
        // leaf for each 30-day slot a run reaches, and a verifier checks two such signatures per new chain.
        let tbs = Data(leaf.issued.certificate.tbsCertificateBytes)
        let caKey = P384.Signing.PrivateKey()
        let caSignature = try caKey.signature(for: tbs)
        let certificateSign = Measure.microseconds(perCall: 200) { _ = try? caKey.signature(for: tbs) }
        let certificateVerify = Measure.microseconds(perCall: 200) {
            _ = caKey.publicKey.isValidSignature(caSignature, for: tbs)
        }
        emit(
            "P-384 on a \(tbs.count)-byte certificate: sign \(String(format: "%.0f", certificateSign)) µs, verify \(String(format: "%.0f", certificateVerify)) µs"
        )

        func casesPerSecond(_ n: Int, signed: Bool, jobs: Int) -> (Double, CheckReport) {
            var o = CheckOptions()
            o.cases = n
            o.seed = 1
            o.signed = signed
            o.jobs = jobs
            var checker = Checker(options: o, validator: ReferenceValidator())
            checker.makeWorker = { ReferenceValidator() }
            let r = checker.run()
            return (Double(r.cases) / r.seconds, r)
        }
        // Warm-up, not timed: the first cases pay for page faults, lazily built tables and the chain cache.
        _ = casesPerSecond(max(50, cases / 5), signed: true, jobs: 1)
        let (unsigned, _) = casesPerSecond(unsignedCases, signed: false, jobs: 1)
        emit("unsigned check, 1 job: \(Int(unsigned)) cases/s")
        CryptoCounters.reset()
        let (signed, report) = casesPerSecond(cases, signed: true, jobs: 1)
        guard report.failure == nil else {
            throw Failure(description: "the reference failed a case; fix that before benchmarking")
        }
        let signs = Double(CryptoCounters.signatures.load(ordering: .relaxed)) / Double(report.cases)
        let verifies = Double(CryptoCounters.verifications.load(ordering: .relaxed)) / Double(report.cases)
        // Each operation at its real input size: the measured cost on `input`, plus or minus the SHA-256 of the
        // difference.
        let signedBytes = Double(CryptoCounters.signedBytes.load(ordering: .relaxed)) / Double(report.cases)
        let verifiedBytes = Double(CryptoCounters.verifiedBytes.load(ordering: .relaxed)) / Double(report.cases)
        let n = Double(input.count)
        let cryptoPerCase =
            signs * sign + verifies * verify + (signedBytes - signs * n + verifiedBytes - verifies * n) * shaPerByte
        let chainChecks = Double(CryptoCounters.chainSignatureChecks.load(ordering: .relaxed)) / Double(report.cases)
        let certificates =
            Double(CryptoCounters.certificateSignatures.load(ordering: .relaxed)) / Double(report.cases)
        let certificatePerCase = chainChecks * certificateVerify + certificates * certificateSign
        let es256Ratio = signed * cryptoPerCase / 1e6
        let ratio = signed * (cryptoPerCase + certificatePerCase) / 1e6
        emit(
            "signed check, 1 job: \(Int(signed)) cases/s; per case \(String(format: "%.1f", signs)) signatures + \(String(format: "%.1f", verifies)) verifications over \(Int((signedBytes + verifiedBytes) / 1024)) KB of signing input = \(String(format: "%.0f", cryptoPerCase)) µs of ES256"
        )
        emit(
            "  and certificates: \(String(format: "%.2f", chainChecks)) signature checks of new chains + \(String(format: "%.2f", certificates)) leaves signed = \(String(format: "%.0f", certificatePerCase)) µs of P-384"
        )
        emit(
            "crypto-limit ratio (signed cases/s × ECDSA µs per case): \(String(format: "%.2f", ratio)) (ES256 alone: \(String(format: "%.2f", es256Ratio)))"
        )
        let (parallel, _) = casesPerSecond(cases * max(1, jobs), signed: true, jobs: jobs)
        emit(
            "signed check, \(jobs) jobs: \(Int(parallel)) cases/s; scaling ×\(String(format: "%.2f", parallel / signed)) over 1 job"
        )
        return Figures(
            microsecondsPerSign: sign, microsecondsPerVerify: verify, unsignedCasesPerSecond: unsigned,
            signedCasesPerSecond: signed, signaturesPerCase: signs, verificationsPerCase: verifies,
            certificateMicrosecondsPerCase: certificatePerCase, cryptoLimitRatio: ratio, es256LimitRatio: es256Ratio,
            jobs: jobs, signedCasesPerSecondWithJobs: parallel, scaling: parallel / signed)
    }
}
