import ArgumentParser
import Foundation
import IAPBench
import IAPEncoding
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

        func validate() throws {
            try BenchBounds.seconds("--seconds", seconds)
            try BenchBounds.count("--tokens", tokens, max: 1_000_000)
            try BenchBounds.count("--threads", threads, max: BenchBounds.maxThreads)
        }

        func run() throws {
            if let json { try requireWritable(file: json) }
            let rows = try VerifyBench.run(seconds: seconds, tokens: tokens, threads: threads) { print($0) }
            if let json { try JSONFormat.write(rows, to: json) }
        }
    }
}

/// Bounds of the benchmarks' options, checked before anything runs: a bad number should get a clear refusal, not a
/// trap halfway through a measurement (a negative duration, no tokens) or a minute of work whose file cannot be
/// written.
enum BenchBounds {
    static let maxThreads = 1024

    static func count(_ name: String, _ value: Int, max: Int) throws {
        guard (1...max).contains(value) else {
            throw ValidationError("\(name) must be from 1 to \(max) (it is \(value))")
        }
    }

    /// A duration in seconds: finite, from 0.1 (shorter measures nothing) to an hour.
    static func seconds(_ name: String, _ value: Double) throws {
        guard value.isFinite, value >= 0.1, value <= 3600 else {
            throw ValidationError("\(name) must be a number of seconds from 0.1 to 3600 (it is \(value))")
        }
    }
}
