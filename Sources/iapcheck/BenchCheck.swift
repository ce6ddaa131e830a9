import ArgumentParser
import Foundation
import IAPBench
import IAPModel

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

        func run() throws {
            do {
                let figures = try CheckBench.run(cases: cases, unsignedCases: unsignedCases, jobs: jobs) { print($0) }
                if let json { try JSONFormat.write(figures, to: json) }
            } catch let e as CheckBench.Failure {
                throw ValidationError(e.description)
            }
        }
    }
}
