import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

/// A running backend checked over HTTP on loopback. A target file (`--validator http:TARGET.json`, see
/// `docs/http-target.md`) maps each operation to a route and its request shape; the backend's clock is given in a
/// header or set under libfaketime.
///
/// Verdicts: by default 2xx accepted, 4xx rejected (with the body's `reason`), anything else a validator failure;
/// a route may name its own statuses and reason pointer. The client
/// is a small blocking HTTP/1.1 client with keep-alive (one connection, reconnected when the server closes it).
public class HTTPValidator: RaceableValidator {
    /// What the target declares it answers and which channels it takes (its target file's `answers`, `channels`;
    /// with an `answer` mapping, the fields it maps unless `answers` says otherwise).
    public var profile: ValidatorProfile { target.profile }

    /// Reads an answer body under `profile`: declared lists and fields strictly, the others not at all.
    static func answerDecoder(_ profile: ValidatorProfile) -> JSONDecoder {
        let d = JSONDecoder()
        d.userInfo[ValidatorProfile.codingKey] = profile
        return d
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
    /// A `faketime` backend's clock for a whole load run: one clock for all the workers, so it stands still at this
    /// instant (after every artifact's own) instead of moving per request; questions are asked at it.
    public var frozenClock: Millis?
    /// Sees every request as it is sent (`send --dry-run`, `--format curl`).
    public var recorder: ((SentRequest) -> Void)?
    /// Requests go to ``recorder`` only and are answered as accepted: nothing reaches the backend (`send --dry-run`).
    public var dryRun = false
    private var frozenClockSet = false
    /// Whether the backend reads its clock from libfaketime (`"clock": "faketime"`).
    public var hasFakeClock: Bool { target.clock == .faketime }
    /// Whether the backend reads the real clock, which iapcheck cannot set (`"clock": "wall"`).
    public var hasWallClock: Bool { target.clock == .wall }
    public static let jobHeader = "X-IAPCheck-Job"

    /// The job number of the `made`-th worker (from 0) a run of `jobs` jobs asks for: 1…jobs−1 in turn (job 0 is the
    /// first validator). A run asks for jobs−1 workers in a row, so its numbers are distinct whichever worker it
    /// starts at (certify starts one run per property).
    public static func jobNumber(ofWorker made: Int, jobs: Int) -> Int { 1 + made % max(1, jobs - 1) }
    var deliveries = 0
    /// How many times the `reset` fault dropped an answer.
    public private(set) var resetsInjected = 0
    var transcript: [String] { client.transcript }
    /// The last request (`POST /purchases`) and its reply's status (nil when none came): `iapcheck doctor` names them.
    public private(set) var lastExchange: (request: String, status: Int?)?

    public init(
        target: Target, name: String, timeout: TimeInterval = 5, store: (any AppStoreBridge)? = nil,
        faults: FaultProfile = FaultProfile()
    ) {
        self.target = target
        self.name = name
        self.timeout = timeout
        self.store = store
        self.faults = faults
        self.client = LoopbackHTTPClient(host: target.connectHost, port: target.port, timeout: timeout)
    }

    /// The validator for a target: one that starts (and can kill and restart) the backend when the target says how.
    public static func make(
        target: Target, name: String, timeout: TimeInterval, store: (any AppStoreBridge)?, faults: FaultProfile
    ) throws(ValidatorFailure) -> HTTPValidator {
        if let start = target.start {
            let backend = try ManagedBackend.shared(
                command: start.command, host: target.connectHost, port: target.port, readySeconds: start.readySeconds,
                fakeClock: target.clock == .faketime)
            return ManagedHTTPValidator(
                target: target, name: name, timeout: timeout, store: store, faults: faults, backend: backend)
        }
        return HTTPValidator(target: target, name: name, timeout: timeout, store: store, faults: faults)
    }

    /// A delivery request, with the `reset` fault: every n-th time the answer is lost on a dropped connection and
    /// the request goes again on a new one.
    func post(_ op: String, _ values: RequestValues, body: @autoclosure () -> Data, now: Millis)
        throws(ValidatorFailure)
        -> (Int, Data)
    {
        deliveries += 1
        if let n = faults.resetEvery, deliveries % n == 0 {
            _ = try send(op, values, body: body(), now: now)
            client.note("✕ connection dropped before the answer was read (fault: reset); sending again")
            resetsInjected += 1
            client.close()
        }
        return try send(op, values, body: body(), now: now)
    }

    /// One request to the backend as its route says (iapcheck's own body unless the route has a template), with the
    /// clock set for `now`; failures turned into validator failures with the transcript.
    func send(_ op: String, _ values: RequestValues, body: @autoclosure () -> Data?, now: Millis?)
        throws(ValidatorFailure) -> (Int, Data)
    {
        guard let route = target.routes[op] else {
            throw ValidatorFailure(.protocolViolation, "the target file has no route for \(op)")
        }
        var headers: [(String, String)] = []
        if let now {
            switch target.clock {
            case .header(let name): headers.append((name, String(now)))
            case .faketime where dryRun: break
            case .faketime:
                // Under load the clock stands at one instant for the whole run (one clock, many callers): set once.
                if let frozen = frozenClock {
                    if !frozenClockSet {
                        try setClock(frozen)
                        frozenClockSet = true
                    }
                } else {
                    try setClock(now)
                }
            case .wall: break
            }
        }
        if target.maxConcurrency > 1 { headers.append((Self.jobHeader, String(job))) }
        let path = route.pathTemplate.placeholders.isEmpty && route.query.isEmpty ? route.path : route.target(values)
        var payload: Data?
        var contentType = "application/json"
        if let (data, type) = route.renderedBody(values) {
            payload = data
            contentType = type
        } else {
            payload = body()
        }
        for (name, value) in route.renderedHeaders(values) {
            if name.lowercased() == "content-type" { contentType = value } else { headers.append((name, value)) }
        }
        lastExchange = ("\(route.method) \(path.prefix(120))", nil)
        if let recorder {
            recorder(
                SentRequest(
                    method: route.method, url: "http://\(target.urlHost):\(target.port)\(path)",
                    headers: headers + (payload == nil ? [] : [("Content-Type", contentType)]), body: payload))
        }
        if dryRun { return (route.acceptedStatus, Data("{}".utf8)) }
        do {
            let reply = try client.request(
                route.method, path, headers: headers, body: payload, contentType: contentType)
            lastExchange?.status = reply.0
            return reply
        } catch {
            switch error.kind {
            case .unavailable:
                throw ValidatorFailure(
                    .unavailable, "cannot connect to http://\(target.urlHost):\(target.port) (is the backend running?)",
                    transcript: transcript)
            case .timedOut: throw ValidatorFailure(.timedOut, "\(op): \(error.message)", transcript: transcript)
            case .closed: throw ValidatorFailure(.crashed, "\(op): \(error.message)", transcript: transcript)
            case .malformed: throw ValidatorFailure(.badAnswer, "\(op): \(error.message)", transcript: transcript)
            }
        }
    }

    /// A client of the same backend and state (target, job, mock App Store, clock), on connections of its own that
    /// close after every request: one side of the parallel-delivery race.
    public func raceCaller() -> any Validator {
        let t = sibling()
        t.job = job
        t.client.oneRequestPerConnection = true
        return t
    }

    public func releaseConnection() { client.close() }

    /// A new validator of the same backend, with no faults of its own.
    func sibling() -> HTTPValidator { HTTPValidator(target: target, name: name, timeout: timeout, store: store) }

    /// Sets the backend's clock to `now` before a request (a `faketime` clock; ``ManagedHTTPValidator`` has one).
    func setClock(_ now: Millis) throws(ValidatorFailure) {
        throw ValidatorFailure(.misconfigured, "a faketime clock needs a backend iapcheck starts (\"start\")")
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

    /// Without a `reset` route the backend keeps its state, and every case runs in ids of its own.
    public var isolation: CaseIsolation { target.resets ? .reset : .namespace }

    public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        // Every case starts here: its failure report shows its own requests, not a shrink's earlier attempts.
        client.forgetTranscript()
        store?.reset(config)
        guard target.resets else { return }
        var values = RequestValues([.config: .json(encode(config))])
        values[.job] = .string(String(job))
        let (status, body) = try send("reset", values, body: encode(config), now: nil)
        guard (200..<300).contains(status) else {
            throw ValidatorFailure(
                .badAnswer, "reset answered HTTP \(status): \(AnswerMapping.quoted(body, first: 200))",
                transcript: transcript)
        }
    }

    /// The JSON bodies the routes receive (docs/http-target.md).
    struct AppTransactionBody: Codable { let userId: String; let signedTransaction: String; let deviceTime: Millis? }
    struct NotificationBody: Codable { let signedPayload: String }
    struct LegacyBody: Codable { let userId: String; let responseBody: String }

    struct ReconcileBody: Codable { let originalTransactionId: String }

    /// The transactionId and originalTransactionId a JWS's payload claims, unverified (empty where it claims none).
    static func transactionIds(in jws: String) -> (String, String) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]),
            let o = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        else { return ("", "") }
        return (o["transactionId"] as? String ?? "", o["originalTransactionId"] as? String ?? "")
    }
    struct ReceiptBody: Codable { let userId: String; let receiptData: String }

    public func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let op: String, status: Int, reply: Data
        var values = RequestValues([.now: .time(now), .job: .string(String(job))])
        switch delivery {
        case let .appTransaction(userId, jws, deviceTime):
            op = "appTransaction"
            values[.userId] = .string(userId)
            values[.signedTransaction] = .string(jws)
            values[.deviceTime] = deviceTime.map { .time($0) } ?? .null
            if target.routes[op]?.isPlain == false {
                // An app that posts the id alone, for a backend that asks Apple: read from the token, unverified.
                let ids = Self.transactionIds(in: jws)
                (values[.transactionId], values[.originalTransactionId]) = (.string(ids.0), .string(ids.1))
            }
            (status, reply) = try post(
                op, values,
                body: Self.plain(userId) && Self.plain(jws)
                    ? Data(
                        #"{"userId":"\#(userId)","signedTransaction":"\#(jws)","deviceTime":\#(deviceTime.map(String.init) ?? "null")}"#
                            .utf8)
                    : encode(AppTransactionBody(userId: userId, signedTransaction: jws, deviceTime: deviceTime)),
                now: now)
        case .notification(let signedPayload):
            op = "notification"
            values[.signedPayload] = .string(signedPayload)
            let body =
                Self.plain(signedPayload)
                ? Data(#"{"signedPayload":"\#(signedPayload)"}"#.utf8)
                : encode(NotificationBody(signedPayload: signedPayload))
            if let store {
                // The mock App Store posts it to the webhook, retrying on 5xx and timeouts on Apple's schedule.
                (status, reply) = try store.postNotification(signedPayload, now: now) {
                    (at: Millis) throws(ValidatorFailure) -> (Int, Data) in
                    var v = values
                    v[.now] = .time(at)
                    return try self.post(op, v, body: body, now: at)
                }
            } else {
                (status, reply) = try post(op, values, body: body, now: now)
            }
        case let .apiSnapshot(otid, history, statuses):
            values[.originalTransactionId] = .string(otid)
            if let store, target.routes["reconcile"] != nil {
                // The backend fetches the chain from the mock App Store's Server API itself.
                op = "reconcile"
                let undo = store.publish(originalTransactionId: otid, history: history, statuses: statuses)
                (status, reply) = try post(
                    op, values, body: encode(ReconcileBody(originalTransactionId: otid)), now: now)
                // A refused answer (a forged one, for a correct backend) must not stay what the API serves: later
                // lookups of these transactions get what the store had before.
                if target.routes[op]?.refused.contains(status) == true { undo() }
            } else {
                op = "apiSnapshot"
                let body = encode(delivery)
                if let inner = Self.member("apiSnapshot", of: body) { values[.apiSnapshot] = .json(inner) }
                (status, reply) = try post(op, values, body: body, now: now)
            }
        case let .legacyReceipt(userId, responseBody):
            values[.userId] = .string(userId)
            if let store, target.routes["receipt"] != nil {
                // The backend sends the receipt to the mock App Store's verifyReceipt.
                op = "receipt"
                let receiptData = store.registerReceipt(responseBody: responseBody)
                values[.receiptData] = .string(receiptData)
                (status, reply) = try post(
                    op, values, body: encode(ReceiptBody(userId: userId, receiptData: receiptData)), now: now)
            } else {
                op = "legacyReceipt"
                values[.responseBody] = .string(responseBody)
                (status, reply) = try post(
                    op, values, body: encode(LegacyBody(userId: userId, responseBody: responseBody)), now: now)
            }
        }
        guard let verdict = target.routes[op]?.verdict(status: status, body: reply) else {
            throw Self.unmappedStatus(status, op: op, reply: reply, transcript: transcript)
        }
        return verdict
    }

    /// A delivery's status that the route's `accepted` and `refused` do not list. A 4xx is how a backend refuses
    /// (413 for a body over its size limit, 422 for a bad token): the target file does not say so yet, a
    /// configuration error naming the route and the status. Anything else (a 5xx, a redirect) is the backend's.
    static func unmappedStatus(_ status: Int, op: String, reply: Data, transcript: [String]) -> ValidatorFailure {
        let message =
            "HTTP \(status) for \(op), neither an accepted nor a refused status of its route: \(AnswerMapping.quoted(reply, first: 200))"
        guard (400..<500).contains(status) else { return ValidatorFailure(.badAnswer, message, transcript: transcript) }
        return ValidatorFailure(
            .misconfigured, message, transcript: transcript,
            fix:
                "add \(status) to `refused` of \(op) in the target file (\"refused\": [..., \(status)]) if the backend refuses with it"
        )
    }

    /// The JSON text of `key`'s value in a one-member object (`{"apiSnapshot": {…}}`).
    static func member(_ key: String, of data: Data) -> Data? {
        guard let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let v = o[key] else {
            return nil
        }
        return try? JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    public var settleSeconds: Double { Double(target.settleMs ?? 0) / 1000 }

    public func verifiesLater(_ channel: DeliveryChannel) -> Bool {
        let ops: [String] =
            switch channel {
            case .app: ["appTransaction"]
            case .notification: ["notification"]
            case .api: ["apiSnapshot", "reconcile"]
            case .legacy: ["legacyReceipt", "receipt"]
            }
        return ops.contains { target.routes[$0]?.verifiesLater == true }
            || (channel == .app && appRouteLeavesTheTokenOut)
    }

    public func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        let values = RequestValues([
            .userId: .string(query.userId), .at: .time(query.at), .job: .string(String(job)),
        ])
        let (status, body) = try send("entitlements", values, body: nil, now: query.at)
        // A status the target says means "holds nothing" (an account the backend never saw) is an empty answer.
        if target.routes["entitlements"]?.nothing?.contains(status) == true { return EntitlementAnswer() }
        guard status == 200 else {
            throw ValidatorFailure(
                .badAnswer,
                "entitlements answered HTTP \(status): \(AnswerMapping.quoted(body, first: 200))",
                transcript: transcript,
                fix: status == 404 || status == 204
                    ? "if \(status) means this user holds nothing (an account the backend never saw), add \"nothing\": [\(status)] to routes.entitlements of the target file"
                    : nil)
        }
        let a: EntitlementAnswer
        do {
            if let mapping = target.mapping {
                do {
                    a = try mapping.answer(from: body, at: query.at)
                } catch {
                    if error.isWrongAnswer { throw ValidatorFailure(.badAnswer, error.message, transcript: transcript) }
                    // The target file describes another response than the backend gives: fix the file, not the backend.
                    throw ValidatorFailure(.misconfigured, error.message, transcript: transcript, fix: error.fix)
                }
            } else {
                a = try Self.answerDecoder(profile).decode(EntitlementAnswer.self, from: body)
            }
        } catch let e as ValidatorFailure {
            throw e
        } catch {
            throw ValidatorFailure(
                .badAnswer,
                "the entitlements body is not an answer (\(ValidatorFailure.decodingProblem(error, in: body))): \(AnswerMapping.quoted(body, first: 200))",
                transcript: transcript)
        }
        let answer = a.sorted
        if let problem = answer.problems.first {
            throw ValidatorFailure(.badAnswer, "malformed answer: \(problem)", transcript: transcript)
        }
        return answer
    }
}
