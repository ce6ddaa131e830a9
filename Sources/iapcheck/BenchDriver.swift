import ArgumentParser
import Foundation
import IAPBench

extension Bench {
    /// iapcheck's HTTP load driver against wrk, same endpoint, same number of connections, one after the other.
    struct Driver: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "iapcheck's HTTP driver and wrk in turn against the same trivial loopback endpoint, same connections; prints the ratio.",
            discussion: """
                Starts `iapcheck bench endpoint` (iapcheck's own loopback server, GET / → 200 "ok") as a separate process, runs the load driver \
                (closed executor, one keep-alive connection per worker, latency into HdrHistograms exactly as `load` does) \
                for --seconds, then wrk with the same connections, and prints both request rates and driver/wrk. \
                Needs wrk (Debian: apt-get install wrk). Build with -c release.
                """)

        @Option(help: "Concurrent connections (driver workers, wrk -c).") var connections = 4
        @Option(help: "Seconds per client and round.") var seconds: Double = 3
        @Option(help: "wrk threads (wrk -t).") var wrkThreads = 2
        @Option(help: "Port of the endpoint.") var port = 18_089
        @Option(help: "wrk executable.") var wrk = "wrk"
        @Option(
            help: "Rounds: driver and wrk take turns this many times; the medians are compared (this machine is noisy)."
        ) var rounds = 3

        func validate() throws {
            try BenchBounds.count("--connections", connections, max: BenchBounds.maxThreads)
            try BenchBounds.seconds("--seconds", seconds)
            try BenchBounds.count("--wrk-threads", wrkThreads, max: BenchBounds.maxThreads)
            try BenchBounds.count("--port", port, max: 65_535)
            try BenchBounds.count("--rounds", rounds, max: 1000)
        }

        func run() throws {
            var bench = DriverBench(endpoint: [CommandLine.arguments[0], "bench", "endpoint", "--port", String(port)])
            bench.connections = connections
            bench.seconds = seconds
            bench.wrkThreads = wrkThreads
            bench.port = port
            bench.wrk = wrk
            bench.rounds = rounds
            do { _ = try bench.run { print($0) } } catch let e as DriverBench.Failure {
                throw fail("error: \(e.description)", code: Exit.usage)
            }
        }
    }

    struct Endpoint: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the trivial endpoint `bench driver` measures against (GET / → ok).", shouldDisplay: false)
        @Option(help: "Port.") var port = 18_089
        func validate() throws { try BenchBounds.count("--port", port, max: 65_535) }
        func run() throws {
            let done = DispatchSemaphore(value: 0)
            let port = self.port
            Task.detached {
                do { try await BenchEndpoint.serve(port: port) } catch {
                    try? FileHandle.standardError.write(
                        contentsOf: Data("error: bench endpoint on 127.0.0.1:\(port): \(error)\n".utf8))
                }
                done.signal()
            }
            done.wait()
            throw ExitCode(Exit.usage)
        }
    }
}
