import Foundation
import Hummingbird
import Logging

/// The trivial loopback endpoint `iapcheck bench driver` points iapcheck's HTTP driver and wrk at: `GET /` answers
/// 200 with two bytes, so what is measured is the clients.
public enum BenchEndpoint {
    public static func serve(port: Int) async throws {
        let router = Router()
        router.get("/") { _, _ in "ok" }
        var logger = Logger(label: "iapcheck-bench-endpoint")
        logger.logLevel = .warning
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            logger: logger)
        try await app.run()
    }
}
