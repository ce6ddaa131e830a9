import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSigning
import IAPStore
import IAPSupport
import IAPTesting
import IAPValidatorAPI
import Testing

/// The example backend (Hummingbird + SQLite) checked end to end over HTTP on loopback.
@Suite struct ExampleBackendTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The example backend's executable (a package of its own, built as CONTRIBUTING says), found where
    /// `iapcheck mutants` finds it; nil when not built, and its tests are skipped, saying why (`notBuilt`).
    static let built = ExampleBackendBuild.executable(root: root.path, besides: CommandLine.arguments.first)
    static let binary = built ?? "/nonexistent/" + ExampleBackendBuild.executableName
    static let notBuilt = Comment(rawValue: ExampleBackendBuild.notBuilt())

    /// A loopback port for this test process: `offset` (0..<26) keeps tests that run at the same time apart (slots
    /// 0–11 are `start`'s, 12–15 the managed targets', 16 the doctor's, 17 and 19 the notes backend's, 18 one where
    /// nothing listens, 20–25 `send`'s). The ports lie in 10000–29499, below Linux's ephemeral range (32768–60999),
    /// so a client connection of a concurrent test is never given one of them.
    static func port(_ offset: Int) -> Int {
        precondition((0..<26).contains(offset))
        return 10_000 + Int(ProcessInfo.processInfo.processIdentifier % 750) * 26 + offset
    }

    /// Starts the backend on a free-looking loopback port; returns the process and a target for it.
    /// `slot` (even: a store takes the odd port after it) keeps tests that run at the same time on different ports.
    static func start(extra: [String] = [], store: MockAppStore? = nil, slot: Int = 0) throws -> (
        Process, HTTPValidator.Target
    ) {
        let port = Self.port(slot + (store == nil ? 0 : 1))
        let db = Scratch.directory + "backend-\(UUID().uuidString).sqlite"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments =
            ["--port", String(port), "--database", db] + (store.map { storeArguments(port: $0.port) } ?? []) + extra
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let target = try writeTarget(port: port, store: store?.port, start: nil)
        // Wait until it listens.
        for _ in 0..<100 {
            let probe = HTTPValidator(target: target, name: "probe", timeout: 1)
            if (try? probe.entitlements(EntitlementQuery(userId: "x", at: 0))) != nil { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return (p, target)
    }

    @Test(.long, .enabled(if: built != nil, notBuilt))
    func theExampleBackendPassesOverHTTP() throws {
        let (p, target) = try Self.start()
        defer { p.killAndWait() }
        var o = CheckOptions()
        o.cases = 36
        let report = Checker(options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10))
            .run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(report.questions > 36)
    }

    /// `"maxConcurrency"`: jobs run at once, each on its own connection and in its own tenant of the backend (the
    /// X-IAPCheck-Job header), and the report is the one a single job gives. Without the header the jobs' resets and
    /// ids would collide in the one backend state.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func concurrentJobsKeepTheirOwnStateInOneBackend() throws {
        let (p, plain) = try Self.start(slot: 10)
        defer { p.killAndWait() }
        var target = plain
        target.maxConcurrency = 3
        func run(jobs: Int) -> CheckReport {
            var o = CheckOptions()
            o.cases = 45
            o.jobs = jobs
            var checker = Checker(
                options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10))
            var made = 0
            checker.makeWorker = {
                let v = HTTPValidator(target: target, name: "http:example", timeout: 10)
                v.job = HTTPValidator.jobNumber(ofWorker: made, jobs: jobs)
                made += 1
                return v
            }
            return checker.run()
        }
        let one = run(jobs: 1), three = run(jobs: 3)
        #expect(
            three.failure == nil,
            "\(three.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(three.cases == 45 && three.cases == one.cases)
        #expect(three.passed == one.passed && three.questions == one.questions)

        // A job's reset forgets only that job's facts: job 1 resets while job 0 keeps what it was told.
        let job0 = HTTPValidator(target: target, name: "job 0", timeout: 10)
        let job1 = HTTPValidator(target: target, name: "job 1", timeout: 10)
        job1.job = 1
        var told: (EntitlementQuery, EntitlementAnswer, ValidatorConfig)?
        for i in 0..<30 where told == nil {
            var (c, _) = Checker(options: CheckOptions(), validator: job0).generate(caseIndex: i)
            c.config.trustedRoots = TestPKI.harness.trustedRoots
            try job0.reset(c.config)
            let renderer = ArtifactRenderer(pki: .harness, appAppleId: c.config.catalog.appAppleId)
            for case .deliver(let d) in c.steps where d.forgery == nil {
                guard case .appTransaction(let s) = d.delivery, s.transaction.type != .consumable else { continue }
                _ = try job0.deliver(renderer.render(d.delivery), now: d.now)
                let q = EntitlementQuery(userId: s.userId, at: s.transaction.purchaseDate)
                let answer = try job0.entitlements(q)
                if answer.products.contains(where: \.active) { told = (q, answer, c.config) }
                break
            }
        }
        let (q, answer, config) = try #require(told)
        try job1.reset(config)
        #expect(try job0.entitlements(q) == answer)
        #expect(try job1.entitlements(q).products.isEmpty)
    }

    /// Worker numbers stay in 1…jobs−1 and are distinct within each run, however many runs share the counter (certify
    /// starts one per property) and wherever a run starts in it.
    @Test func jobNumbersStayWithinTheDeclaredConcurrency() {
        for jobs in 2...6 {
            for start in 0..<7 {
                let run = (start..<(start + jobs - 1)).map { HTTPValidator.jobNumber(ofWorker: $0, jobs: jobs) }
                #expect(Set(run).count == jobs - 1, "jobs \(jobs), start \(start): \(run)")
                #expect(run.allSatisfy { (1..<jobs).contains($0) }, "jobs \(jobs), start \(start): \(run)")
            }
        }
    }

    /// The backend pulls chains from the mock App Store's Server API (with its JWT) and checks receipts with its
    /// verifyReceipt; notifications come from the store's webhook sender.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func theExampleBackendPassesWhenItCallsTheMockAppStore() throws {
        let store = try MockAppStore(
            settings: StoreSettings(
                port: 0, sharedSecret: "example-secret",
                apiKey: .init(
                    keyId: "IAPCHK0001", issuerId: "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f", privateKeyFile: Self.keyFile)
            ))
        try store.start()
        let (p, target) = try Self.start(store: store)
        defer { p.killAndWait() }
        #expect(target.store?.port == store.port)
        var o = CheckOptions()
        o.cases = 36
        let report = Checker(
            options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10, store: store)
        ).run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        let served = store.served
        #expect(served["history", default: 0] > 0, "\(served)")
        #expect(served["verifyReceipt", default: 0] > 0, "\(served)")
        #expect(served["checked-token", default: 0] >= served["history", default: 0])
        #expect(!store.sentNotifications.isEmpty)
    }

    /// Mistake J29: an app tested in the sandbox (and App Review) sends sandbox receipts, which production
    /// verifyReceipt answers with 21007. The backend that retries on the sandbox passes; one that does not is caught.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func aBackendWithoutTheSandboxFallbackIsCaught() throws {
        var verdicts: [Bool] = []
        for extra in [[], ["--no-sandbox-fallback"]] {
            let store = try MockAppStore(
                settings: StoreSettings(
                    port: 0, sharedSecret: "example-secret",
                    apiKey: .init(
                        keyId: "IAPCHK0001", issuerId: "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f",
                        privateKeyFile: Self.keyFile)))
            try store.start()
            let (p, target) = try Self.start(extra: extra, store: store, slot: extra.isEmpty ? 2 : 4)
            defer { p.killAndWait() }
            var o = CheckOptions()
            o.cases = 40
            o.catalog.environment = .sandbox
            o.properties = [.entitlementAgreement]
            let report = Checker(
                options: o, validator: HTTPValidator(target: target, name: "http:example", timeout: 10, store: store)
            ).run()
            verdicts.append(report.failure == nil)
            #expect(store.served["verifyReceipt", default: 0] > 0, "no receipt reached verifyReceipt: \(store.served)")
            if extra.isEmpty {
                #expect(
                    report.failure == nil,
                    "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
                #expect(store.served["sandbox/verifyReceipt", default: 0] > 0, "\(store.served)")
            } else {
                #expect(store.served["sandbox/verifyReceipt", default: 0] == 0, "\(store.served)")
            }
        }
        #expect(verdicts == [true, false])
    }

    /// Mistake J41: a webhook that answers after the sender's deadline. Apple counts each such delivery failed and
    /// sends the same notification again on its schedule; iapcheck reports the time-out with every attempt.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func aWebhookThatAnswersTooLateIsCaught() throws {
        let store = try MockAppStore(settings: StoreSettings(port: 0, sharedSecret: "example-secret"))
        try store.start()
        let (p, target) = try Self.start(extra: ["--slow-ack-ms", "2500"], store: store, slot: 6)
        defer { p.killAndWait() }
        var o = CheckOptions()
        o.cases = 6
        o.properties = [.entitlementAgreement]
        o.flakinessReplays = 0
        o.shrinkBudget = .init(maxAttempts: 1)  // each attempt waits out every deadline again
        let report = Checker(
            options: o, validator: HTTPValidator(target: target, name: "http:slow", timeout: 1, store: store)
        ).run()
        let failure = try #require(report.failure?.validatorFailure, "a webhook answering after the deadline passed")
        #expect(failure.kind == .timedOut, "\(failure)")
        #expect(failure.message.contains("the webhook failed all"), "\(failure)")
        // The store sent the same notification again after each missed deadline: Apple's duplicates.
        #expect(
            store.sentNotifications.contains {
                $0.attempts.count == NotificationRetry.delaysHours.count + 1
                    && $0.attempts.allSatisfy { $0 == "TIMED_OUT" }
            },
            "\(store.sentNotifications)")
    }

    /// A target iapcheck starts itself (`start`), on its own port, with a mock App Store when `store` is given.
    static func managedTarget(port: Int, backendArguments: String, store: Int?) throws -> HTTPValidator.Target {
        let arguments = (store.map { storeArguments(port: $0) } ?? []).joined(separator: " ")
        return try writeTarget(
            port: port, store: store,
            start: "\(binary) --port \(port) --database {tmp}/backend.sqlite \(arguments) \(backendArguments)")
    }

    static let keyFile = root.appendingPathComponent("Examples/http/SubscriptionKey_IAPCHK0001.p8").path

    /// The example backend's options for calling the mock App Store on `port` with the test API key.
    static func storeArguments(port: Int) -> [String] {
        [
            "--app-store", "127.0.0.1:\(port)", "--api-key", keyFile, "--key-id", "IAPCHK0001",
            "--issuer-id", "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f", "--shared-secret", "example-secret",
        ]
    }

    /// A target file for the example backend on `port`: pull routes and a store section with a store, push routes
    /// without; a `start` command when iapcheck is to start the backend itself.
    static func writeTarget(port: Int, store: Int?, start: String?) throws -> HTTPValidator.Target {
        let storeSection =
            store.map {
                #""store":{"port":\#($0),"sharedSecret":"example-secret","apiKey":{"keyId":"IAPCHK0001","issuerId":"6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f","privateKeyFile":"\#(keyFile)"}},"#
            } ?? ""
        let startSection = start.map { #""start":{"command":"\#($0)","readySeconds":60},"# } ?? ""
        let pull =
            store != nil
            ? #""reconcile":{"method":"POST","path":"/apple/reconcile"},"receipt":{"method":"POST","path":"/apple/receipts"},"#
            : #""apiSnapshot":{"method":"POST","path":"/apple/api-snapshots"},"legacyReceipt":{"method":"POST","path":"/apple/legacy-receipts"},"#
        let json = """
            {"baseURL":"http://127.0.0.1:\(port)",\(storeSection)\(startSection)"routes":{
              "reset":{"method":"POST","path":"/iapcheck/reset"},
              "appTransaction":{"method":"POST","path":"/apple/app-transactions"},
              "notification":{"method":"POST","path":"/apple/notifications"},\(pull)
              "entitlements":{"method":"GET","path":"/users/{userId}/entitlements?at={at}"}}}
            """
        let path = Scratch.directory + "target-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    /// Fault profile kill over HTTP: iapcheck kills the backend it started and starts it again; durable-ack passes
    /// when the backend stores before answering and catches it when it answers first.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func killingTheHTTPBackendCatchesAcknowledgingBeforePersisting() throws {
        var faults = FaultProfile()
        faults.kill = true
        var results: [Bool] = []
        for (offset, arguments) in [(12, ""), (13, "--ack-before-persist")] {
            let port = Self.port(offset)
            let target = try Self.managedTarget(port: port, backendArguments: arguments, store: nil)
            let v = try HTTPValidator.make(target: target, name: "managed", timeout: 10, store: nil, faults: faults)
            defer { (v as? ManagedHTTPValidator)?.backend.stopAndForget() }
            #expect(v is ManagedHTTPValidator)
            var o = CheckOptions()
            o.cases = 12
            o.properties = [.durableAck]
            o.flakinessReplays = 1
            let report = Checker(options: o, validator: v).run()
            #expect(
                report.failure?.validatorFailure == nil, "\(report.failure?.validatorFailure.map { "\($0)" } ?? "")")
            results.append(report.failure?.discrepancy == nil)
        }
        #expect(results == [true, false])
    }

    /// Faults reset, webhook-5xx and slow-store around the example backend and its mock App Store: answers lost after
    /// the backend processed them (so it sees requests twice), webhook retries, a slow App Store. It still agrees.
    @Test(.long, .enabled(if: built != nil, notBuilt))
    func theExampleBackendSurvivesResetsWebhookRetriesAndASlowStore() throws {
        guard case .success(let faults) = FaultProfile.parse("reset,webhook-5xx,slow-store") else {
            Issue.record("parse"); return
        }
        let port = Self.port(14), storePort = Self.port(15)
        let target = try Self.managedTarget(port: port, backendArguments: "", store: storePort)
        let store = try MockAppStore(settings: target.store!)
        try store.start()
        store.faults = faults
        let v = try HTTPValidator.make(target: target, name: "faulty", timeout: 10, store: store, faults: faults)
        defer { (v as? ManagedHTTPValidator)?.backend.stopAndForget() }
        var o = CheckOptions()
        o.cases = 16
        o.properties = [.entitlementAgreement]
        let report = Checker(options: o, validator: v).run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(v.resetsInjected > 0)
        // Over all cases (the store's notification history is per case): some answer was lost and the retry landed.
        #expect(store.notificationsDeliveredOnRetry > 0)
    }

    /// A journal row the backend cannot read or apply would silently lose acknowledged state: it refuses to start,
    /// naming the row, instead of answering from less than it acknowledged.
    @Test(.enabled(if: built != nil, notBuilt))
    func anUnreadableJournalRowStopsTheBackendNamingTheRow() throws {
        let dir = Scratch.url.appendingPathComponent("journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let db = dir.appendingPathComponent("j.db").path
        let setup = Process()
        setup.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        setup.arguments = [
            "python3", "-c",
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("CREATE TABLE journal_v2 (seq INTEGER PRIMARY KEY, record TEXT NOT NULL)")
            c.execute("INSERT INTO journal_v2 (record) VALUES ('R\t0\tnot json')")
            c.commit()
            """, db,
        ]
        try setup.run()
        setup.waitUntilExit()
        try #require(setup.terminationStatus == 0)
        let backend = Process()
        backend.executableURL = URL(fileURLWithPath: Self.binary)
        backend.arguments = ["--port", "0", "--database", db]
        let err = Pipe()
        backend.standardError = err
        backend.standardOutput = FileHandle.nullDevice
        try backend.run()
        let deadline = Date().addingTimeInterval(30)
        while backend.isRunning && Date() < deadline { usleep(50_000) }
        if backend.isRunning { kill(backend.processIdentifier, SIGKILL) }
        backend.waitUntilExit()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(backend.terminationStatus == 1, "\(text)")
        #expect(text.contains("journal row 1 cannot be read"), "\(text)")
    }

    @Test func targetFilesAreStrictAndLoopbackOnly() throws {
        let path = Scratch.directory + "bad-target-\(UUID().uuidString).json"
        try Data(
            #"{"baseURL":"http://10.0.0.5:80","routes":{"reset":{"method":"TRACE","path":"reset"}},"extra":1}"#.utf8
        ).write(to: URL(fileURLWithPath: path))
        #expect {
            try HTTPValidator.Target.load(path: path)
        } throws: { error in
            let keys = Set((error as? ConfigError)?.problems.map(\.key) ?? [])
            return keys.isSuperset(of: ["baseURL", "routes.reset.method", "extra"])
        }
        // maxConcurrency: a whole number from 1, and not with a store (one mock App Store state for every job).
        for (text, message) in [
            (#""maxConcurrency":0,"#, "out of range 1...256"), (#""maxConcurrency":"4","#, "expected an integer"),
            (#""maxConcurrency":2,"store":{"port":9},"#, "without a \"store\" section"),
        ] {
            try Data(#"{"baseURL":"http://127.0.0.1:80",\#(text)"routes":{}}"#.utf8).write(
                to: URL(fileURLWithPath: path))
            #expect {
                try HTTPValidator.Target.load(path: path)
            } throws: { error in
                (error as? ConfigError)?.problems.contains {
                    $0.key == "maxConcurrency" && $0.message.contains(message)
                }
                    == true
            }
        }
        // A misspelt channel is one problem, said once: not also the routes of channels it did not declare.
        try Data(
            (#"{"baseURL": "http://127.0.0.1:80", "channels": ["app-transaction", "notifications"], "#
                + #""routes": {"appTransaction": {"method": "POST", "path": "/a"}, "#
                + #""notification": {"method": "POST", "path": "/n"}, "#
                + #""entitlements": {"method": "GET", "path": "/e/{userId}"}}}"#).utf8
        ).write(to: URL(fileURLWithPath: path))
        #expect {
            try HTTPValidator.Target.load(path: path)
        } throws: { error in
            let problems = (error as? ConfigError)?.problems ?? []
            return problems.count == 1 && problems[0].key == "channels"
                && problems[0].message.hasPrefix(#""notifications" is not a channel"#)
        }
    }
}
