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
        public var cryptoLimitRatio: Double
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
        let ratio = signed * cryptoPerCase / 1e6
        emit(
            "signed check, 1 job: \(Int(signed)) cases/s; per case \(String(format: "%.1f", signs)) signatures + \(String(format: "%.1f", verifies)) verifications over \(Int((signedBytes + verifiedBytes) / 1024)) KB of signing input = \(String(format: "%.0f", cryptoPerCase)) µs of ES256"
        )
        emit("crypto-limit ratio (signed cases/s × ECDSA µs per case): \(String(format: "%.2f", ratio))")
        let (parallel, _) = casesPerSecond(cases * max(1, jobs), signed: true, jobs: jobs)
        emit(
            "signed check, \(jobs) jobs: \(Int(parallel)) cases/s; scaling ×\(String(format: "%.2f", parallel / signed)) over 1 job"
        )
        return Figures(
            microsecondsPerSign: sign, microsecondsPerVerify: verify, unsignedCasesPerSecond: unsigned,
            signedCasesPerSecond: signed, signaturesPerCase: signs, verificationsPerCase: verifies,
            cryptoLimitRatio: ratio, jobs: jobs, signedCasesPerSecondWithJobs: parallel, scaling: parallel / signed)
    }
}
