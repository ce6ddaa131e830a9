import Foundation
import IAPConformance
import IAPModel
import IAPStore
import IAPValidators
import Testing

/// The example backend (Hummingbird + SQLite) checked end to end over HTTP on loopback.
@Suite struct ExampleBackendTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let binary = root.appendingPathComponent(".build/debug/iapcheck-example-backend").path

    /// Starts the backend on a free-looking loopback port; returns the process and a target for it.
    static func start(extra: [String] = [], store: MockAppStore? = nil) throws -> (Process, HTTPValidator.Target) {
        let port = 20_000 + Int(ProcessInfo.processInfo.processIdentifier % 15_000) * 2 + (store == nil ? 0 : 1)
        let db = NSTemporaryDirectory() + "backend-\(UUID().uuidString).sqlite"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        let key = root.appendingPathComponent("Examples/http/SubscriptionKey_IAPCHK0001.p8").path
        let storeArguments = store.map {
            ["--app-store", "127.0.0.1:\($0.port)", "--api-key", key, "--key-id", "IAPCHK0001",
             "--issuer-id", "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f", "--shared-secret", "example-secret"]
        } ?? []
        p.arguments = ["--port", String(port), "--database", db] + storeArguments + extra
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let storeSection = store.map {
            #""store":{"port":\#($0.port),"sharedSecret":"example-secret","apiKey":{"keyId":"IAPCHK0001","issuerId":"6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f","privateKeyFile":"\#(key)"}},"#
        } ?? ""
        let pull = store != nil
            ? #""reconcile":{"method":"POST","path":"/apple/reconcile"},"receipt":{"method":"POST","path":"/apple/receipts"},"#
            : #""apiSnapshot":{"method":"POST","path":"/apple/api-snapshots"},"legacyReceipt":{"method":"POST","path":"/apple/legacy-receipts"},"#
        let json = """
        {"baseURL":"http://127.0.0.1:\(port)",\(storeSection)"routes":{
          "reset":{"method":"POST","path":"/iapcheck/reset"},
          "appTransaction":{"method":"POST","path":"/apple/app-transactions"},
          "notification":{"method":"POST","path":"/apple/notifications"},\(pull)
          "entitlements":{"method":"GET","path":"/users/{userId}/entitlements?at={at}"}}}
        """
        let targetPath = NSTemporaryDirectory() + "target-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: targetPath))
        let target = try HTTPValidator.Target.load(path: targetPath)
        // Wait until it listens.
        for _ in 0..<100 {
            let probe = HTTPValidator(target: target, name: "probe", timeout: 1)
            if (try? probe.entitlements(EntitlementQuery(userId: "x", at: 0))) != nil { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return (p, target)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "the example backend is not built"))
    func theExampleBackendPassesOverHTTP() throws {
        let (p, target) = try Self.start()
        defer { p.terminate(); p.waitUntilExit() }
        var o = CheckOptions()
        o.cases = 36
        let report = Checker(options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10)).run()
        #expect(report.failure == nil, "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(report.questions > 36)
    }

    /// The backend pulls chains from the mock App Store's Server API (with its JWT) and checks receipts with its
    /// verifyReceipt; notifications come from the store's webhook sender.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "the example backend is not built"))
    func theExampleBackendPassesWhenItCallsTheMockAppStore() throws {
        let keyFile = Self.root.appendingPathComponent("Examples/http/SubscriptionKey_IAPCHK0001.p8").path
        let store = try MockAppStore(settings: StoreSettings(
            port: 0, sharedSecret: "example-secret",
            apiKey: .init(keyId: "IAPCHK0001", issuerId: "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f", privateKeyFile: keyFile)))
        try store.start()
        let (p, target) = try Self.start(store: store)
        defer { p.terminate(); p.waitUntilExit() }
        #expect(target.store?.port == store.port)
        var o = CheckOptions()
        o.cases = 36
        let report = Checker(options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10, store: store)).run()
        #expect(report.failure == nil, "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        let served = store.served
        #expect(served["history", default: 0] > 0, "\(served)")
        #expect(served["verifyReceipt", default: 0] > 0, "\(served)")
        #expect(served["checked-token", default: 0] >= served["history", default: 0])
        #expect(!store.sentNotifications.isEmpty)
    }

    @Test func targetFilesAreStrictAndLoopbackOnly() throws {
        let path = NSTemporaryDirectory() + "bad-target-\(UUID().uuidString).json"
        try Data(#"{"baseURL":"http://10.0.0.5:80","routes":{"reset":{"method":"DELETE","path":"reset"}},"extra":1}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            try HTTPValidator.Target.load(path: path)
        } throws: { error in
            let keys = Set((error as? ConfigError)?.problems.map(\.key) ?? [])
            return keys.isSuperset(of: ["baseURL", "routes.reset.method", "extra"])
        }
    }
}
