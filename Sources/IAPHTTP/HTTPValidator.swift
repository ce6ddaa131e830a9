import Foundation
import IAPModel
import IAPValidatorAPI

/// A running backend checked over HTTP on loopback. A target file (`--validator http:TARGET.json`, see
/// `docs/http-target.md`) maps each operation to a route; the backend's clock is given in a header.
///
/// Verdicts: 2xx accepted, 4xx rejected (with the body's `reason`), anything else a validator failure. The client
/// is a small blocking HTTP/1.1 client with keep-alive (one connection, reconnected when the server closes it).
public class HTTPValidator: Validator {
    /// What the target declares it answers and which channels it takes (its target file's `answers`, `channels`;
    /// with an `answer` mapping, the fields it maps unless `answers` says otherwise).
    public var profile: ValidatorProfile { target.profile }

    /// Reads an answer body under `profile`: declared lists and fields strictly, the others not at all.
    static func answerDecoder(_ profile: ValidatorProfile) -> JSONDecoder {
        let d = JSONDecoder()
        d.userInfo[ValidatorProfile.codingKey] = profile
        return d
    }

    public struct Route: Sendable {
        public var method: String
        public var path: String
    }

    public struct Target: Sendable {
        public var host: String
        public var port: Int
        public var clockHeader: String
        public var routes: [String: Route]
        /// The mock App Store iapcheck starts for this backend (`store` in the target file), if any.
        public var store: StoreSettings?
        /// How iapcheck starts the backend itself (`start`), so the `kill` fault can kill and restart it.
        public var start: (command: String, readySeconds: Double)?
        /// What the backend answers and which channels it takes (`answers`, `channels`).
        public var profile: ValidatorProfile = .undeclared
        /// How its own entitlements response reads as an answer (`answer`); nil: it answers iapcheck's format.
        public var mapping: AnswerMapping?
        /// How many callers the backend takes at once (`--jobs` up to this). Above 1, every request carries
        /// ``jobHeader`` and the backend keeps one state per value of it (docs/http-target.md#concurrent-jobs).
        public var maxConcurrency = 1
        public static let operations = [
            "reset", "appTransaction", "notification", "apiSnapshot", "legacyReceipt", "entitlements",
            "reconcile", "receipt",
        ]
        /// Operations that only make sense when the backend calls the mock App Store.
        static let storeOperations: Set<String> = ["reconcile", "receipt"]

        public static func load(path: String) throws(ConfigError) -> Target {
            let data = try StrictJSON.readFile(path)
            let r = StrictJSON(file: path)
            let o = try r.root(data)
            var host = "127.0.0.1", port = 0
            if let base = o.string("baseURL") {
                let rest = base.hasPrefix("http://") ? String(base.dropFirst(7)) : ""
                let hostPort = rest.split(separator: "/").first.map(String.init) ?? ""
                let parts = hostPort.split(separator: ":")
                if parts.count == 2, let p = Int(parts[1]), p > 0, p < 65536 {
                    host = String(parts[0])
                    port = p
                } else {
                    r.problem(o.keyPath("baseURL"), "\"\(base)\" is not http://HOST:PORT")
                }
                if !["127.0.0.1", "localhost", "::1"].contains(host) {
                    r.problem(
                        o.keyPath("baseURL"),
                        "iapcheck sends traffic only to loopback addresses (127.0.0.1, localhost, ::1)")
                }
            }
            let clock = o.string("clockHeader", required: false) ?? "X-IAPCheck-Now"
            let concurrency = Int(o.int("maxConcurrency", required: false, range: 1...256) ?? 1)
            if concurrency > 1, o.has("store") {
                r.problem(
                    o.keyPath("maxConcurrency"),
                    "above 1 needs a target without a \"store\" section (the mock App Store keeps one state for all jobs)"
                )
            }
            let mapping = o.object("answer", required: false).map { AnswerMapping.parse($0, file: path) }
            let answers = o.strings("answers", required: false)
            let channels = o.strings("channels", required: false)
            var profile = ValidatorProfile.undeclared
            do {
                profile = try ValidatorProfile.parse(
                    answers: answers ?? mapping.map { $0.fields.map(\.rawValue) }, channels: channels, prefix: "")
            } catch {
                r.problem(error.message.hasPrefix("answers") ? "answers" : "channels", error.message)
            }
            if let mapping, answers != nil {
                let mapped = Set(mapping.fields)
                for f in profile.answers where !mapped.contains(f) {
                    r.problem(
                        "answers",
                        "\(f.rawValue) is declared but the answer mapping does not map it (it maps \(mapping.fields.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
            }
            var routes: [String: Route] = [:]
            if let rs = o.object("routes") {
                // With a store, the pull routes may replace the push routes (reconcile for apiSnapshot, receipt for
                // legacyReceipt); one of each pair is required. A channel the backend does not take needs no route.
                var optional = storeOperations
                if !profile.accepts(.app) { optional.insert("appTransaction") }
                if !profile.accepts(.notification) { optional.insert("notification") }
                if !profile.accepts(.api) { optional.insert("apiSnapshot") }
                if !profile.accepts(.legacy) { optional.insert("legacyReceipt") }
                if o.has("store") {
                    if rs.has("reconcile") { optional.insert("apiSnapshot") }
                    if rs.has("receipt") { optional.insert("legacyReceipt") }
                }
                for op in operations {
                    guard let ro = rs.object(op, required: !optional.contains(op)) else { continue }
                    let method = ro.choice("method", ["GET", "POST", "PUT"])
                    let path = ro.string("path")
                    ro.rejectUnknownKeys()
                    if let method, let path {
                        if !path.hasPrefix("/") { r.problem(ro.keyPath("path"), "must start with /") }
                        routes[op] = Route(method: method, path: path)
                    }
                }
                rs.rejectUnknownKeys()
            }
            var store: StoreSettings?
            if let so = o.object("store", required: false) {
                var settings = StoreSettings(port: 0)
                if let p = so.int("port", range: 1...65535) { settings.port = Int(p) }
                settings.sharedSecret = so.string("sharedSecret", required: false)
                if let k = so.object("apiKey", required: false) {
                    let keyId = k.string("keyId"), issuerId = k.string("issuerId"), file = k.string("privateKeyFile")
                    if let keyId, let issuerId, let file {
                        // Relative to the target file, so a target and its key travel together.
                        let resolved =
                            file.hasPrefix("/")
                            ? file
                            : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(file).path
                        if !FileManager.default.fileExists(atPath: resolved) {
                            r.problem(k.keyPath("privateKeyFile"), "no file at \(resolved)")
                        }
                        settings.apiKey = .init(keyId: keyId, issuerId: issuerId, privateKeyFile: resolved)
                    }
                    k.rejectUnknownKeys()
                }
                so.rejectUnknownKeys()
                store = settings
            }
            var start: (command: String, readySeconds: Double)?
            if let so = o.object("start", required: false) {
                let command = so.string("command")
                let ready = Double(so.int("readySeconds", required: false, range: 1...600) ?? 60)
                so.rejectUnknownKeys()
                if let command { start = (command, ready) }
            }
            if store == nil {
                for op in storeOperations.sorted() where routes[op] != nil {
                    r.problem(
                        o.keyPath("routes"),
                        "route \(op) needs a \"store\" section (the backend calls the mock App Store)")
                }
            }
            o.rejectUnknownKeys()
            try r.finish()
            return Target(
                host: host == "localhost" ? "127.0.0.1" : host, port: port, clockHeader: clock, routes: routes,
                store: store, start: start, profile: profile, mapping: mapping, maxConcurrency: concurrency)
        }
    }

    public let target: Target
    public let timeout: TimeInterval
    public let name: String
    let client: LoopbackHTTPClient
    /// The mock App Store the backend talks to, when the target file has a `store` section.
    public let store: (any AppStoreBridge)?
    /// `reset` (the only fault this class injects itself; the store and `ManagedHTTPValidator` take the others).
    public let faults: FaultProfile
    /// This caller's job (`--jobs`): sent in ``jobHeader`` on every request when the target takes more than one.
    public var job = 0
    public static let jobHeader = "X-IAPCheck-Job"

    /// The job number of the `made`-th worker (from 0) a run of `jobs` jobs asks for: 1…jobs−1 in turn (job 0 is the
    /// first validator). A run asks for jobs−1 workers in a row, so its numbers are distinct whichever worker it
    /// starts at (certify starts one run per property).
    public static func jobNumber(ofWorker made: Int, jobs: Int) -> Int { 1 + made % max(1, jobs - 1) }
    var deliveries = 0
    /// How many times the `reset` fault dropped an answer.
    public private(set) var resetsInjected = 0
    var transcript: [String] { client.transcript }

    public init(
        target: Target, name: String, timeout: TimeInterval = 5, store: (any AppStoreBridge)? = nil,
        faults: FaultProfile = FaultProfile()
    ) {
        self.target = target
        self.name = name
        self.timeout = timeout
        self.store = store
        self.faults = faults
        self.client = LoopbackHTTPClient(host: target.host, port: target.port, timeout: timeout)
    }

    /// The validator for a target: one that starts (and can kill and restart) the backend when the target says how.
    public static func make(
        target: Target, name: String, timeout: TimeInterval, store: (any AppStoreBridge)?, faults: FaultProfile
    ) throws(ValidatorFailure) -> HTTPValidator {
        if let start = target.start {
            let backend = try ManagedBackend.shared(
                command: start.command, host: target.host, port: target.port, readySeconds: start.readySeconds)
            return ManagedHTTPValidator(
                target: target, name: name, timeout: timeout, store: store, faults: faults, backend: backend)
        }
        return HTTPValidator(target: target, name: name, timeout: timeout, store: store, faults: faults)
    }

    /// A delivery request, with the `reset` fault: every n-th time the answer is lost on a dropped connection and
    /// the request goes again on a new one.
    func post(_ op: String, body: Data, now: Millis) throws(ValidatorFailure) -> (Int, Data) {
        deliveries += 1
        if let n = faults.resetEvery, deliveries % n == 0 {
            _ = try send(op, path: path(op), body: body, now: now)
            client.note("✕ connection dropped before the answer was read (fault: reset); sending again")
            resetsInjected += 1
            client.close()
        }
        return try send(op, path: path(op), body: body, now: now)
    }

    /// One request to the backend, failures turned into validator failures with the transcript.
    func send(_ op: String, path: String, body: Data?, now: Millis?) throws(ValidatorFailure) -> (Int, Data) {
        guard let route = target.routes[op] else {
            throw ValidatorFailure(.protocolViolation, "the target file has no route for \(op)")
        }
        var headers: [(String, String)] = []
        if let now { headers.append((target.clockHeader, String(now))) }
        if target.maxConcurrency > 1 { headers.append((Self.jobHeader, String(job))) }
        do {
            return try client.request(route.method, path, headers: headers, body: body)
        } catch {
            switch error.kind {
            case .unavailable:
                throw ValidatorFailure(
                    .unavailable, "cannot connect to http://\(target.host):\(target.port) (is the backend running?)",
                    transcript: transcript)
            case .timedOut: throw ValidatorFailure(.timedOut, "\(op): \(error.message)", transcript: transcript)
            case .closed: throw ValidatorFailure(.crashed, "\(op): \(error.message)", transcript: transcript)
            case .malformed: throw ValidatorFailure(.badAnswer, "\(op): \(error.message)", transcript: transcript)
            }
        }
    }

    static let encoder = JSONFormat.compact()

    func encode<T: Encodable>(_ v: T) -> Data { (try? Self.encoder.encode(v)) ?? Data() }

    /// Strings that need no JSON escaping (JWS compact serializations, UUIDs): the hot path writes them directly.
    static func plain(_ s: String) -> Bool {
        s.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
                || b == 0x2E || b == 0x3D || b == 0x2B || b == 0x2F
        }
    }

    public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        store?.reset(config)
        let (status, body) = try send(
            "reset", path: target.routes["reset"]?.path ?? "/", body: encode(config), now: nil)
        guard (200..<300).contains(status) else {
            throw ValidatorFailure(
                .badAnswer, "reset answered HTTP \(status): \(String(decoding: body.prefix(200), as: UTF8.self))",
                transcript: transcript)
        }
    }

    struct Reason: Decodable { let reason: String? }

    /// The JSON bodies the routes receive (docs/http-target.md).
    struct AppTransactionBody: Codable { let userId: String; let signedTransaction: String; let deviceTime: Millis? }
    struct NotificationBody: Codable { let signedPayload: String }
    struct LegacyBody: Codable { let userId: String; let responseBody: String }

    struct ReconcileBody: Codable { let originalTransactionId: String }
    struct ReceiptBody: Codable { let userId: String; let receiptData: String }

    public func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let op: String, status: Int, reply: Data
        switch delivery {
        case let .appTransaction(userId, jws, deviceTime):
            op = "appTransaction"
            let body =
                Self.plain(userId) && Self.plain(jws)
                ? Data(
                    #"{"userId":"\#(userId)","signedTransaction":"\#(jws)","deviceTime":\#(deviceTime.map(String.init) ?? "null")}"#
                        .utf8)
                : encode(AppTransactionBody(userId: userId, signedTransaction: jws, deviceTime: deviceTime))
            (status, reply) = try post(op, body: body, now: now)
        case .notification(let signedPayload):
            op = "notification"
            let body =
                Self.plain(signedPayload)
                ? Data(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
                : encode(NotificationBody(signedPayload: signedPayload))
            if let store {
                // The mock App Store posts it to the webhook, retrying on 5xx and timeouts on Apple's schedule.
                (status, reply) = try store.postNotification(signedPayload, now: now) {
                    (at: Millis) throws(ValidatorFailure) -> (Int, Data) in
                    try self.post(op, body: body, now: at)
                }
            } else {
                (status, reply) = try post(op, body: body, now: now)
            }
        case let .apiSnapshot(otid, history, statuses):
            if let store, target.routes["reconcile"] != nil {
                // The backend fetches the chain from the mock App Store's Server API itself.
                op = "reconcile"
                let undo = store.publish(originalTransactionId: otid, history: history, statuses: statuses)
                (status, reply) = try post(op, body: encode(ReconcileBody(originalTransactionId: otid)), now: now)
                // A refused answer (a forged one, for a correct backend) must not stay what the API serves: later
                // lookups of these transactions get what the store had before.
                if (400..<500).contains(status) { undo() }
            } else {
                op = "apiSnapshot"
                (status, reply) = try post(op, body: encode(delivery), now: now)
            }
        case let .legacyReceipt(userId, responseBody):
            if let store, target.routes["receipt"] != nil {
                // The backend sends the receipt to the mock App Store's verifyReceipt.
                op = "receipt"
                let receiptData = store.registerReceipt(responseBody: responseBody)
                (status, reply) = try post(
                    op, body: encode(ReceiptBody(userId: userId, receiptData: receiptData)), now: now)
            } else {
                op = "legacyReceipt"
                (status, reply) = try post(
                    op, body: encode(LegacyBody(userId: userId, responseBody: responseBody)), now: now)
            }
        }
        switch status {
        case 200..<300: return .accepted
        case 400..<500:
            return .rejected(reason: (try? JSONDecoder().decode(Reason.self, from: reply).reason) ?? "HTTP \(status)")
        default:
            throw ValidatorFailure(
                .badAnswer, "HTTP \(status) for \(op): \(String(decoding: reply.prefix(200), as: UTF8.self))",
                transcript: transcript)
        }
    }

    func path(_ op: String) -> String { target.routes[op]?.path ?? "/" }

    public func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        let template = target.routes["entitlements"]?.path ?? "/"
        let path = template.replacingOccurrences(of: "{userId}", with: query.userId).replacingOccurrences(
            of: "{at}", with: String(query.at))
        let (status, body) = try send("entitlements", path: path, body: nil, now: query.at)
        guard status == 200 else {
            throw ValidatorFailure(
                .badAnswer,
                "entitlements answered HTTP \(status): \(String(decoding: body.prefix(200), as: UTF8.self))",
                transcript: transcript)
        }
        let a: EntitlementAnswer
        do {
            if let mapping = target.mapping {
                do {
                    a = try mapping.answer(from: body, at: query.at)
                } catch {
                    // The target file describes another response than the backend gives: fix the file, not the backend.
                    throw ValidatorFailure(.misconfigured, error.message, transcript: transcript)
                }
            } else {
                a = try Self.answerDecoder(profile).decode(EntitlementAnswer.self, from: body)
            }
        } catch let e as ValidatorFailure {
            throw e
        } catch {
            throw ValidatorFailure(
                .badAnswer,
                "the entitlements body is not an answer (\(ValidatorFailure.decodingProblem(error, in: body))): \(String(decoding: body.prefix(200), as: UTF8.self))",
                transcript: transcript)
        }
        let answer = a.sorted
        if let problem = answer.problems.first {
            throw ValidatorFailure(.badAnswer, "malformed answer: \(problem)", transcript: transcript)
        }
        return answer
    }
}
