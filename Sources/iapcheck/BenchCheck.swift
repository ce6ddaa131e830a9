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
                Build with -c release. Prints, measured in this process: unsigned cases/s on one thread; then, in each \
                of --rounds rounds, µs per ES256 signature and verification of a real token's signing input, per KB of \
                SHA-256 and per P-384 certificate signature and verification (measured before and after the round's \
                cases and averaged), signed cases/s on one thread, the ECDSA operations per case, the µs a signature \
                and a verification took in place, among the rest of each case, and the crypto-limit ratio = signed \
                cases/s × ECDSA µs per case / 10⁶ (the share of the signed check's time spent in the cryptography: 1 \
                would mean nothing else costs anything); then the medians over the rounds (a shared machine drifts \
                within seconds: the rounds show how much), and signed cases/s with one job per core against one job, \
                the scaling factor. Pin to one core with taskset for the one-thread figures (the jobs figure needs all \
                cores).
                """)

        @Option(help: "Signed cases per round.") var cases = 600
        @Option(help: "Unsigned cases.") var unsignedCases = 6000
        @Option(help: "Rounds of prices and signed cases; the ratio printed last is their median.") var rounds = 3
        @Option(help: "Jobs for the scaling figure (default: the number of cores).") var jobs = ProcessInfo.processInfo
            .activeProcessorCount
        @Option(help: "Write the figures as JSON here.") var json: String?

        func validate() throws {
            for (name, value) in [
                ("--cases", cases), ("--unsigned-cases", unsignedCases), ("--rounds", rounds), ("--jobs", jobs),
            ]
            where value < 1 {
                throw ValidationError("\(name) must be at least 1 (it is \(value))")
            }
        }

        func run() throws {
            do {
                let figures = try CheckBench.run(
                    cases: cases, unsignedCases: unsignedCases, rounds: rounds, jobs: jobs
                ) { print($0) }
                if let json { try JSONFormat.write(figures, to: json) }
            } catch let e as CheckBench.Failure {
                throw ValidationError(e.description)
            }
        }
    }
}
