import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// How one send reaches its validator: an `http:` target as its file says (its backend started, under faketime
/// when it asks, with its data kept beside the state file), a dry run that records the requests instead, or a
/// validator of this process or a program, which remembers nothing between sends.
final class SendTransport {
    let validator: any Validator
    let http: HTTPValidator?
    /// The validator remembers nothing of earlier sends: it lives in this process or a new one, or it is a backend
    /// iapcheck starts without a `{tmp}` folder for its data. Earlier deliveries go to it first, quietly.
    let replays: Bool
    /// A dry run's requests, in order, and the number of them each delivery made.
    let recorded = Locked<[SentRequest]>([])
    var perDelivery: [Range<Int>] = []

    init(session: SendSession) throws {
        let command = session.command
        if command.format == "curl" && session.target == nil {
            throw fail("error: --format curl prints HTTP requests: give --validator http:target.json", code: Exit.usage)
        }
        if command.isDryRun, let target = session.target {
            // Nothing starts and nothing is sent: the requests are written down, each answered as accepted.
            let store = target.store.map { _ in RecordingStore() }
            let v = HTTPValidator(
                target: target, name: "http:\(target.host):\(target.port) (dry run)", timeout: 1, store: store)
            v.dryRun = true
            v.recorder = { [recorded] r in recorded.withLock { $0.append(r) } }
            (validator, http, replays) = (v, v, false)
            return
        }
        if session.target != nil {
            // A backend iapcheck starts keeps its {tmp} folder (its database) beside the state file.
            let dir = (session.statePath as NSString).deletingLastPathComponent
            ManagedBackend.persistentDirectory.withLock {
                $0 = (dir.isEmpty ? "." : dir) + "/backend"
            }
        }
        validator = try makeValidator(command.validator, timeout: command.timeout, forLoad: true)
        http = validator as? HTTPValidator
        let forgets = session.target?.start.map { !$0.command.contains("{tmp}") } ?? false
        replays = http == nil || forgets
        if forgets {
            try? FileHandle.standardError.write(
                contentsOf:
                    Data(
                        "note: the target's start command has no {tmp} folder for the backend's data, so the backend may remember nothing between sends: the customer's earlier deliveries go first, again (docs/send.md#a-customers-history)\n"
                            .utf8))
        }
    }

    /// The last request's line and status (`POST /apple/notifications → 200`), for the delivery just made; in a dry
    /// run, the requests it made are set apart for the files and curl commands.
    func exchange() -> String? {
        let count = recorded.value.count
        let start = perDelivery.last?.upperBound ?? 0
        perDelivery.append(start..<count)
        guard let e = http?.lastExchange else { return nil }
        return e.request + (e.status.map { " → \($0)" } ?? "")
    }

    /// Before the deliveries, for a backend that keeps its state: reset once per state file (when it has the route),
    /// else the mock App Store told the app; then the store serves the customer's chains as Apple would now.
    func prepare(_ c: GeneratedCase, _ run: SendRun, at t: Millis, resets: Bool) throws {
        guard let http, !http.dryRun else { return }
        var config = c.config
        config.trustedRoots = TestPKI.harness.trustedRoots
        let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
        let snapshots = ((try? run.currentSnapshots(at: t)) ?? []).map { renderer.render($0) }
        do { try http.prepareForSend(config, resets: resets, snapshots: snapshots) } catch {
            throw fail("error: preparing the backend: \(error)", code: Exit.validatorFailure)
        }
    }

    /// A dry run's output: the files in `--out`, the curl commands.
    func finish(_ outcome: SendRun.Outcome, _ c: GeneratedCase, command: Send) throws {
        guard command.isDryRun else { return }
        let requests = recorded.value
        var files: SendFiles?
        if let dir = command.out {
            var f = SendFiles(directory: dir, catalog: c.config.catalog)
            try f.write(outcome, requests: requests, perDelivery: perDelivery)
            files = f
            let line = "wrote \(f.written.count) files to \(dir) (verify the JWS against root.der, the test PKI's root)"
            // Beside curl commands, stdout is a script: what is said goes to stderr.
            if command.format == "curl" {
                try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
            } else {
                print(line)
            }
        }
        guard command.format == "curl" else { return }
        let names = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
        for (k, sent) in outcome.sent.enumerated() where perDelivery.indices.contains(k) {
            print("# \(Timeline.describe(sent.delivery, names: names))")
            if http?.hasFakeClock == true {
                print(
                    "# the backend's clock must read \(CivilTime.iso8601(sent.delivery.now)) (it runs under faketime)")
            }
            for (n, i) in perDelivery[k].enumerated() {
                print(Self.curl(requests[i], bodyFile: files?.bodyFile(delivery: k, request: n)))
            }
        }
        // The question, as the target file asks it.
        guard let q = outcome.question, let http else { return }
        let before = recorded.value.count
        _ = try? http.entitlements(q.query)
        if let asked = recorded.value.dropFirst(before).first {
            print(
                "# what may \(command.user) use at \(CivilTime.iso8601(q.query.at))? expected: \(outcome.expected.map { CaseRunner.summary($0, profile: http.profile) } ?? "?")"
            )
            print(Self.curl(asked, bodyFile: nil))
        }
    }

    /// A request as a curl command: its body inline, or from the file a dry run wrote.
    static func curl(_ r: SentRequest, bodyFile: String?) -> String {
        var words = ["curl", "-sS", "-X", r.method, Shell.quote(r.url)]
        for (name, value) in r.headers { words += ["-H", Shell.quote("\(name): \(value)")] }
        if let body = r.body {
            words += [
                "--data-binary",
                bodyFile.map { "@" + Shell.quote($0) } ?? Shell.quote(String(decoding: body, as: UTF8.self)),
            ]
        }
        return words.joined(separator: " ")
    }
}

/// The mock App Store of a dry run: nothing listens; a notification is posted once, the API's answers and
/// verifyReceipt bodies are kept for the files.
final class RecordingStore: AppStoreBridge, @unchecked Sendable {
    private let lock = NSLock()
    private var receipts = 0

    func reset(_ config: ValidatorConfig) {}

    func publish(originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?)
        -> @Sendable () -> Void
    { {} }

    func registerReceipt(responseBody: String) -> String {
        lock.lock()
        defer { lock.unlock() }
        receipts += 1
        return Data("iapcheck dry-run receipt \(receipts)".utf8).base64EncodedString()
    }

    func postNotification(
        _ signedPayload: String, now: Millis, send: (Millis) throws(ValidatorFailure) -> (Int, Data)
    ) throws(ValidatorFailure) -> (Int, Data) {
        try send(now)
    }
}
