import ArgumentParser
import Foundation
import IAPBench
import IAPEncoding
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
                of --rounds rounds, a signed check of --cases cases on one thread, stopped every 50 cases for short \
                bursts that price the cryptography in a tight loop (µs per ES256 signature and verification of a real \
                token's signing input, per KB of SHA-256, per P-384 certificate signature and verification); each \
                slice is priced at the bursts on either side of it. Each round prints the ECDSA operations per case, \
                the µs a signature and a verification took in place, among the rest of each case, beside their price, \
                and the crypto-limit ratio = signed cases/s × ECDSA µs per case / 10⁶ (the share of the signed \
                check's time spent in the cryptography: 1 would mean nothing else costs anything). Then the medians \
                over the rounds (a shared machine drifts within seconds: the rounds show how much), and signed cases/s \
                with --jobs jobs against one job, run just before and just after (their mean, so that a drift of the \
                machine's speed falls on both sides), the scaling factor (each of those three runs checks \
                --cases × --jobs cases, so that every job has a round's worth). Pin to one core with taskset \
                for the one-thread figures; the jobs figure needs all cores, so run it unpinned (with --rounds 1 if \
                only it matters): pinned to one CPU it is not measured, and says so.
                """)

        @Option(help: "Signed cases per round.") var cases = 600
        @Option(help: "Unsigned cases.") var unsignedCases = 6000
        @Option(help: "Rounds of prices and signed cases; the ratio printed last is their median.") var rounds = 3
        @Option(help: "Jobs for the scaling figure (one per core unless given).") var jobs = ProcessInfo.processInfo
            .activeProcessorCount
        @Option(help: "Write the figures as JSON here.") var json: String?

        func validate() throws {
            try BenchBounds.count("--cases", cases, max: 10_000_000)
            try BenchBounds.count("--unsigned-cases", unsignedCases, max: 100_000_000)
            try BenchBounds.count("--rounds", rounds, max: 1000)
            try BenchBounds.count("--jobs", jobs, max: BenchBounds.maxThreads)
        }

        func run() throws {
            if let json { try requireWritable(file: json) }
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
