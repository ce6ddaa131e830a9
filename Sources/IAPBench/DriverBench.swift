import Foundation
import IAPHTTP
import IAPLoad
import IAPModel
import IAPProcess
import IAPValidatorAPI

/// `iapcheck bench driver`: iapcheck's HTTP load driver and wrk in turn against the same trivial loopback endpoint
/// (``BenchEndpoint``), with the same connections; the medians of the rounds compared.
public struct DriverBench {
    public var connections = 4
    public var seconds: Double = 3
    public var wrkThreads = 2
    public var port = 18_089
    public var wrk = "wrk"
    public var rounds = 3
    /// The program and arguments that serve ``BenchEndpoint`` on `port` (`iapcheck bench endpoint --port N`).
    public var endpoint: [String]

    public init(endpoint: [String]) { self.endpoint = endpoint }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts the endpoint, runs the rounds and returns driver/wrk (medians); `emit` receives each round's figures.
    public func run(emit: (String) -> Void) throws -> Double {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: endpoint[0])
        server.arguments = Array(endpoint.dropFirst())
        try ChildProcesses.run(server)
        defer {
            ChildProcesses.unregister(server.processIdentifier)
            server.terminate()
            server.waitUntilExit()
        }
        let probe = LoopbackHTTPClient(host: "127.0.0.1", port: port, timeout: 1)
        var up = false
        for _ in 0..<100 {
            if (try? probe.request("GET", "/"))?.status == 200 { up = true; break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        probe.close()
        guard up else { throw Failure(description: "the bench endpoint did not start on 127.0.0.1:\(port)") }

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
            emit(
                "round \(round): iapcheck driver \(Int(ours.last!)) requests/s (\(results.summary.requests) requests, \(errors) errors, p99 \(LoadResults.milliseconds(results.summary.latencyMicros["p99"])))"
            )
            theirs.append(try runWrk())
            emit("round \(round): wrk             \(Int(theirs.last!)) requests/s")
        }
        emit(
            "median over \(ours.count) rounds, \(connections) connections: iapcheck driver \(Int(Measure.median(ours)))/s, wrk (\(min(wrkThreads, connections)) threads) \(Int(Measure.median(theirs)))/s"
        )
        let ratio = Measure.median(ours) / Measure.median(theirs)
        emit("ratio driver/wrk: \(String(format: "%.2f", ratio))")
        return ratio
    }

    func runWrk() throws -> Double {
        let w = Process()
        w.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        w.arguments = [
            wrk, "-t", String(min(wrkThreads, connections)), "-c", String(connections), "-d",
            "\(Int(seconds.rounded(.up)))s", "http://127.0.0.1:\(port)/",
        ]
        let out = Pipe()
        w.standardOutput = out
        w.standardError = out
        do { try ChildProcesses.run(w) } catch {
            throw Failure(description: "cannot run \(wrk): \(error) (apt-get install wrk)")
        }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        w.waitUntilExit()
        guard w.terminationStatus == 0,
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") }),
            let rate = Double(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
        else { throw Failure(description: "\(wrk) failed:\n\(text)") }
        return rate
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
