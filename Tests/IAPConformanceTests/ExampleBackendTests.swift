import Foundation
import IAPConformance
import IAPModel
import IAPValidators
import Testing

/// The example backend (Hummingbird + SQLite) checked end to end over HTTP on loopback.
@Suite struct ExampleBackendTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let binary = root.appendingPathComponent(".build/debug/iapcheck-example-backend").path

    /// Starts the backend on a free-looking loopback port; returns the process and a target for it.
    static func start(extra: [String] = []) throws -> (Process, HTTPValidator.Target) {
        let port = 20_000 + Int(ProcessInfo.processInfo.processIdentifier % 20_000)
        let db = NSTemporaryDirectory() + "backend-\(UUID().uuidString).sqlite"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["--port", String(port), "--database", db] + extra
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let json = """
        {"baseURL":"http://127.0.0.1:\(port)","routes":{
          "reset":{"method":"POST","path":"/iapcheck/reset"},
          "appTransaction":{"method":"POST","path":"/apple/app-transactions"},
          "notification":{"method":"POST","path":"/apple/notifications"},
          "apiSnapshot":{"method":"POST","path":"/apple/api-snapshots"},
          "legacyReceipt":{"method":"POST","path":"/apple/legacy-receipts"},
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
