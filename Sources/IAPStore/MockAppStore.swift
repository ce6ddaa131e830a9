import Crypto
import Foundation
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSupport
import IAPValidatorAPI

/// A mock App Store on loopback, serving a scenario's data the way Apple's servers do (docs/mock-app-store.md):
///
/// - App Store Server API: Get Transaction History v2 (paged by `revision`), Get All Subscription Statuses, Get
///   Transaction Info, Get Notification History, Request a Test Notification and Get Test Notification Status, each
///   behind the API's JWT check (ES256 with the configured key, `iss`, `bid`, `aud` "appstoreconnect-v1", `exp` at
///   most an hour after `iat`, or after now without one as Apple's libraries sign, and not past) — 401 otherwise;
/// - legacy `/verifyReceipt` and `/sandbox/verifyReceipt` with Apple's statuses (21007 sandbox receipt sent to
///   production, 21008 the reverse, 21004 wrong shared secret, 21003 unknown receipt, 21002 malformed request);
/// - App Store Server Notifications: posts to the backend's webhook and retries on a 5xx, a timeout or a dropped
///   connection at 1, 12, 24, 48 and 72 hours (Apple's production schedule) — in virtual time: each attempt carries
///   its instant in the clock header, and the real wait is compressed.
///
/// The harness publishes what Apple would answer just before it makes the backend ask (see `HTTPValidator`).
///
/// Sendable: the route state (chains, answers, posts, faults) is behind `state`; `settings` is immutable; `port` and
/// the public configuration (`realSecondsPerRetryHour`, `webhook`, the TEST signer) are set before the store serves
/// and only read afterwards.
public final class MockAppStore: AppStoreBridge, @unchecked Sendable {
    public let settings: StoreSettings
    public private(set) var port: Int = 0
    /// Real seconds waited per virtual hour between webhook attempts.
    public var realSecondsPerRetryHour: Double = 0.002
    /// Signs the TEST notification for Request a Test Notification; without it that endpoint answers 500.
    public var testNotificationSigner: (@Sendable (_ now: Millis, _ catalog: Catalog) -> String)?
    /// Where Request a Test Notification posts: (host, port, path, clock header).
    public var webhook: (host: String, port: Int, path: String, clockHeader: String)?

    /// Faults the store injects: `webhook5xxEvery`, `storeDelayMillis`.
    public var faults: FaultProfile {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    let state = Locked(State())
    let apiKey: P256.Signing.PublicKey?

    /// What the routes read and write.
    struct State {
        var faults = FaultProfile()
        /// Notifications posted (fault `webhook-5xx` counts them).
        var posted = 0
        var bundleId: String?
        var catalog: Catalog?
        var chains: [String: Chain] = [:]
        var signedTransactions: [String: String] = [:]
        var receipts: [String: (body: String, sandbox: Bool)] = [:]
        var notifications: [SentNotification] = []
        var testTokens: [String: Int] = [:]
        var servedCounts: [String: Int] = [:]
        var recovered = 0
        /// Answers for ids no reconciliation published (``serve(_:)``), made on first request and kept until the
        /// next `serve`, by every transaction id they hold.
        var source: APIAnswerSource?
        var sourced: [String: Chain] = [:]
        var sourcedTransactions: [String: String] = [:]
        /// Signed facts served from `sourced` since ``takeServed()``.
        var served: [String] = []
        /// What reconciliations published while a source answered: taken back at the next `serve`.
        var publishedWithSource: [Replaced] = []
    }

    /// One published answer: the customer's history pages, statuses and refund history pages. Every transaction
    /// id in the history finds it.
    struct Chain {
        var history: [HistoryResponse]
        var statuses: StatusResponse?
        var refunds: [RefundHistoryResponse] = []
    }

    struct SentNotification {
        var signedPayload: String
        var signedDate: Millis
        var notificationType: String
        var attempts: [SendAttemptItem]
        /// The notification's transaction and its chain, for Get Notification History's `transactionId` filter.
        var transactionIds: Set<String> = []
    }

    public enum StartError: Error, CustomStringConvertible {
        case key(String, String)
        case listen(Int, String)
        public var description: String {
            switch self {
            case let .key(file, why): "\(file): not a P-256 private key in PKCS#8 PEM (.p8): \(why)"
            case let .listen(port, why): "the mock App Store cannot listen on 127.0.0.1:\(port): \(why)"
            }
        }
    }

    public init(settings: StoreSettings) throws {
        self.settings = settings
        if let k = settings.apiKey {
            do {
                let pem = try String(contentsOfFile: k.privateKeyFile, encoding: .utf8)
                apiKey = try P256.Signing.PrivateKey(pemRepresentation: pem).publicKey
            } catch {
                throw StartError.key(k.privateKeyFile, "\(error)")
            }
        } else {
            apiKey = nil
        }
    }

    /// The stores started in this process, by port.
    static let running = Locked<[Int: MockAppStore]>([:])

    /// The store listening on `settings.port` in this process, started on first use (one per port, shared by the
    /// load driver's workers).
    public static func shared(_ settings: StoreSettings) throws -> MockAppStore {
        try running.withLock { started in
            if let s = started[settings.port], s.settings == settings { return s }
            let s = try MockAppStore(settings: settings)
            try s.start()
            started[s.port] = s
            return s
        }
    }

    /// Starts listening (port 0 picks a free one; see `port`) and returns once the socket is bound.
    public func start() throws {
        let routes = makeRoutes()
        let server: LoopbackHTTPServer
        do {
            server = try LoopbackHTTPServer(port: settings.port) { request in routes.answer(request) }
        } catch {
            throw StartError.listen(settings.port, error.description)
        }
        server.start()
        port = server.port
    }

    // MARK: AppStoreBridge

    public func reset(_ config: ValidatorConfig) {
        state.withLock {
            $0.bundleId = config.catalog.bundleId
            $0.catalog = config.catalog
            $0.notifications = []
        }
    }

    /// What a publish replaced.
    struct Replaced: Sendable {
        var chains: [String: Chain?]
        var signedTransactions: [String: String?]
    }

    /// Serves the chain from now on; the function returned puts back what it replaced (an answer the backend
    /// refused, a forged one, is not what the API says afterwards).
    @discardableResult
    public func publish(originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?)
        -> @Sendable () -> Void
    {
        let (chain, byId) = Self.chain(originalTransactionId, history: history, statuses: statuses)
        let done = state.withLock { state in
            var replaced = Replaced(
                chains: [originalTransactionId: state.chains[originalTransactionId]], signedTransactions: [:])
            state.chains[originalTransactionId] = chain
            for (id, jws) in byId {
                replaced.chains[id] = state.chains[id]
                replaced.signedTransactions[id] = state.signedTransactions[id]
                state.chains[id] = chain
                state.signedTransactions[id] = jws
            }
            if state.source != nil { state.publishedWithSource.append(replaced) }
            return replaced
        }
        return { [self] in self.restore(done) }
    }

    /// The answers a customer's history makes, and its signed transactions by id: Get Refund History is the same
    /// customer's revoked transactions, ascending by revocation date, paged at 20.
    static func chain(_ originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?)
        -> (Chain, [String: String])
    {
        var byId: [String: String] = [:]
        var refunded: [(date: Millis, id: String, jws: String)] = []
        for page in history {
            for jws in page.signedTransactions {
                guard let c = Self.claims(jws, as: TransactionClaims.self) else { continue }
                byId[c.transactionId] = jws
                if let d = c.revocationDate { refunded.append((d, c.transactionId, jws)) }
            }
        }
        refunded.sort { ($0.date, $0.id) < ($1.date, $1.id) }
        let size = HistoryResponse.pageSize
        var refunds: [RefundHistoryResponse] = []
        var i = 0
        repeat {
            let chunk = refunded[min(i, refunded.count)..<min(i + size, refunded.count)].map(\.jws)
            refunds.append(
                RefundHistoryResponse(
                    signedTransactions: chunk, revision: "refunds-\(originalTransactionId)-\(refunds.count + 1)",
                    hasMore: i + size < refunded.count))
            i += size
        } while i < refunded.count
        return (Chain(history: history, statuses: statuses, refunds: refunds), byId)
    }

    func restore(_ r: Replaced) {
        state.withLock { state in
            for (k, v) in r.chains { state.chains[k] = v }
            for (k, v) in r.signedTransactions { state.signedTransactions[k] = v }
        }
    }

    public func registerReceipt(responseBody: String) -> String {
        let digest = SHA256.hash(data: Data(responseBody.utf8)).prefix(24)
        let token = Data(Array("iapcheck-receipt:".utf8) + Array(digest)).base64EncodedString()
        let environment = (try? JSONDecoder().decode(EnvironmentOnly.self, from: Data(responseBody.utf8)))?.environment
        state.withLock { $0.receipts[token] = (responseBody, environment == "Sandbox") }
        return token
    }

    public func postNotification(
        _ signedPayload: String, now: Millis,
        send: (Millis) throws(ValidatorFailure) -> (Int, Data)
    ) throws(ValidatorFailure) -> (Int, Data) {
        let claims = Self.claims(signedPayload, as: NotificationClaims.self)
        var sent = SentNotification(
            signedPayload: signedPayload, signedDate: claims?.signedDate ?? now,
            notificationType: claims?.notificationType ?? "", attempts: [])
        if let nested = claims?.data?.signedTransactionInfo, let t = Self.claims(nested, as: ChainClaims.self) {
            sent.transactionIds = Set([t.transactionId, t.originalTransactionId].compactMap { $0 })
        }
        // Apple retries production notifications only (docs/semantics.md#delivery-and-retries); a sandbox one gets one attempt.
        let retries = state.withLock { $0.catalog?.environment == .sandbox } ? 0 : NotificationRetry.delaysHours.count
        defer { state.withLock { $0.notifications.append(sent) } }
        // Fault webhook-5xx: this notification's first attempt reaches the backend, but a gateway answers 503.
        let lost: Bool =
            state.withLock { state in
                state.posted += 1
                return state.faults.webhook5xxEvery.map { state.posted % $0 == 0 } ?? false
            } && retries > 0
        var at = now
        var lastFailure: ValidatorFailure?
        var lastReply: (Int, Data)?
        for attempt in 0...retries {
            if attempt > 0 {
                let hours = NotificationRetry.delaysHours[attempt - 1]
                at += hours * 3_600_000
                Thread.sleep(forTimeInterval: realSecondsPerRetryHour * Double(hours))
            }
            do {
                var reply = try send(at)
                if lost && attempt == 0 && (200..<300).contains(reply.0) {
                    reply = (503, Data("gateway: backend answer lost (fault webhook-5xx)".utf8))
                }
                switch reply.0 {
                case 200..<300:
                    sent.attempts.append(SendAttemptItem(attemptDate: at, sendAttemptResult: "SUCCESS"))
                    if attempt > 0 { state.withLock { $0.recovered += 1 } }
                    return reply
                case 400..<500:
                    // A 4xx is the backend's verdict (it rejected the payload); Apple would retry it too, but a
                    // correct backend's rejection of a forgery does not change, and the harness needs the verdict.
                    sent.attempts.append(
                        SendAttemptItem(attemptDate: at, sendAttemptResult: "UNSUCCESSFUL_HTTP_RESPONSE_CODE"))
                    return reply
                default:
                    sent.attempts.append(
                        SendAttemptItem(attemptDate: at, sendAttemptResult: "UNSUCCESSFUL_HTTP_RESPONSE_CODE"))
                    lastReply = reply
                    lastFailure = nil
                }
            } catch {
                guard error.kind != .protocolViolation else { throw error }
                let result =
                    switch error.kind {
                    case .timedOut: "TIMED_OUT"
                    case .unavailable: "SOCKET_ISSUE"
                    case .crashed: "PREMATURE_CLOSE"
                    default: "INVALID_RESPONSE"
                    }
                sent.attempts.append(SendAttemptItem(attemptDate: at, sendAttemptResult: result))
                lastFailure = error
                lastReply = nil
            }
        }
        if let lastFailure {
            throw ValidatorFailure(
                lastFailure.kind,
                "the webhook failed all \(retries + 1) attempts (Apple's retry schedule\(retries == 0 ? "; none in the sandbox" : "")); last: \(lastFailure.message)",
                transcript: lastFailure.transcript)
        }
        return lastReply ?? (500, Data())
    }

    /// What the store has posted, for tests and reports: (notificationType, attempt results).
    public var sentNotifications: [(type: String, attempts: [String])] {
        state.withLock { $0.notifications.map { ($0.notificationType, $0.attempts.map(\.sendAttemptResult)) } }
    }

    /// Notifications, over every case since the store started, that were delivered on a retry after a failed attempt.
    public var notificationsDeliveredOnRetry: Int { state.withLock { $0.recovered } }

    /// Requests answered per endpoint, by the name each route counts itself under (`history`, `statuses`, …; see
    /// `MockAppStore+Routes.swift`), for tests and reports.
    public var served: [String: Int] { state.withLock { $0.servedCounts } }

    func count(_ endpoint: String) { state.withLock { $0.servedCounts[endpoint, default: 0] += 1 } }

    // MARK: decoding of what the store serves

    struct TransactionClaims: Decodable { let transactionId: String; let revocationDate: Millis? }
    struct NotificationClaims: Decodable {
        struct Data: Decodable { let signedTransactionInfo: String? }
        let signedDate: Millis?
        let notificationType: String?
        let data: Data?
    }
    struct ChainClaims: Decodable { let transactionId: String?; let originalTransactionId: String? }
    struct EnvironmentOnly: Decodable { let environment: String? }

    /// The payload of a JWS the store serves (it signed nothing itself; it only indexes).
    static func claims<T: Decodable>(_ jws: String, as: T.Type) -> T? {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(bytes))
    }
}
