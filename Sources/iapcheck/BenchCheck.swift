import ArgumentParser
import Crypto
import Dispatch
import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSigning

extension Bench {
    /// How close a signed check runs to the cost of its cryptography, and how it scales over the cores.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract:
                "Cases per second of check against the reference, signed and unsigned, beside the cost of the ECDSA it cannot avoid, in one run.",
            discussion: """
                Build with -c release. Prints, measured in this process: µs per ES256 signature and per verification of \
                a real token's signing input; unsigned and signed cases/s on one thread; the ECDSA operations per signed \
                case; the crypto-limit ratio = signed cases/s × ECDSA µs per case / 10⁶ (the share of the signed check's \
                time spent in the cryptography: 1 would mean nothing else costs anything); then signed cases/s with \
                --jobs 1 and with one job per core, and the scaling factor. Pin to one core with taskset for the \
                one-thread figures (the jobs figures need all cores).
                """)

        @Option(help: "Signed cases per measurement.") var cases = 600
        @Option(help: "Unsigned cases.") var unsignedCases = 6000
        @Option(help: "Jobs for the scaling figure (default: the number of cores).") var jobs = ProcessInfo.processInfo
            .activeProcessorCount
        @Option(help: "Write the figures as JSON here.") var json: String?

        struct Figures: Codable {
            var microsecondsPerSign: Double
            var microsecondsPerVerify: Double
            var unsignedCasesPerSecond: Double
            var signedCasesPerSecond: Double
            var signaturesPerCase: Double
            var verificationsPerCase: Double
            var cryptoLimitRatio: Double
            var jobs: Int
            var signedCasesPerSecondWithJobs: Double
            var scaling: Double
        }

        func run() throws {
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
            else { throw ValidationError("the sample case has no app transaction to measure") }
            let dot = token.lastIndex(of: ".")!
            let input = Data(token[..<dot].utf8)
            let leaf = pki.leaf(at: 0)
            let signature = try leaf.key.signature(for: input)
            func perOp(_ n: Int, _ op: () -> Void) -> Double {
                let start = DispatchTime.now().uptimeNanoseconds
                for _ in 0..<n { op() }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3 / Double(n)
            }
            _ = perOp(200) { _ = try? leaf.key.signature(for: input) }  // warm up
            let sign = perOp(3000) { _ = try? leaf.key.signature(for: input) }
            let verify = perOp(3000) { _ = leaf.key.publicKey.isValidSignature(signature, for: input) }
            print(
                "ES256 on a \(input.count)-byte signing input: sign \(String(format: "%.1f", sign)) µs, verify \(String(format: "%.1f", verify)) µs"
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
            let (unsigned, _) = casesPerSecond(unsignedCases, signed: false, jobs: 1)
            print("unsigned check, 1 job: \(Int(unsigned)) cases/s")
            CryptoCounters.reset()
            let (signed, report) = casesPerSecond(cases, signed: true, jobs: 1)
            guard report.failure == nil else {
                throw ValidationError("the reference failed a case; fix that before benchmarking")
            }
            let signs = Double(CryptoCounters.signatures.load(ordering: .relaxed)) / Double(report.cases)
            let verifies = Double(CryptoCounters.verifications.load(ordering: .relaxed)) / Double(report.cases)
            let cryptoPerCase = signs * sign + verifies * verify
            let ratio = signed * cryptoPerCase / 1e6
            print(
                "signed check, 1 job: \(Int(signed)) cases/s; per case \(String(format: "%.1f", signs)) signatures + \(String(format: "%.1f", verifies)) verifications = \(String(format: "%.0f", cryptoPerCase)) µs of ECDSA"
            )
            print("crypto-limit ratio (signed cases/s × ECDSA µs per case): \(String(format: "%.2f", ratio))")
            let (parallel, _) = casesPerSecond(cases * max(1, jobs), signed: true, jobs: jobs)
            print(
                "signed check, \(jobs) jobs: \(Int(parallel)) cases/s; scaling ×\(String(format: "%.2f", parallel / signed)) over 1 job"
            )
            if let json {
                try JSONFormat.write(
                    Figures(
                        microsecondsPerSign: sign, microsecondsPerVerify: verify, unsignedCasesPerSecond: unsigned,
                        signedCasesPerSecond: signed, signaturesPerCase: signs, verificationsPerCase: verifies,
                        cryptoLimitRatio: ratio, jobs: jobs, signedCasesPerSecondWithJobs: parallel,
                        scaling: parallel / signed), to: json)
            }
        }
    }
}
