import ArgumentParser
import Foundation
import IAPHTTP
import IAPLoad
import IAPModel
import IAPStore
import IAPValidatorAPI

extension Bench {
    /// iapcheck's HTTP load driver against wrk, same endpoint, same number of connections, one after the other.
    struct Driver: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "iapcheck's HTTP driver and wrk in turn against the same trivial loopback endpoint, same connections; prints the ratio.",
            discussion: """
                Starts `iapcheck bench endpoint` (Hummingbird, GET / → 200 "ok") as a separate process, runs the load driver \
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

        func run() throws {
            let endpoint = Process()
            endpoint.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            endpoint.arguments = ["bench", "endpoint", "--port", String(port)]
            try endpoint.run()
            defer { endpoint.terminate(); endpoint.waitUntilExit() }
            let probe = LoopbackHTTPClient(host: "127.0.0.1", port: port, timeout: 1)
            var up = false
            for _ in 0..<100 {
                if (try? probe.request("GET", "/"))?.status == 200 { up = true; break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            probe.close()
            guard up else {
                throw fail("error: the bench endpoint did not start on 127.0.0.1:\(port)", code: Exit.usage)
            }

            // iapcheck's driver: the load driver's closed executor; each worker's "validator" GETs the endpoint.
            let profile = LoadProfile(
                name: "bench-driver", target: "http:bench", mix: [.query: 1], poolSize: 1, poolSeed: 1,
                distinctChains: 0, executor: .closed(workers: connections), warmupSeconds: 0,
                durationSeconds: seconds, maxLagSeconds: 1, thresholds: [], baselineTolerance: 0.1,
                answerSamplePercent: 0)
            let pool = ArtifactPool(
                items: [.init(operation: .query, delivery: nil, query: EntitlementQuery(userId: "u", at: 0), now: 0)],
                config: ValidatorConfig(catalog: .standard, policy: .default))
            let port = self.port
            let driver = LoadDriver(profile: profile, pool: pool) { GetValidator(port: port) }
            _ = try driver.run(seconds: 1, record: false)  // warm-up
            var ours: [Double] = [], theirs: [Double] = []
            for round in 1...max(rounds, 1) {
                let results = LoadResults(
                    profile: profile, workers: try driver.run(seconds: seconds, record: true), seconds: seconds)
                let errors = results.summary.errors.values.reduce(0, +)
                ours.append(results.summary.throughputPerSecond)
                print(
                    "round \(round): iapcheck driver \(Int(ours.last!)) requests/s (\(results.summary.requests) requests, \(errors) errors, p99 \(Load.ms(results.summary.latencyMicros["p99"])))"
                )
                theirs.append(try runWrk())
                print("round \(round): wrk             \(Int(theirs.last!)) requests/s")
            }
            func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
            print(
                "median over \(ours.count) rounds, \(connections) connections: iapcheck driver \(Int(median(ours)))/s, wrk (\(min(wrkThreads, connections)) threads) \(Int(median(theirs)))/s"
            )
            print("ratio driver/wrk: \(String(format: "%.2f", median(ours) / median(theirs)))")
        }

        func runWrk() throws -> Double {
            let w = Process()
            w.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            w.arguments = [
                wrk, "-t", String(min(wrkThreads, connections)), "-c", String(connections), "-d",
                "\(Int(seconds.rounded(.up)))s",
                "http://127.0.0.1:\(port)/",
            ]
            let out = Pipe()
            w.standardOutput = out
            w.standardError = out
            do { try w.run() } catch {
                throw fail("error: cannot run \(wrk): \(error) (apt-get install wrk)", code: Exit.usage)
            }
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            w.waitUntilExit()
            guard w.terminationStatus == 0,
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") }),
                let rate = Double(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
            else {
                throw fail("error: \(wrk) failed:\n\(text)", code: Exit.usage)
            }
            return rate
        }
    }

    struct Endpoint: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the trivial endpoint `bench driver` measures against (GET / → ok).", shouldDisplay: false)
        @Option(help: "Port.") var port = 18_089
        func run() throws {
            let done = DispatchSemaphore(value: 0)
            let port = self.port
            Task.detached {
                do { try await BenchEndpoint.serve(port: port) } catch {
                    FileHandle.standardError.write(Data("error: bench endpoint on 127.0.0.1:\(port): \(error)\n".utf8))
                }
                done.signal()
            }
            done.wait()
            throw ExitCode(Exit.usage)
        }
    }
}

/// A "validator" whose every question is one GET of the bench endpoint: the driver's own cost plus one HTTP exchange.
final class GetValidator: Validator {
    let client: LoopbackHTTPClient
    init(port: Int) { client = LoopbackHTTPClient(host: "127.0.0.1", port: port, timeout: 5) }
    var name: String { "bench-endpoint" }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {}
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict { .accepted }
    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        do {
            let (status, _) = try client.request("GET", "/")
            guard status == 200 else { throw ValidatorFailure(.badAnswer, "HTTP \(status)") }
        } catch let e as LoopbackHTTPClient.Failure {
            throw ValidatorFailure(e.kind == .timedOut ? .timedOut : .crashed, e.message)
        } catch {
            throw ValidatorFailure(.badAnswer, "\(error)")
        }
        return EntitlementAnswer(products: [], groups: [], consumables: [])
    }
}
