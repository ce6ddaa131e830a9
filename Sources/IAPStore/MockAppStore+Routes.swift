import Crypto
import Foundation
import IAPEncoding
import IAPHTTP
import IAPModel

extension MockAppStore {
    static let encoder: JSONEncoder = JSONFormat.compact()

    typealias Request = LoopbackHTTPServer.Request
    typealias Response = LoopbackHTTPServer.Response

    static func json<T: Encodable>(_ value: T, status: Int = 200) -> Response {
        Response(status: status, body: (try? encoder.encode(value)) ?? Data("{}".utf8))
    }

    /// Apple's error body (`errorCode`, `errorMessage`).
    struct APIError: Encodable { let errorCode: Int; let errorMessage: String }
    static func apiError(_ status: Int, _ code: Int, _ message: String) -> Response {
        json(APIError(errorCode: code, errorMessage: message), status: status)
    }

    /// One page of a paged answer for the customer of `:transactionId`: the first, or the one after the page whose
    /// `revision` the request carries.
    func page<Page: Encodable & Sendable>(
        _ request: Request, _ parameters: [String: String], _ pages: (Chain) -> [Page]
    ) -> Response
    where Page: RevisionedPage {
        pause()
        if let denied = authorize(request) { return denied }
        let id = parameters["transactionId"] ?? ""
        guard let (chain, sourced) = answers(for: id) else {
            return Self.apiError(404, 4040010, "Transaction id not found.")
        }
        let all = pages(chain)
        var index = 0
        if let revision = request.query["revision"] {
            guard let i = all.firstIndex(where: { $0.revision == revision }), i + 1 < all.count else {
                return Self.apiError(400, 4000005, "Invalid revision.")
            }
            index = i + 1
        }
        guard index < all.count else { return Self.apiError(404, 4040010, "Transaction id not found.") }
        if sourced { noteServed(all[index].signedTransactions) }
        return Self.json(all[index])
    }

    // long by design: the route table of the mock App Store, one entry per endpoint, reads best whole.
    func makeRoutes() -> Routes {
        var api = Routes()
        api.get("/inApps/v2/history/:transactionId") { request, parameters in
            self.count("history")
            return self.page(request, parameters) { $0.history }
        }
        api.get("/inApps/v2/refund/lookup/:transactionId") { request, parameters in
            self.count("refunds")
            return self.page(request, parameters) { $0.refunds }
        }
        api.get("/inApps/v1/subscriptions/:transactionId") { request, parameters in
            self.count("statuses")
            self.pause()
            if let denied = self.authorize(request) { return denied }
            let id = parameters["transactionId"] ?? ""
            guard let (chain, sourced) = self.answers(for: id) else {
                return Self.apiError(404, 4040010, "Transaction id not found.")
            }
            // A customer Apple knows who has no subscription: their transaction is found, their statuses are none.
            let first = chain.history.first
            let statuses =
                chain.statuses
                ?? StatusResponse(
                    data: [], environment: first?.environment ?? .production, appAppleId: first?.appAppleId,
                    bundleId: first?.bundleId ?? "")
            if sourced {
                self.noteServed(
                    statuses.data.flatMap(\.lastTransactions).flatMap {
                        [$0.signedTransactionInfo, $0.signedRenewalInfo]
                    })
            }
            return Self.json(statuses)
        }
        api.get("/inApps/v1/transactions/:transactionId") { request, parameters in
            self.count("transaction")
            self.pause()
            if let denied = self.authorize(request) { return denied }
            let id = parameters["transactionId"] ?? ""
            guard let (jws, sourced) = self.signedTransaction(id) else {
                return Self.apiError(404, 4040010, "Transaction id not found.")
            }
            if sourced { self.noteServed([jws]) }
            return Self.json(TransactionInfoResponse(signedTransactionInfo: jws))
        }
        api.post("/inApps/v1/notifications/history") { request, _ in
            self.count("notification-history")
            self.pause()
            if let denied = self.authorize(request) { return denied }
            guard let q = try? JSONDecoder().decode(NotificationHistoryRequest.self, from: request.body) else {
                return Self.apiError(400, 4000015, "Invalid request: startDate and endDate are required.")
            }
            guard q.endDate > q.startDate, q.endDate - q.startDate <= 180 * 86_400_000 else {
                return Self.apiError(400, 4000016, "Invalid start and end dates.")
            }
            if q.notificationType != nil && q.transactionId != nil {
                return Self.apiError(
                    400, 4000018, "Invalid request: filter by notificationType or transactionId, not both.")
            }
            // Any transaction of the customer's chain names it (the store knows the chains it published).
            let wanted: Set<String>? = q.transactionId.map { id in
                var ids: Set<String> = [id]
                if let chain = self.answers(for: id)?.chain {
                    for page in chain.history {
                        for jws in page.signedTransactions {
                            if let c = Self.claims(jws, as: ChainClaims.self) {
                                ids.formUnion([c.transactionId, c.originalTransactionId].compactMap { $0 })
                            }
                        }
                    }
                }
                return ids
            }
            let page =
                request.query["paginationToken"].flatMap { Int($0.dropFirst("page-".count)) } ?? 0
            let matching = self.state.withLock { $0.notifications }.filter {
                $0.signedDate >= q.startDate && $0.signedDate < q.endDate
                    && (q.notificationType == nil || $0.notificationType == q.notificationType)
                    && (wanted == nil || !$0.transactionIds.isDisjoint(with: wanted!))
                    // A notification that succeeded on a retry is not a failure any more.
                    && (q.onlyFailures != true || $0.attempts.last?.sendAttemptResult != "SUCCESS")
            }
            let pageSize = 20
            let slice = matching.dropFirst(page * pageSize).prefix(pageSize)
            let more = matching.count > (page + 1) * pageSize
            return Self.json(
                NotificationHistoryResponse(
                    paginationToken: more ? "page-\(page + 1)" : nil, hasMore: more,
                    notificationHistory: slice.map {
                        NotificationHistoryResponseItem(
                            signedPayload: $0.signedPayload, sendAttempts: Array($0.attempts.prefix(6)))
                    }))
        }
        api.post("/inApps/v1/notifications/test") { request, _ in
            self.count("test")
            self.pause()
            if let denied = self.authorize(request) { return denied }
            guard let sign = self.testNotificationSigner, let hook = self.webhook,
                let catalog = self.state.withLock({ $0.catalog })
            else {
                return Self.apiError(
                    500, 5000000,
                    "This mock App Store has no webhook or signer for test notifications.")
            }
            let now = Millis(Date().timeIntervalSince1970 * 1000)
            let payload = sign(now, catalog)
            let token = "test-\(UUID().uuidString.lowercased())"
            let index: Int = self.state.withLock {
                $0.notifications.append(
                    SentNotification(signedPayload: payload, signedDate: now, notificationType: "TEST", attempts: []))
                $0.testTokens[token] = $0.notifications.count - 1
                return $0.notifications.count - 1
            }
            // Posted after answering, as Apple does, on a thread of its own (the client blocks).
            Thread.detachNewThread {
                let client = LoopbackHTTPClient(host: hook.host, port: hook.port, timeout: 5)
                let body = (try? Self.encoder.encode(["signedPayload": payload])) ?? Data()
                let result: String
                do {
                    let (status, _) = try client.request(
                        "POST", hook.path, headers: [(hook.clockHeader, String(now))], body: body)
                    result = (200..<300).contains(status) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                } catch {
                    result = (error as? LoopbackHTTPClient.Failure)?.kind == .timedOut ? "TIMED_OUT" : "SOCKET_ISSUE"
                }
                self.state.withLock {
                    if index < $0.notifications.count {
                        $0.notifications[index].attempts.append(
                            SendAttemptItem(attemptDate: now, sendAttemptResult: result))
                    }
                }
            }
            return Self.json(["testNotificationToken": token])
        }
        api.get("/inApps/v1/notifications/test/:token") { request, parameters in
            if let denied = self.authorize(request) { return denied }
            let token = parameters["token"] ?? ""
            guard
                let n = self.state.withLock({ state in
                    state.testTokens[token].flatMap { $0 < state.notifications.count ? state.notifications[$0] : nil }
                })
            else {
                return Self.apiError(404, 4040008, "Test notification not found.")
            }
            return Self.json(CheckTestNotificationResponse(signedPayload: n.signedPayload, sendAttempts: n.attempts))
        }
        api.post("/verifyReceipt") { request, _ in self.verifyReceipt(request, sandboxEndpoint: false) }
        api.post("/sandbox/verifyReceipt") { request, _ in self.verifyReceipt(request, sandboxEndpoint: true) }
        return api
    }

    struct NotificationHistoryRequest: Decodable {
        let startDate: Millis
        let endDate: Millis
        let notificationType: String?
        let transactionId: String?
        let onlyFailures: Bool?
    }

    struct CheckTestNotificationResponse: Encodable {
        let signedPayload: String
        let sendAttempts: [SendAttemptItem]
    }

    struct VerifyReceiptRequest: Decodable {
        let receiptData: String?
        let password: String?
        enum CodingKeys: String, CodingKey {
            case receiptData = "receipt-data"
            case password
        }
    }

    /// verifyReceipt: always HTTP 200, the outcome in `status` (Apple's codes).
    func verifyReceipt(_ request: Request, sandboxEndpoint: Bool) -> Response {
        count(sandboxEndpoint ? "sandbox/verifyReceipt" : "verifyReceipt")
        pause()
        func status(_ code: Int) -> Response {
            let environment = sandboxEndpoint ? "Sandbox" : "Production"
            return Self.json(["status": AnyEncodable(code), "environment": AnyEncodable(environment)])
        }
        guard let r = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: request.body),
            let data = r.receiptData
        else {
            return status(21002)
        }
        guard let receipt = state.withLock({ $0.receipts[data] }) else { return status(21003) }
        if receipt.sandbox && !sandboxEndpoint { return status(21007) }
        if !receipt.sandbox && sandboxEndpoint { return status(21008) }
        if let secret = settings.sharedSecret, r.password != secret { return status(21004) }
        if !receipt.body.hasPrefix("{") {
            // An outage's page (forgery class legacy-non-json-body): served as the proxy in front would serve it.
            return Response(status: 503, text: receipt.body, contentType: "text/html")
        }
        return Response(status: 200, text: receipt.body, contentType: "application/json")
    }

    /// Fault `slow-store`: every answer this much late.
    func pause() {
        if let ms = faults.storeDelayMillis, ms > 0 { usleep(UInt32(ms) * 1000) }
    }

    /// The App Store Server API's token check; nil when the request may proceed, else Apple's 401, whose body says
    /// which rule the token broke (Apple's says nothing; a backend's log then shows what to fix).
    func authorize(_ request: Request) -> Response? {
        guard let key = apiKey, let k = settings.apiKey else { return nil }
        count("checked-token")
        return tokenProblem(request, key: key, settings: k).map {
            Response(status: 401, text: "Unauthenticated: \($0)\n")
        }
    }

    func tokenProblem(_ request: Request, key: P256.Signing.PublicKey, settings k: StoreSettings.APIKey) -> String? {
        guard let auth = request.headers["authorization"], auth.hasPrefix("Bearer ") else {
            return "no Authorization: Bearer header"
        }
        let token = auth.dropFirst("Bearer ".count)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let sig = Base64URL.decode(parts[2]),
            let header = try? JSONDecoder().decode(TokenHeader.self, from: Data(headerBytes)),
            let claims = try? JSONDecoder().decode(TokenClaims.self, from: Data(payloadBytes))
        else { return "not a JWT of three base64url parts" }
        guard header.alg == "ES256", header.typ == nil || header.typ == "JWT" else { return "alg must be ES256" }
        guard header.kid == k.keyId else { return "kid is not the key id of the store's API key" }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: sig),
            key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { return "the signature is not the API key's" }
        let now = Int64(Date().timeIntervalSince1970)
        // `iat` may be left out, as Apple's own libraries do (their tokens carry exp alone): then the token may live
        // at most an hour from now; with it, at most an hour from when it was issued, and not issued in the future.
        let issued = claims.iat ?? now
        guard claims.iss == k.issuerId else { return "iss is not the issuer id" }
        guard claims.aud == "appstoreconnect-v1" else { return "aud must be appstoreconnect-v1" }
        guard let exp = claims.exp else { return "no exp" }
        guard exp > now else {
            return "expired (exp is before the wall clock's now; a backend under faketime signs in virtual time)"
        }
        guard exp - issued <= 3600, exp - now <= 3600 else { return "lives longer than an hour" }
        guard issued <= now + 60 else { return "iat is in the future" }
        if let expected = state.withLock({ $0.bundleId }), claims.bid != expected {
            return "bid is not the app's bundle id"
        }
        return nil
    }

    struct TokenHeader: Decodable { let alg: String?; let kid: String?; let typ: String? }
    struct TokenClaims: Decodable {
        let iss: String?; let iat: Int64?; let exp: Int64?; let aud: String?; let bid: String?
    }
}

struct AnyEncodable: Encodable {
    let value: any Encodable
    init(_ value: any Encodable) { self.value = value }
    func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
}

/// A page of a paged App Store Server API answer, named by its `revision`.
protocol RevisionedPage {
    var revision: String { get }
    var signedTransactions: [String] { get }
}
extension HistoryResponse: RevisionedPage {}
extension RefundHistoryResponse: RevisionedPage {}
