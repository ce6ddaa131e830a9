import Crypto
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPProcess
import IAPStore
import IAPSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Mistakes that live in a backend's own calls to Apple or in its webhook's timing, which an in-process validator
/// never makes: the example backend carries each as a switch. `mutants` starts it (the `iapcheck-example-backend`
/// built beside this executable) on free loopback ports, with a mock App Store of its own, and checks it over HTTP
/// like any `http:` target.
struct BackendMutant: Sendable {
    var name: String
    var pitfall: String
    var description: String
    /// The example backend's switch.
    var arguments: [String]
    /// Seconds per request, and the store's webhook deadline.
    var timeout: Double
    var configure: @Sendable (inout CheckOptions) -> Void

    static let all: [BackendMutant] = [
        BackendMutant(
            name: "backend-no-sandbox-fallback", pitfall: "J29",
            description:
                "example backend: does not retry verifyReceipt on the sandbox after status 21007 (App Review's sandbox receipts)",
            arguments: ["--no-sandbox-fallback"], timeout: 10,
            configure: { o in
                o.catalog.environment = .sandbox
                o.properties = [.entitlementAgreement]
            }),
        BackendMutant(
            name: "backend-slow-ack", pitfall: "J41",
            description:
                "example backend: answers each notification after the store's webhook deadline, so Apple re-sends it",
            arguments: ["--slow-ack-ms", "2500"], timeout: 1,
            configure: { o in
                o.properties = [.entitlementAgreement]
                o.flakinessReplays = 1
                o.shrinkBudget.maxAttempts = 1  // every attempt waits out each deadline again
            }),
    ]

    static func named(_ name: String) -> BackendMutant? { all.first { $0.name == name } }

    /// The example backend's executable, or nil when it was not built (ExampleBackendBuild says where it looks; beside
    /// this executable counts, for a packed release).
    static var backendExecutable: String? {
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ExampleBackendBuild.executable(root: FileManager.default.currentDirectoryPath, besides: me)
    }

    enum Failure: Error, CustomStringConvertible {
        case setup(String)
        var description: String { if case .setup(let s) = self { s } else { "" } }
    }

    /// The backend's API key id, issuer and verifyReceipt secret (the key itself is made fresh per run).
    static let keyId = "IAPMUT0001", issuer = "6f3c2a90-0b1e-4c4e-9a57-000000000001", secret = "mutant-shared-secret"

    /// Starts a mock App Store and the backend with this mistake, checks it with `options` (as configured here),
    /// stops the backend. The report is that of any check.
    func run(_ options: CheckOptions, backend: String) throws -> CheckReport {
        let dir = NSTemporaryDirectory() + "iapcheck-backend-mutant-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A fresh API key of the backend's own (the store checks its JWTs with the public half).
        let keyFile = dir + "/SubscriptionKey_\(Self.keyId).p8"
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
        let store = try MockAppStore(
            settings: StoreSettings(
                port: 0, sharedSecret: Self.secret,
                apiKey: .init(keyId: Self.keyId, issuerId: Self.issuer, privateKeyFile: keyFile)))
        try store.start()
        let port: Int
        do { port = try LoopbackHTTPClient.freePort() } catch { throw Failure.setup(error.message) }
        let p = try launch(backend, port: port, in: dir, store: store, keyFile: keyFile)
        defer {
            ChildProcesses.unregister(p.processIdentifier)
            p.terminate()
            p.waitUntilExit()
        }
        let target = try writeTarget(in: dir, port: port, store: store, keyFile: keyFile)
        try awaitListening(p, target: target, options: options, backend: backend, port: port)
        var o = options
        configure(&o)
        return Checker(
            options: o, validator: HTTPValidator(target: target, name: "mutant:\(name)", timeout: timeout, store: store)
        ).run()
    }

    /// The example backend with this mistake's switch, on `port`, its database in `dir`, calling `store`.
    func launch(_ backend: String, port: Int, in dir: String, store: MockAppStore, keyFile: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: backend)
        p.arguments =
            [
                "--port", String(port), "--database", dir + "/backend.sqlite", "--app-store", "127.0.0.1:\(store.port)",
                "--api-key", keyFile, "--key-id", Self.keyId, "--issuer-id", Self.issuer, "--shared-secret",
                Self.secret,
            ] + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try ChildProcesses.run(p)
        return p
    }

    /// The target file of the started backend, as a team would write it.
    func writeTarget(in dir: String, port: Int, store: MockAppStore, keyFile: String) throws -> HTTPValidator.Target {
        let targetFile = dir + "/target.json"
        let json = """
            {"baseURL":"http://127.0.0.1:\(port)",
             "store":{"port":\(store.port),"sharedSecret":"\(Self.secret)","apiKey":{"keyId":"\(Self.keyId)","issuerId":"\(Self.issuer)","privateKeyFile":"\(keyFile)"}},
             "routes":{"reset":{"method":"POST","path":"/iapcheck/reset"},
              "appTransaction":{"method":"POST","path":"/apple/app-transactions"},
              "notification":{"method":"POST","path":"/apple/notifications"},
              "reconcile":{"method":"POST","path":"/apple/reconcile"},
              "receipt":{"method":"POST","path":"/apple/receipts"},
              "entitlements":{"method":"GET","path":"/users/{userId}/entitlements?at={at}"}}}
            """
        try Data(json.utf8).write(to: URL(fileURLWithPath: targetFile))
        return try HTTPValidator.Target.load(path: targetFile)
    }

    /// Until it listens (a cold start of a debug build takes a moment), at most 30 s; Ctrl-C stops the wait.
    func awaitListening(
        _ p: Process, target: HTTPValidator.Target, options: CheckOptions, backend: String, port: Int
    ) throws {
        for _ in 0..<300 where p.isRunning && !options.shouldStop() {
            if (try? HTTPValidator(target: target, name: "probe", timeout: 1).entitlements(
                EntitlementQuery(userId: "probe", at: 0))) != nil
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        // Ctrl-C while it starts: the caller sees the interrupt and stops the run.
        if options.shouldStop() { throw Failure.setup("interrupted while the backend started") }
        throw Failure.setup(
            "the example backend (\(backend)) did not answer on 127.0.0.1:\(port) within 30 s\(p.isRunning ? "" : "; it exited with status \(p.terminationStatus)")"
        )
    }
}
