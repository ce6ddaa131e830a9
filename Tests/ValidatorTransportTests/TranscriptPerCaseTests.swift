import Foundation
import IAPHTTP
import IAPModel
import IAPTesting
import IAPValidatorAPI
import Testing

/// A failure report shows the exchanges of its own case: the transcript starts afresh at each case's reset, so a
/// shrink's earlier attempts (other users' requests) do not appear in it unmarked.
@Suite struct TranscriptPerCaseTests {
    @Test func aFailuresTranscriptHoldsOnlyItsOwnCase() throws {
        let server = try LoopbackHTTPServer(port: 0) { r in
            r.path == "/reset" ? .init(status: 200, text: "ok") : .init(status: 500, text: "boom for \(r.path)")
        }
        server.start()
        defer { server.stop() }
        let path = Scratch.directory + "transcript-\(UUID().uuidString).json"
        try Data(
            #"""
            {"baseURL": "http://127.0.0.1:\#(server.port)", "channels": ["app-transaction"],
             "routes": {"reset": {"method": "POST", "path": "/reset"},
                        "appTransaction": {"method": "POST", "path": "/a"},
                        "entitlements": {"method": "GET", "path": "/users/{userId}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: path))
        let v = HTTPValidator(target: try HTTPValidator.Target.load(path: path), name: "http:t", timeout: 5)
        let config = ValidatorConfig(catalog: .standard, policy: .default)
        func failingCase(user: String) -> ValidatorFailure? {
            do {
                try v.reset(config)
                _ = try v.entitlements(EntitlementQuery(userId: user, at: 0))
                return nil
            } catch { return error }
        }
        _ = failingCase(user: "first-user")
        let f = try #require(failingCase(user: "second-user"))
        #expect(f.transcript.contains { $0.contains("/users/second-user") }, "\(f.transcript)")
        #expect(!f.transcript.contains { $0.contains("first-user") }, "\(f.transcript)")
    }
}
