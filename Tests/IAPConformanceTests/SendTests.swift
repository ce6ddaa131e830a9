import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPReference
import IAPSigning
import IAPSimulator
import IAPStore
import IAPTesting
import IAPValidatorAPI
import Testing

/// `iapcheck send` (docs/send.md): every scenario's shortest chain of sends, against the reference in this process
/// and against the example backend over HTTP, each send delivering what the App Store sends for it and getting the
/// expected verdicts and answer.
@Suite struct SendTests {
    /// One send of a chain: a scenario with its choices, or the clock moved on (`advance`).
    struct Step {
        var scenario: SendScenario?
        var product: String? = nil
        var flags: [String] = []
        var quantity: Int? = nil
        var advance: Millis = 0
    }

    /// A scenario's shortest chain, the notification (or app delivery) its last send must make, and the oracle's
    /// answer about the customer after it.
    struct Chain: CustomStringConvertible, Sendable {
        var steps: [SendScenario?]
        var last: Step
        var delivers: String
        var answer: String
        var description: String {
            (steps.map { $0?.rawValue ?? "advance" } + [last.scenario?.rawValue ?? "advance"]).joined(separator: " → ")
                + " " + last.flags.joined(separator: " ")
        }

        init(_ before: [SendScenario?], _ last: Step, _ delivers: String, _ answer: String) {
            (steps, self.last, self.delivers, self.answer) = (before, last, delivers, answer)
        }
    }

    static let chains: [Chain] = [
        Chain([], Step(scenario: .buy), "SUBSCRIBED/INITIAL_BUY", "pro.yearly"),
        Chain([], Step(scenario: .buy, product: "consumable", quantity: 3), "ONE_TIME_CHARGE", "coins.100×3"),
        Chain([], Step(scenario: .buy, product: "non-consumable"), "ONE_TIME_CHARGE", "lifetime.unlock"),
        Chain([], Step(scenario: .buy, product: "non-renewing"), "ONE_TIME_CHARGE", "season.pass"),
        Chain([.buy], Step(scenario: .renew), "DID_RENEW", "pro.yearly"),
        Chain([.buy], Step(scenario: .failBilling), "DID_FAIL_TO_RENEW/GRACE_PERIOD", "pro.yearly (grace)"),
        Chain([.buy], Step(scenario: .failBilling, flags: ["no-grace"]), "DID_FAIL_TO_RENEW", "nothing"),
        Chain([.buy, .failBilling], Step(scenario: .recover), "DID_RENEW/BILLING_RECOVERY", "pro.yearly"),
        Chain([.buy, .failBilling, nil], Step(scenario: .recover), "DID_RENEW/BILLING_RECOVERY", "pro.yearly"),
        Chain([.buy], Step(scenario: .expire), "EXPIRED/VOLUNTARY", "nothing"),
        Chain([.buy, .failBilling], Step(scenario: .expire), "EXPIRED/BILLING_RETRY", "nothing"),
        Chain([.buy], Step(scenario: .refund), "REFUND", "nothing"),
        Chain([.buy], Step(scenario: .refund, flags: ["prorated"]), "REFUND", "nothing"),
        Chain([.buy, .refund], Step(scenario: .reverseRefund), "REFUND_REVERSED", "pro.yearly"),
        Chain([.buy], Step(scenario: .declineRefund), "REFUND_DECLINED", "pro.yearly"),
        Chain([.buy], Step(scenario: .consumptionRequest), "CONSUMPTION_REQUEST", "pro.yearly"),
        Chain([.buy], Step(scenario: .downgrade), "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "pro.yearly"),
        Chain([.buy], Step(scenario: .crossgrade), "DID_CHANGE_RENEWAL_PREF", "pro.yearly"),
        Chain([], Step(scenario: .familyShare), "SUBSCRIBED/INITIAL_BUY", "nothing"),
        Chain([.familyShare], Step(scenario: .openApp), "app: u1 submits pro.yearly", "pro.yearly"),
        Chain([.familyShare, .openApp], Step(scenario: .revoke), "REVOKE", "nothing"),
        Chain([.offerCode], Step(scenario: .openApp), "app: u1 submits pro.yearly", "pro.yearly"),
        Chain([.buy], Step(scenario: .promotionalOffer), "OFFER_REDEEMED", "pro.yearly"),
        Chain([.buy, .expire], Step(scenario: .winBack), "pro.yearly", "pro.yearly"),
        Chain([.buy], Step(scenario: .extend), "RENEWAL_EXTENDED", "pro.yearly"),
        Chain([.buy], Step(scenario: .priceIncrease), "PRICE_INCREASE/PENDING", "pro.yearly"),
        Chain(
            [.buy, .priceIncrease], Step(scenario: .priceIncrease, flags: ["accept"]), "PRICE_INCREASE/ACCEPTED",
            "pro.yearly"),
        Chain(
            [.buy], Step(scenario: .priceIncrease, flags: ["no-consent-needed"]), "PRICE_INCREASE/ACCEPTED",
            "pro.yearly"),
        Chain([.buy], Step(scenario: .autoRenewOff), "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "pro.yearly"),
        Chain(
            [.buy, .autoRenewOff], Step(scenario: .autoRenewOn), "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED",
            "pro.yearly"),
        Chain([], Step(scenario: .test), "TEST", "nothing"),
        Chain([.buy], Step(scenario: nil, advance: 400 * CivilTime.msPerDay), "DID_RENEW", "pro.yearly"),
    ]

    /// The `upgrade` chain starts from the group's lowest level.
    static let upgrade = Chain([], Step(scenario: .upgrade), "DID_CHANGE_RENEWAL_PREF/UPGRADE", "pro.yearly")

    /// Runs a chain as successive sends against one validator: the outcome of each send.
    static func send(
        _ chain: Chain, to v: any Validator, http: Bool, resetsFirst: Bool = false,
        prepare: (GeneratedCase, SendRun, Millis) throws -> Void = { _, _, _ in }
    ) throws -> [SendRun.Outcome] {
        let t0 = CivilTime.days(fromCivil: 2027, 1, 30) * CivilTime.msPerDay
        var script = CustomerScript(start: t0 - 1000)
        var delivered: Set<String> = []
        let namespace = IDNamespace.next()
        var outcomes: [SendRun.Outcome] = []
        var steps =
            chain.steps.map { Step(scenario: $0, advance: $0 == nil ? 20 * CivilTime.msPerDay : 0) } + [chain.last]
        if chain.last.scenario == .upgrade { steps.insert(Step(scenario: .buy, product: "basic.monthly"), at: 0) }
        for (k, step) in steps.enumerated() {
            let clock = script.steps.isEmpty ? t0 : try script.clock(catalog: .standard, policy: .default)
            let at = step.scenario == nil ? clock + step.advance : clock + CivilTime.msPerMinute
            script.steps.append(
                ScriptStep(
                    scenario: step.scenario, at: at, product: step.product, quantity: step.quantity, flags: step.flags))
            let run = SendRun(
                catalog: .standard, policy: .default, script: script, namespace: namespace, delivered: delivered)
            let askAt = try script.clock(catalog: .standard, policy: .default)
            let c = try run.plan(profile: v.profile, askAt: askAt)
            try prepare(c, run, askAt)
            let out = run.run(c, against: v, replaysEarlier: !http, resets: k == 0 && resetsFirst)
            delivered = out.delivered
            outcomes.append(out)
        }
        return outcomes
    }

    /// Every send of the chain delivered something, got the expected verdicts and answer; the last delivered what its
    /// scenario names and left the customer as it should.
    static func expectAsScenarioSays(_ chain: Chain, _ outcomes: [SendRun.Outcome], profile: ValidatorProfile) {
        for (k, out) in outcomes.enumerated() {
            #expect(out.failure == nil, "\(chain) send \(k): \(out.failure.map { "\($0)" } ?? "")")
            #expect(out.discrepancy == nil, "\(chain) send \(k): \(out.differences)")
            #expect(!out.sent.isEmpty, "\(chain) send \(k) delivered nothing")
        }
        guard let last = outcomes.last else { return }
        let names = ["u1", "u2"]
        let lines = last.sent.map { s in
            Timeline.describe(
                s.delivery,
                names: Dictionary(uniqueKeysWithValues: zip(last.question.map { [$0.query.userId] } ?? [], names)))
        }
        #expect(lines.contains { $0.contains(chain.delivers) }, "\(chain): \(lines)")
        #expect(last.expected.map { CaseRunner.summary($0, profile: profile) } == chain.answer, "\(chain)")
    }

    @Test(arguments: chains + [upgrade])
    func everyScenarioAgainstTheReference(_ chain: Chain) throws {
        let v = ReferenceValidator()
        let outcomes = try Self.send(chain, to: v, http: false)
        Self.expectAsScenarioSays(chain, outcomes, profile: v.profile)
    }

    /// The same chains against the example backend (Hummingbird + SQLite) over HTTP, with a mock App Store: one
    /// backend for every chain, reset once, each chain a customer of its own, as sends to one backend go.
    @Test(
        .enabled(
            if: ExampleBackendTests.built != nil, ExampleBackendTests.notBuilt))
    func everyScenarioAgainstTheExampleBackendOverHTTP() throws {
        let store = try MockAppStore(
            settings: StoreSettings(
                port: 0, sharedSecret: "example-secret",
                apiKey: .init(
                    keyId: "IAPCHK0001", issuerId: "6f3c2a90-0b1e-4c4e-9a57-1a2b3c4d5e6f",
                    privateKeyFile: ExampleBackendTests.keyFile)))
        try store.start()
        let (p, target) = try ExampleBackendTests.start(store: store, slot: 20)
        defer { p.killAndWait() }
        let v = HTTPValidator(target: target, name: "http:example", timeout: 10, store: store)
        for (k, chain) in (Self.chains + [Self.upgrade]).enumerated() {
            let outcomes = try Self.send(chain, to: v, http: true, resetsFirst: k == 0) { c, run, t in
                var config = c.config
                config.trustedRoots = TestPKI.harness.trustedRoots
                let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
                try v.prepareForSend(
                    config, resets: false, snapshots: try run.currentSnapshots(at: t).map { renderer.render($0) })
            }
            Self.expectAsScenarioSays(chain, outcomes, profile: v.profile)
        }
    }
}

/// The `send` command as a developer runs it: a customer's history across invocations against a backend iapcheck
/// starts at every send, a mutant caught with both answers shown, refusals that leave the state alone, and a dry
/// run's files verified by Apple's own Python library.
@Suite struct SendCommandTests {
    static func send(_ args: [String], state: String) throws -> CLI.Result {
        try CLI.run(["send"] + args + ["--state", state], in: CLI.repo.path)
    }

    /// A dry run keeps its customers apart; naming a real customer in one says so, and a dry run's first send takes
    /// the real customers' app (the Ruby trial's `send renew --format curl` was told only "send buy first").
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aDryRunNamingARealCustomerSaysTheyAreApart() throws {
        let dir = try CLI.folder("send-dry-apart")
        let state = dir + "/state.json"
        _ = try Self.send(["buy", "--validator", "reference", "--user", "u2"], state: state)
        let renew = try Self.send(
            ["renew", "--validator", "reference", "--user", "u2", "--format", "curl"], state: state)
        #expect(renew.status == 2 && renew.err.contains("not of the dry runs"), "\(renew.err)")
    }

    /// A send whose deliveries all arrived but whose question failed says so, and that a send of nothing more asks
    /// again (it said "delivers the rest", though nothing remained: the Ruby trial).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aFailedQuestionAfterEveryDeliveryIsSaidSo() throws {
        let server = try LoopbackHTTPServer(port: 0) { r in
            r.path.hasPrefix("/e") ? .init(status: 500, text: "database down") : .init(status: 200, text: "{}")
        }
        server.start()
        defer { server.stop() }
        let dir = try CLI.folder("send-question-fails")
        let target = dir + "/target.json"
        try Data(
            """
            {"baseURL": "http://127.0.0.1:\(server.port)", "channels": ["app-transaction", "notification"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "notification": {"method": "POST", "path": "/n"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}?at={at}"}}}
            """.utf8
        ).write(to: URL(fileURLWithPath: target))
        let r = try Self.send(["buy", "--validator", "http:" + target], state: dir + "/state.json")
        #expect(r.status == 3 && r.out.contains("only the question failed"), "\(r.out)\n\(r.err)")
        #expect(!r.out.contains("delivers the rest"))
    }

    /// `--ask-about` asks in hindsight, with what the send delivered: a backend answering the past from its
    /// current state differs (a refund known ahead of the instant asked about), the reference agrees.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aQuestionInHindsightAfterASend() throws {
        for (validator, status) in [("reference", Int32(0)), ("mutant:past-from-current-state", Int32(1))] {
            let dir = try CLI.folder("send-hindsight")
            let state = dir + "/state.json"
            _ = try Self.send(
                ["buy", "--validator", validator, "--at", "2027-01-01T00:00:00Z", "--product", "pro.monthly"],
                state: state)
            let r = try Self.send(
                ["refund", "--validator", validator, "--at", "2027-01-10T00:00:00Z", "--ask-about=-5d"], state: state)
            #expect(r.status == status, "\(validator): \(r.out)\n\(r.err)")
            #expect(r.out.contains("asked about u1 at 2027-01-05T00:00:00.000Z (in hindsight"), "\(r.out)")
            // The refund is an end known ahead of that instant: the expected expiry is said not to be compared.
            #expect(r.out.contains("(or an end known ahead: not compared)"), "\(r.out)")
        }
        // A backend asked about its present only (no {at} in its route) cannot be asked in hindsight.
        let dir = try CLI.folder("send-hindsight-present")
        let target = dir + "/target.json"
        try Data(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: target))
        let present = try Self.send(
            ["buy", "--validator", "http:" + target, "--ask-about=-1d"], state: dir + "/state.json")
        #expect(present.status == 2 && present.err.contains("asked about its present only"), "\(present.err)")
    }

    /// Several dry runs into one folder number their files on and list every genuine JWS in one samples.json (each
    /// restarted at 01 and the last overwrote the list: the Ruby trial).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func dryRunsIntoOneFolderNumberOn() throws {
        let dir = try CLI.folder("send-dry-folder")
        let state = dir + "/state.json", out = dir + "/fixtures"
        for scenario in ["buy", "refund"] {
            _ = try Self.send([scenario, "--validator", "reference", "--dry-run", "--out", out], state: state)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.hasSuffix(".jws") }.sorted()
        #expect(files.last?.hasPrefix("03-notification-REFUND") == true, "\(files)")
        let samples =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: out + "/samples.json"))) as? [String: Any]
        #expect((samples?["genuine"] as? [String])?.sorted() == files, "\(String(describing: samples))")
    }

    /// The expected line of a send's output, without the expiries after `;`.
    static func expected(_ r: CLI.Result) -> String? {
        r.out.split(separator: "\n").first { $0.contains("expected: ") }.map {
            String($0.split(separator: ":", maxSplits: 1)[1].split(separator: ";")[0])
                .trimmingCharacters(in: .whitespaces)
        }
    }

    @Test(
        .enabled(
            if: ExampleBackendTests.built != nil, ExampleBackendTests.notBuilt))
    func chainedSendsGiveTheExpectedAnswerAtEachStep() throws {
        let dir = try CLI.folder("send-chain")
        let target = try ExampleBackendTests.managedTarget(
            port: ExampleBackendTests.port(22), backendArguments: "", store: ExampleBackendTests.port(23))
        let state = dir + "/state.json"
        let v = ["--validator", "http:" + target.file!]
        let steps: [([String], String)] = [
            (["buy"], "pro.yearly"), (["fail-billing"], "pro.yearly (grace)"), (["--advance", "20d"], "nothing"),
            (["recover"], "pro.yearly"), (["refund"], "nothing"), (["reverse-refund"], "pro.yearly"),
        ]
        for (args, answer) in steps {
            let r = try Self.send(args + v, state: state)
            #expect(r.status == 0, "\(args): \(r.out)\(r.err)")
            #expect(Self.expected(r) == answer, "\(args): \(r.out)")
            #expect(r.out.contains("observed: \(answer)") && r.out.contains("agree"), "\(args): \(r.out)")
        }
        // The backend kept its database beside the state, across six starts.
        #expect(FileManager.default.fileExists(atPath: dir + "/backend-\(ExampleBackendTests.port(22))/backend.sqlite"))
        let reset = try Self.send(["--reset"] + v, state: state)
        #expect(reset.status == 0 && reset.out.contains("1 customer") && !FileManager.default.fileExists(atPath: state))
    }

    @Test func aMutantThatIgnoresRefundReversedIsShownExpectedAndObserved() throws {
        let state = try CLI.folder("send-mutant") + "/state.json"
        let v = ["--validator", "mutant:refund-irreversible"]
        #expect(try Self.send(["buy"] + v, state: state).status == 0)
        #expect(try Self.send(["refund"] + v, state: state).status == 0)
        let r = try Self.send(["reverse-refund"] + v, state: state)
        #expect(r.status == 1, "\(r.out)\(r.err)")
        #expect(r.out.contains("notification REFUND_REVERSED"))
        #expect(r.out.contains("expected: pro.yearly") && r.out.contains("observed: nothing"), "\(r.out)")
        #expect(r.out.contains("DIFFERS: entitlement disagreement (product pro.yearly/active)"))
        #expect(r.out.contains("why the oracle expects this"))
        // A validator of this process remembers nothing between sends: the earlier deliveries went again first, and
        // the report says how many and that they were judged as expected.
        #expect(
            r.out.contains(
                "sent again first, as the validator remembers nothing between sends: 3 earlier deliveries, each judged"),
            "\(r.out)")
    }

    /// A difference the baseline accepts is said to be accepted, with its reason, and exits 0; without the baseline
    /// the same send differs (exit 1).
    @Test func aDifferenceTheBaselineAcceptsIsSaidToBeAccepted() throws {
        let dir = try CLI.folder("send-baseline")
        let state = dir + "/state.json"
        let v = ["--validator", "mutant:refund-irreversible"]
        var signature = FailureSignature(difference: "entitlement disagreement")
        (signature.field, signature.productKind) = ("active", "auto-renewable")
        (signature.event, signature.channel) = ("REFUND_REVERSED", "notification")
        try Baseline(entries: [.init(signature: signature, reason: "reversals are rare", replay: nil)])
            .write(to: dir + "/baseline.json")
        #expect(try Self.send(["buy"] + v, state: state).status == 0)
        #expect(try Self.send(["refund"] + v, state: state).status == 0)
        let r = try Self.send(["reverse-refund", "--baseline", dir + "/baseline.json"] + v, state: state)
        #expect(r.status == 0, "\(r.out)\(r.err)")
        #expect(r.out.contains("DIFFERS, an accepted divergence (\(dir)/baseline.json)"), "\(r.out)")
        #expect(r.out.contains("accepted: \(signature): reversals are rare"), "\(r.out)")
    }

    @Test func aStepTheCustomerCannotTakeIsRefusedAndChangesNothing() throws {
        let state = try CLI.folder("send-refused") + "/state.json"
        let r = try Self.send(["recover"], state: state)
        #expect(r.status == 2 && r.err.contains("no subscription in billing retry"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: state))
        let upgrade = try Self.send(["buy"], state: state)
        #expect(upgrade.status == 0)
        let top = try Self.send(["upgrade"], state: state)
        #expect(top.status == 2 && top.err.contains("no upgrade from pro.yearly (level 1)"), "\(top.err)")
        let bad = try Self.send(["refund", "--at", "yesterday"], state: state)
        #expect(bad.status == 2 && bad.err.contains("neither an instant"), "\(bad.err)")
        // In billing retry nothing is paid for now: the refusal says why, and what would allow a refund.
        #expect(try Self.send(["fail-billing"], state: state).status == 0)
        let retrying = try Self.send(["refund"], state: state)
        #expect(
            retrying.status == 2 && retrying.err.contains("is in billing retry")
                && retrying.err.contains("send recover first"), "\(retrying.err)")
    }

    /// What a first user of `send` stumbled on: a dry run kept apart from the backend's state, options a scenario does
    /// not read refused, Apple's limits on extensions, the customer's own name, one target file by any path.
    @Test func aNewUsersStumblesAreAnswered() throws {
        let dir = try CLI.folder("send-stumbles")
        let state = dir + "/state.json"
        let relative = ["--validator", "http:Examples/http/example-backend.json"]
        #expect(try Self.send(["buy", "--dry-run"] + relative, state: state).status == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/state-dry-run.json"))
        #expect(!FileManager.default.fileExists(atPath: state), "a dry run must not touch the backend's state")
        let absolute = [
            "--validator", "http:" + CLI.repo.appendingPathComponent("Examples/http/example-backend.json").path,
        ]
        #expect(
            try Self.send(["refund", "--dry-run"] + absolute, state: state).status == 0,
            "the same target by its absolute path")
        let quantity = try Self.send(["refund", "--quantity", "3"], state: state)
        #expect(quantity.status == 2 && quantity.err.contains("--quantity goes with buy"), "\(quantity.err)")
        let alice = try Self.send(["buy", "--user", "alice"], state: state)
        #expect(alice.out.contains("alice buys pro.yearly"), "\(alice.out)")
        let zero = try Self.send(["extend", "--user", "alice", "--days", "0"], state: state)
        #expect(zero.status == 2 && zero.err.contains("1 to 90 days"), "\(zero.err)")
        let family = try Self.send(["family-share", "--user", "bob", "--product", "non-consumable"], state: state)
        let charges = family.out.split(separator: "\n").filter { $0.contains("notification ONE_TIME_CHARGE") }
        #expect(charges.count == 2, "the organizer's purchase and the member's access: \(family.out)")
        #expect(family.out.contains("note: the app has not submitted transaction"))
        let opened = try Self.send(["open-app", "--user", "bob"], state: state)
        #expect(opened.status == 0 && opened.out.contains("expected: lifetime.unlock"), "\(opened.out)")
    }

    /// A backend that reads the wall clock (the notes backend: Python, SQLite, Apple's library, no reset route):
    /// started by iapcheck under faketime at every send, then started by hand on its real clock.
    @Test(
        .long,
        .enabled(if: NotesBackendTests.usable, "needs libfaketime and python3 -m pip install app-store-server-library"))
    func theNotesBackendUnderFaketimeAndOnTheRealClock() throws {
        let dir = try CLI.folder("send-notes")
        let catalog = [
            "--catalog",
            NotesBackendTests.root.appendingPathComponent("Examples/notes-backend/iapcheck-catalog.json").path,
        ]
        let faketime = try NotesBackendTests.target("target.json", port: ExampleBackendTests.port(24))
        let v = ["--validator", "http:" + faketime.file!] + catalog
        for (scenario, answer) in [
            ("buy", "maps, pro"), ("fail-billing", "maps, pro"), ("recover", "maps, pro"), ("refund", "nothing"),
            ("reverse-refund", "maps, pro"),
        ] {
            let r = try Self.send([scenario] + v, state: dir + "/faketime.json")
            #expect(
                r.status == 0 && Self.expected(r) == answer && r.out.contains("agree"), "\(scenario): \(r.out)\(r.err)")
        }
        let port = ExampleBackendTests.port(25)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [
            "python3", NotesBackendTests.root.appendingPathComponent("Examples/notes-backend/notes_backend.py").path,
            "--port", String(port), "--db", dir + "/wall.sqlite", "--bundle-id", "com.acme.notes", "--environment",
            "Production", "--app-apple-id", "1234567890", "--root-cert",
            NotesBackendTests.root.appendingPathComponent("Examples/notes-backend/iapcheck-root.pem").path, "--catalog",
            NotesBackendTests.root.appendingPathComponent("Examples/notes-backend/catalog.json").path,
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        // SIGKILL: a child of the test process may start with SIGTERM blocked (the mask of the thread that spawned it).
        defer {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        let wall = try NotesBackendTests.target("target-running.json", port: port) {
            $0.replacingOccurrences(of: "8710", with: String(port))
        }
        let w = ["--validator", "http:" + wall.file!] + catalog
        var first = try Self.send(["buy"] + w, state: dir + "/wall.json")
        for _ in 0..<50 where first.status == 2 && (first.out + first.err).contains("cannot connect") {
            Thread.sleep(forTimeInterval: 0.2)  // the backend is still starting
            first = try Self.send(["buy"] + w, state: dir + "/wall.json")
        }
        #expect(first.status == 0 && Self.expected(first) == "maps, pro", "\(first.out)\(first.err)")
        for (scenario, answer) in [("refund", "nothing"), ("reverse-refund", "maps, pro")] {
            let r = try Self.send([scenario] + w, state: dir + "/wall.json")
            #expect(
                r.status == 0 && Self.expected(r) == answer && r.out.contains("agree"), "\(scenario): \(r.out)\(r.err)")
        }
        let advance = try Self.send(["--advance", "1d"] + w, state: dir + "/wall.json")
        #expect(advance.status == 2 && advance.err.contains("reads the real clock"), "\(advance.err)")
    }

    static let applePython = Installed.applePython

    /// A dry run writes what the target would get; Apple's Python library verifies every JWS against the root it
    /// wrote; `--format curl` prints commands whose body files exist.
    @Test(.enabled(if: applePython, "python3 with app-store-server-library is not installed"))
    func aDryRunsFilesVerifyWithApplesLibrary() throws {
        let dir = try CLI.folder("send-dry")
        let v = ["--validator", "http:Examples/http/example-backend.json", "--dry-run"]
        #expect(try Self.send(["buy"] + v + ["--out", dir + "/1"], state: dir + "/s.json").status == 0)
        let r = try Self.send(["refund"] + v + ["--out", dir + "/2"], state: dir + "/s.json")
        #expect(r.status == 0, "\(r.err)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir + "/2")
        #expect(files.contains("01-notification-REFUND.notification.jws"), "\(files)")
        #expect(files.contains("01-notification-REFUND.request.txt") && files.contains("root.der"))
        let request = try String(contentsOfFile: dir + "/2/01-notification-REFUND.request.txt", encoding: .utf8)
        #expect(
            request.hasPrefix("POST http://127.0.0.1:8080/apple/notifications\n")
                && request.contains("X-IAPCheck-Now: "))
        for folder in ["1", "2"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = [
                "python3", CLI.repo.appendingPathComponent("Examples/python/verify_samples.py").path,
                dir + "/" + folder,
            ]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0 && text.contains("\"accepted\""), "\(text)")
        }
        let curl = try Self.send(
            [
                "reverse-refund", "--validator", "http:Examples/http/example-backend.json", "--format", "curl", "--out",
                dir + "/3",
            ], state: dir + "/s.json")
        let commands = curl.out.split(separator: "\n").filter { $0.hasPrefix("curl ") }
        // The delivery, then the question as the target asks it.
        #expect(commands.count == 2, "\(curl.out)\(curl.err)")
        #expect(commands.last?.contains("-X GET 'http://127.0.0.1:8080/users/") == true, "\(commands)")
        #expect(commands.first?.contains("-X POST http://127.0.0.1:8080/apple/notifications") == true)
        #expect(
            commands.first?.contains("--data-binary @" + dir + "/3/01-notification-REFUND_REVERSED.body") == true,
            "\(commands)")
        #expect(curl.err.contains("expected: pro.yearly"), "the report goes to stderr beside curl commands")
    }
}
