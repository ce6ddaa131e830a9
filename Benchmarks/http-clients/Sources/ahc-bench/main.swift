import AsyncHTTPClient
import Foundation
import NIOCore

// ahc-bench URL CONNECTIONS SECONDS: N tasks, each sending its next GET when the previous one is answered, over one
// HTTPClient whose pool keeps N connections alive.
let args = CommandLine.arguments
guard args.count == 4, let n = Int(args[2]), let seconds = Double(args[3]) else {
    print("usage: ahc-bench URL CONNECTIONS SECONDS")
    exit(2)
}
let url = args[1]
var config = HTTPClient.Configuration()
config.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: n)
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
let start = Date()
let deadline = start.addingTimeInterval(seconds)
let counts = await withTaskGroup(of: (Int, Int).self) { group in
    for _ in 0..<n {
        group.addTask {
            var ok = 0, errors = 0
            while Date() < deadline {
                do {
                    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(5))
                    _ = try await response.body.collect(upTo: 1 << 20)
                    if response.status == .ok { ok += 1 } else { errors += 1 }
                } catch {
                    errors += 1
                }
            }
            return (ok, errors)
        }
    }
    var total = (0, 0)
    for await c in group { total = (total.0 + c.0, total.1 + c.1) }
    return total
}
let elapsed = Date().timeIntervalSince(start)
print("AsyncHTTPClient: \(Int(Double(counts.0) / elapsed)) requests/s (\(n) connections, \(counts.0) requests, \(counts.1) errors)")
try await client.shutdown()
