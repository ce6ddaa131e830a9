import ArgumentParser
import Foundation
import IAPBench
import IAPModel

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Benchmarks of the hot paths.",
        subcommands: [Verify.self, Check.self, Transport.self, Driver.self, Endpoint.self])

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Reference JWS verification (warm chain cache, and without cache) against raw P-256 ECDSA verification of the same signing inputs, one thread and all cores, in one run.",
            discussion:
                "Build with -c release for meaningful figures. The goal (docs/performance-notes.md#targets-for-the-hot-path): warm-cache verification at ≥ 0.75 of raw verify throughput."
        )

        @Option(help: "Seconds per measurement.") var seconds: Double = 2
        @Option(help: "Distinct tokens in the pool.") var tokens: Int = 512
        @Option(help: "Threads for the multi-core runs (default: all cores).") var threads: Int = ProcessInfo
            .processInfo.activeProcessorCount
        @Option(help: "Write the figures as JSON here.") var json: String?

        func run() throws {
            let rows = try VerifyBench.run(seconds: seconds, tokens: tokens, threads: threads) { print($0) }
            if let json { try JSONFormat.write(rows, to: json) }
        }
    }
}
