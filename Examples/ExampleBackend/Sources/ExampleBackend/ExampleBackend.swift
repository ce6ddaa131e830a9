import Foundation
import Hummingbird
import IAPModel
import IAPMutants
import IAPReference
import IAPSupport
import IAPValidatorAPI
import Logging
import SQLiteNIO

// An example App Store purchase backend: Hummingbird on loopback, facts persisted in SQLite before each answer,
// entitlements from iapcheck's reference logic. Start it, point `iapcheck check --validator http:TARGET.json` at it.
//
//   iapcheck-example-backend --port 8080 --database backend.sqlite
//
// Routes (bodies are JSON):
//   POST /apple/app-transactions   {"userId", "signedTransaction", "deviceTime"}   the app submits a purchase
//   POST /apple/notifications      {"signedPayload"}                               App Store Server Notifications V2
//   POST /apple/api-snapshots      {"apiSnapshot": {...}}                          App Store Server API answers
//   POST /apple/legacy-receipts    {"userId", "responseBody"}                      a verifyReceipt response
//   POST /apple/reconcile          {"originalTransactionId"}     fetch the chain from the App Store Server API
//   POST /apple/receipts           {"userId", "receiptData"}     the app's receipt, checked with verifyReceipt
//   GET  /users/{id}/entitlements?at=MS                                             the answer (docs/answers.md)
//   GET  /v1/subscribers/{id}?at=MS                                                 the same as a subscriber record (mapped target)
//   POST /iapcheck/reset           ValidatorConfig                                 test hook: forget everything
// 2xx means accepted (and durably stored); 422 means rejected, with {"reason"}.

struct Options {
    var port = 8080
    var database = "example-backend.sqlite"
    /// The deliberate bug for iapcheck's durable-ack property: answer first, store later.
    var ackBeforePersist = false
    var store = AppStoreClient.Settings()
    /// Run one of iapcheck's mutants instead of the reference logic (to watch iapcheck catch a bug).
    var mutant: String?
    /// A deliberate bug: answer each notification this many milliseconds after storing it, as a webhook that
    /// processes synchronously does; past the sender's deadline Apple counts the delivery failed and sends it again.
    var slowAckMs = 0

    init(_ args: [String]) {
        var i = 1
        while i < args.count {
            switch args[i] {
            case "--port": port = Int(args[i + 1]) ?? port; i += 1
            case "--database": database = args[i + 1]; i += 1
            case "--ack-before-persist": ackBeforePersist = true
            case "--app-store": store.port = Int(args[i + 1].split(separator: ":").last ?? "") ?? store.port; i += 1
            case "--api-key": store.keyFile = args[i + 1]; i += 1
            case "--key-id": store.keyId = args[i + 1]; i += 1
            case "--issuer-id": store.issuerId = args[i + 1]; i += 1
            case "--shared-secret": store.sharedSecret = args[i + 1]; i += 1
            case "--mutant": mutant = args[i + 1]; i += 1
            case "--no-sandbox-fallback": store.sandboxFallback = false
            case "--slow-ack-ms": slowAckMs = max(0, Int(args[i + 1]) ?? 0); i += 1
            case "--help", "-h":
                print(
                    """
                    usage: iapcheck-example-backend [--port N] [--database FILE] [--ack-before-persist]
                                                    [--app-store 127.0.0.1:PORT] [--api-key FILE.p8 --key-id ID --issuer-id UUID]
                                                    [--shared-secret SECRET] [--mutant NAME]
                                                    [--no-sandbox-fallback] [--slow-ack-ms N]
                      --app-store      where the App Store Server API and verifyReceipt live (iapcheck's mock store; default 127.0.0.1:8081)
                      --api-key ...    the App Store Connect API key the backend signs its API tokens with
                      --shared-secret  the app-specific shared secret sent to verifyReceipt
                      --mutant NAME    a deliberately broken logic from `iapcheck mutants --list`, for demonstrations
                    Deliberate bugs of the HTTP layer, for demonstrations (each is a real-world mistake iapcheck catches):
                      --ack-before-persist   answer before the request is stored (caught by the durable-ack property)
                      --no-sandbox-fallback  do not retry verifyReceipt on the sandbox after status 21007 (breaks App Review)
                      --slow-ack-ms N        answer each notification N ms after storing it (Apple times out and re-sends)
                    """)
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown option \(args[i])\n".utf8))
                exit(2)
            }
            i += 1
        }
    }
}

/// The state: the reference validator behind a lock, and the SQLite journal every accepted request goes to first.
///
/// With `"maxConcurrency"` above 1 in the target file, iapcheck runs several jobs at once, each sending its number in
/// the `X-IAPCheck-Job` header: the backend keeps one validator per job (one tenant each), and a job's reset
/// forgets only that job's facts. Without the header everything is job "".
final class Backend: Sendable {
    let validators: Locked<[String: LockedValidator]>
    let makeLogic: @Sendable () -> any Validator
    let db: SQLiteConnection
    let ackBeforePersist: Bool
    let store: AppStoreClient
    let state = Locked(State())

    struct State {
        /// Accepted but not yet written (`--ack-before-persist` only).
        var unsaved: [(job: String, record: String)] = []
        /// The app's bundle ID (from the last reset): the `bid` of App Store Server API tokens.
        var bundleId = ""
    }

    init(
        db: SQLiteConnection, ackBeforePersist: Bool, store: AppStoreClient,
        makeLogic: @escaping @Sendable () -> any Validator
    ) {
        self.validators = Locked([:])
        self.makeLogic = makeLogic
        self.db = db
        self.ackBeforePersist = ackBeforePersist
        self.store = store
    }

    static let encoder = JSONEncoder()

    /// The validator of a job, made on its first request.
    func validator(job: String) -> LockedValidator {
        validators.withLock { all in
            if let v = all[job] { return v }
            let v = LockedValidator(makeLogic())
            all[job] = v
            return v
        }
    }

    func validator(_ request: Request) -> LockedValidator { validator(job: Self.job(request)) }

    static func job(_ request: Request) -> String { request.headers[.init("X-IAPCheck-Job")!] ?? "" }

    func open() async throws {
        // WAL with synchronous=NORMAL: a committed row survives the process being killed (what durable-ack checks);
        // only an OS crash or power loss can lose the last transactions. Use synchronous=FULL to cover those too.
        try await db.query("PRAGMA journal_mode=WAL", []) { _ in }
        try await db.query("PRAGMA synchronous=NORMAL", []) { _ in }
        try await db.query(
            "CREATE TABLE IF NOT EXISTS journal_v3 (seq INTEGER PRIMARY KEY, job TEXT NOT NULL, record TEXT NOT NULL)",
            []
        ) { _ in }
        // A database from before jobs: its journal is job "" (what a caller without the header gets), moved over in
        // one transaction so that nothing acknowledged is left behind.
        let old = Locked(false)
        try await db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'journal_v2'", []) { _ in
            old.withLock { $0 = true }
        }
        if old.value {
            try await db.query("BEGIN", []) { _ in }
            try await db.query(
                "INSERT INTO journal_v3 (job, record) SELECT '', record FROM journal_v2 ORDER BY seq", []
            ) { _ in }
            try await db.query("DROP TABLE journal_v2", []) { _ in }
            try await db.query("COMMIT", []) { _ in }
        }
        let rows = Locked<[String]>([])
        try await db.query("SELECT seq, job, record FROM journal_v3 ORDER BY seq", []) { row in
            let entry =
                "\(row.column("seq")?.integer ?? -1)\t\(row.column("job")?.string ?? "")\t"
                + (row.column("record")?.string ?? "")
            rows.withLock { $0.append(entry) }
        }
        // Replaying the journal rebuilds what was acknowledged; a row that cannot be read or applied means state
        // would be lost, so the backend refuses to start rather than answer from less than it acknowledged.
        for entry in rows.value {
            let parts = entry.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            let seq = parts[0], job = String(parts[1]), text = parts.count > 2 ? String(parts[2]) : ""
            guard let entry = JournalEntry(line: text) else {
                throw JournalError(message: "journal row \(seq) cannot be read: \(text.prefix(80))")
            }
            let validator = validator(job: job)
            do {
                switch entry {
                case .reset(let c):
                    try validator.reset(c)
                    state.withLock { $0.bundleId = c.catalog.bundleId }
                case .delivery(let d, let now): _ = try validator.deliver(d, now: now)
                }
            } catch {
                throw JournalError(message: "journal row \(seq) cannot be applied: \(error)")
            }
        }
    }

    /// Stores a journal entry (the format `iapcheck serve --journal` writes too) before the answer is sent.
    /// `truncate`: a reset, which forgets the job's earlier rows.
    func persist(_ entry: JournalEntry, job: String, truncate: Bool = false) async throws {
        let text = entry.line
        if truncate { try await db.query("DELETE FROM journal_v3 WHERE job = ?", [.text(job)]) { _ in } }
        if ackBeforePersist && !truncate {
            // The bug: remember it, write it with the next batch (after answering).
            let batch: [(String, String)] = state.withLock {
                $0.unsaved.append((job, text))
                guard $0.unsaved.count >= 8 else { return [] }
                let full = $0.unsaved
                $0.unsaved = []
                return full
            }
            for (j, t) in batch {
                try await db.query("INSERT INTO journal_v3 (job, record) VALUES (?, ?)", [.text(j), .text(t)]) { _ in }
            }
            return
        }
        try await db.query("INSERT INTO journal_v3 (job, record) VALUES (?, ?)", [.text(job), .text(text)]) { _ in }
    }

    /// Verifies and stores a delivery for the job and at the clock the request names.
    func deliver(_ d: SignedDelivery, for request: Request) async throws -> Response {
        switch try await verdict(d, for: request) {
        case .accepted:
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(staticString: #"{"accepted":true}"#)))
        case .rejected(let why): return Self.json(["accepted": false, "reason": why], status: .unprocessableContent)
        }
    }

    /// The verdict on a delivery, stored before it is returned.
    func verdict(_ d: SignedDelivery, for request: Request) async throws -> DeliveryVerdict {
        let clock = now(request), job = Self.job(request)
        let verdict = try validator(job: job).deliver(d, now: clock)
        try await persist(.delivery(d, now: clock), job: job)
        return verdict
    }

    static func json(_ object: [String: any Sendable], status: HTTPResponse.Status) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json<T: Encodable>(_ value: T) -> Response {
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// The entitlement logic behind one lock (Hummingbird serves requests concurrently): only reachable through it.
final class LockedValidator: Sendable {
    private let inner: Locked<any Validator>
    init(_ inner: sending any Validator) { self.inner = Locked(inner) }
    func reset(_ c: ValidatorConfig) throws { try inner.withLock { try $0.reset(c) } }
    func deliver(_ d: SignedDelivery, now: Millis) throws -> DeliveryVerdict {
        try inner.withLock { try $0.deliver(d, now: now) }
    }
    func entitlements(_ q: EntitlementQuery) throws -> EntitlementAnswer {
        try inner.withLock { try $0.entitlements(q) }
    }
}

struct JournalError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

struct AppTransactionBody: Decodable { let userId: String; let signedTransaction: String; let deviceTime: Millis? }
struct NotificationBody: Decodable { let signedPayload: String }
struct LegacyBody: Decodable { let userId: String; let responseBody: String }
struct ReconcileBody: Decodable { let originalTransactionId: String }
struct ReceiptBody: Decodable { let userId: String; let receiptData: String }

func body<T: Decodable>(_ request: Request, as: T.Type) async throws -> T {
    let buffer = try await request.body.collect(upTo: 4 << 20)
    return try JSONDecoder().decode(T.self, from: Data(buffer: buffer))
}

/// The backend's clock: the harness sets it in a header; otherwise the wall clock.
func now(_ request: Request) -> Millis {
    if let h = request.headers[.init("X-IAPCheck-Now")!], let v = Millis(h) { return v }
    return Millis(Date().timeIntervalSince1970 * 1000)
}

@main
struct ExampleBackend {
    static func main() async throws {
        let options = Options(CommandLine.arguments)
        if let name = options.mutant, Mutants.named(name) == nil {
            FileHandle.standardError.write(Data("no mutant named \(name)\n".utf8))
            exit(2)
        }
        // Everything that can fail comes before the database opens: a connection left unclosed traps on deinit.
        let store = try AppStoreClient(options.store)
        let db: SQLiteConnection = try await SQLiteConnection.open(
            storage: .file(path: options.database), logger: Logger(label: "example-backend"))
        let mutant = options.mutant
        let backend = Backend(
            db: db, ackBeforePersist: options.ackBeforePersist, store: store,
            makeLogic: { mutant.flatMap(Mutants.named)?.make() ?? ReferenceValidator() })
        do {
            try await backend.open()
        } catch {
            FileHandle.standardError.write(Data("example-backend: cannot open \(options.database): \(error)\n".utf8))
            exit(1)
        }

        let router = Router()
        registerDeliveryRoutes(router, backend, slowAckMs: options.slowAckMs)
        registerAppStoreRoutes(router, backend)
        registerAnswerRoutes(router, backend)
        registerReceiptsRoute(router, backend)

        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: options.port)))
        do {
            try await app.runService()  // returns on SIGTERM/SIGINT after a graceful shutdown
        } catch {
            // Most often the port is taken. Close the database first: an unclosed connection traps on deinit.
            FileHandle.standardError.write(
                Data("example-backend: cannot serve on 127.0.0.1:\(options.port): \(error)\n".utf8))
            try? await db.close()
            exit(1)
        }
        try await db.close()
    }
}
