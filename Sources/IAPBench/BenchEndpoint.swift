import Foundation
import IAPHTTP

/// The trivial loopback endpoint `iapcheck bench driver` points iapcheck's HTTP driver and wrk at: `GET /` answers
/// 200 with two bytes, so what is measured is the clients.
public enum BenchEndpoint {
    public static func serve(port: Int) async throws {
        // As many connections as `bench driver --connections` and wrk may open (up to 1024), above the server's default.
        let server = try LoopbackHTTPServer(port: port, maxConnections: 2048) { request in
            request.path == "/"
                ? .init(status: 200, text: "ok") : .init(status: 404, text: "Not Found\n")
        }
        server.start()
        while true { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
    }
}
