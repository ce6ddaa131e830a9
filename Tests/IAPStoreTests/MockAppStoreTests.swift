import Crypto
import Foundation
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPStore
import IAPTesting
import IAPValidatorAPI
import Testing

/// The mock App Store over real HTTP on loopback: the API's token check, history paging, verifyReceipt's statuses and
/// the webhook's retry schedule.
@Suite(.serialized) struct MockAppStoreTests {
    static let keyId = "TESTKEY001", issuerId = "11111111-2222-3333-4444-555555555555", bundleId = "com.example.app"
    static let key = P256.Signing.PrivateKey()

    /// A store on a free port with a fresh key file; its bundle set by a reset.
    static func store(sharedSecret: String? = "s3cret") throws -> MockAppStore {
        let file = Scratch.url.appendingPathComponent("key-\(UUID().uuidString).p8").path
        try key.pemRepresentation.write(toFile: file, atomically: true, encoding: .utf8)
        let store = try MockAppStore(
            settings: StoreSettings(
                port: 0, sharedSecret: sharedSecret,
                apiKey: .init(keyId: keyId, issuerId: issuerId, privateKeyFile: file)))
        try store.start()
        var catalog = Catalog.standard
        catalog.bundleId = bundleId
        store.reset(ValidatorConfig(catalog: catalog, policy: .default))
        return store
    }

    struct Claims: Encodable {
        var iss = issuerId; var iat: Int64?; var exp: Int64; var aud = "appstoreconnect-v1"; var bid = bundleId
    }

    static func token(
        _ claims: Claims? = nil, kid: String = keyId, alg: String = "ES256", signer: P256.Signing.PrivateKey = key
    ) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        let c = claims ?? Claims(iat: now, exp: now + 1200)
        let h = Base64URL.encode([UInt8](try! JSONEncoder().encode(["alg": alg, "kid": kid, "typ": "JWT"])))
        let p = Base64URL.encode([UInt8](try! JSONEncoder().encode(c)))
        let s = try! signer.signature(for: Data("\(h).\(p)".utf8))
        return "\(h).\(p).\(Base64URL.encode([UInt8](s.rawRepresentation)))"
    }

    /// A JWS-shaped string whose payload names a transaction (the store indexes, it does not verify).
    static func fakeJWS(_ id: Int, revoked: Int64? = nil) -> String {
        let claims =
            revoked.map { #"{"transactionId":"\#(id)","revocationDate":\#($0)}"# } ?? #"{"transactionId":"\#(id)"}"#
        return "e30.\(Base64URL.encode([UInt8](claims.utf8))).c2ln"
    }

    /// A customer's history of `count` transactions; those `revoked` says get a revocation date.
    static func publishChain(_ store: MockAppStore, count: Int, revoked: (Int) -> Int64? = { _ in nil }) {
        let signed = (0..<count).map { fakeJWS(1000 + $0, revoked: revoked($0)) }
        var pages: [HistoryResponse] = []
        for (n, start) in stride(from: 0, to: count, by: 20).enumerated() {
            pages.append(
                HistoryResponse(
                    revision: "rev-1000-\(n + 1)", hasMore: start + 20 < count, bundleId: bundleId, appAppleId: nil,
                    environment: .production, signedTransactions: Array(signed[start..<min(start + 20, count)])))
        }
        store.publish(originalTransactionId: "1000", history: pages, statuses: nil)
    }

    func get(_ store: MockAppStore, _ path: String, token: String?) throws -> (Int, Data) {
        let client = LoopbackHTTPClient(host: "127.0.0.1", port: store.port, timeout: 5)
        return try client.request("GET", path, headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    @Test func theAPIRefusesEveryTokenAppleWouldRefuse() throws {
        let store = try Self.store()
        Self.publishChain(store, count: 3)
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try get(store, "/inApps/v2/history/1000", token: Self.token()).0 == 200)
        // Apple's own libraries sign exp alone (app-store-server-library's Python client): accepted, as Apple does.
        #expect(try get(store, "/inApps/v2/history/1000", token: Self.token(Claims(iat: nil, exp: now + 300))).0 == 200)
        let refused: [(String, String?)] = [
            ("no iat, lives longer than an hour", Self.token(Claims(iat: nil, exp: now + 3700))),
            ("no token", nil),
            ("wrong audience", Self.token(Claims(iat: now, exp: now + 600, aud: "appstoreconnect-v2"))),
            ("wrong issuer", Self.token(Claims(iss: "someone-else", iat: now, exp: now + 600))),
            ("wrong bundle", Self.token(Claims(iat: now, exp: now + 600, bid: "com.other.app"))),
            ("lives longer than an hour", Self.token(Claims(iat: now, exp: now + 3700))),
            ("expired", Self.token(Claims(iat: now - 1200, exp: now - 10))),
            ("unknown key id", Self.token(kid: "OTHERKEY01")),
            ("signed by another key", Self.token(signer: P256.Signing.PrivateKey())),
            ("not ES256", Self.token(alg: "HS256")),
            ("garbage", "not.a.token"),
        ]
        for (why, token) in refused {
            let (status, _) = try get(store, "/inApps/v2/history/1000", token: token)
            #expect(status == 401, "\(why) should be refused")
        }
        // The 401 says which rule the token broke, for the backend's log.
        let expired = try get(
            store, "/inApps/v2/history/1000", token: Self.token(Claims(iat: now - 1200, exp: now - 10)))
        #expect(String(decoding: expired.1, as: UTF8.self).contains("expired"))
        let audience = try get(
            store, "/inApps/v2/history/1000", token: Self.token(Claims(iat: now, exp: now + 600, aud: "x")))
        #expect(String(decoding: audience.1, as: UTF8.self).contains("aud must be appstoreconnect-v1"))
    }

    /// An answer the backend refused is undone: Get Transaction Info serves the transaction it had before.
    @Test func anUndonePublishServesWhatWasThereBefore() throws {
        let store = try Self.store()
        Self.publishChain(store, count: 1)
        let page = HistoryResponse(
            revision: "rev-x", hasMore: false, bundleId: Self.bundleId, appAppleId: nil,
            environment: .production,
            signedTransactions: [
                "e30.\(Base64URL.encode([UInt8](#"{"transactionId":"1000","forged":true}"#.utf8))).c2ln"
            ])
        let undo = store.publish(originalTransactionId: "1000", history: [page], statuses: nil)
        #expect(
            String(decoding: try get(store, "/inApps/v1/transactions/1000", token: Self.token()).1, as: UTF8.self)
                .contains(Base64URL.encode([UInt8](#"{"transactionId":"1000","forged":true}"#.utf8))))
        undo()
        let (status, body) = try get(store, "/inApps/v1/transactions/1000", token: Self.token())
        #expect(status == 200)
        #expect(String(decoding: body, as: UTF8.self).contains(Self.fakeJWS(1000)))
    }

    @Test func historyPagesFollowTheRevisionToken() throws {
        let store = try Self.store()
        Self.publishChain(store, count: 45)
        var ids: [String] = []
        var path = "/inApps/v2/history/1000"
        for _ in 0..<5 {
            let (status, body) = try get(store, path, token: Self.token())
            #expect(status == 200)
            let page = try JSONDecoder().decode(HistoryResponse.self, from: body)
            ids += page.signedTransactions
            guard page.hasMore else { break }
            path = "/inApps/v2/history/1000?revision=\(page.revision)"
        }
        #expect(ids.count == 45)
        #expect(Set(ids).count == 45)
        // Any transaction of the chain finds it; an unknown one is Apple's 404 with its error code.
        #expect(try get(store, "/inApps/v2/history/1030", token: Self.token()).0 == 200)
        let (status, body) = try get(store, "/inApps/v2/history/999999", token: Self.token())
        #expect(status == 404)
        #expect(String(decoding: body, as: UTF8.self).contains("4040010"))
        #expect(try get(store, "/inApps/v2/history/1000?revision=bogus", token: Self.token()).0 == 400)
        let (infoStatus, info) = try get(store, "/inApps/v1/transactions/1044", token: Self.token())
        #expect(infoStatus == 200)
        #expect(
            try JSONDecoder().decode(TransactionInfoResponse.self, from: info).signedTransactionInfo
                == Self.fakeJWS(1044))
        // A customer without a subscription (statuses: nil) is known: no statuses, not "transaction id not found".
        let (none, statuses) = try get(store, "/inApps/v1/subscriptions/1044", token: Self.token())
        #expect(none == 200)
        #expect(try JSONDecoder().decode(StatusResponse.self, from: statuses).data.isEmpty)
        #expect(try get(store, "/inApps/v1/subscriptions/999999", token: Self.token()).0 == 404)
    }

    struct RefundClaims: Decodable { let transactionId: String; let revocationDate: Int64? }

    /// Get Refund History: the customer's revoked transactions only, ascending by revocation date (not by history
    /// order), 20 a page, `revision` leading through the pages; any transaction of the customer finds it.
    @Test func refundHistoryPagesAscendByRevocationDate() throws {
        let store = try Self.store()
        // Every other transaction of 90 is revoked, later ones earlier: 45 refunds, three pages.
        Self.publishChain(store, count: 90) { $0 % 2 == 0 ? 5_000_000 - Int64($0) * 1000 : nil }
        var ids: [Int] = []
        var path = "/inApps/v2/refund/lookup/1089"
        var pages = 0
        while pages < 10 {
            let (status, body) = try get(store, path, token: Self.token())
            #expect(status == 200)
            let page = try JSONDecoder().decode(RefundHistoryResponse.self, from: body)
            pages += 1
            #expect(page.signedTransactions.count == (page.hasMore ? 20 : 5))
            for jws in page.signedTransactions {
                let claims = try JSONDecoder().decode(
                    RefundClaims.self, from: Data(Base64URL.decode(jws.split(separator: ".")[1])!))
                #expect(claims.revocationDate != nil)
                ids.append(Int(claims.transactionId)!)
            }
            guard page.hasMore else { break }
            path = "/inApps/v2/refund/lookup/1000?revision=\(page.revision)"
        }
        #expect(pages == 3)
        #expect(ids == stride(from: 88, through: 0, by: -2).map { 1000 + $0 })
        #expect(try get(store, "/inApps/v2/refund/lookup/1000?revision=bogus", token: Self.token()).0 == 400)
        #expect(try get(store, "/inApps/v2/refund/lookup/424242", token: Self.token()).0 == 404)
    }

    struct Status: Decodable { let status: Int }

    @Test func verifyReceiptAnswersWithApplesStatuses() throws {
        let store = try Self.store(sharedSecret: "s3cret")
        let sandbox = store.registerReceipt(responseBody: #"{"status":0,"environment":"Sandbox","receipt":{}}"#)
        let production = store.registerReceipt(responseBody: #"{"status":0,"environment":"Production","receipt":{}}"#)
        let client = LoopbackHTTPClient(host: "127.0.0.1", port: store.port, timeout: 5)
        func verify(_ path: String, _ data: String, password: String? = "s3cret") throws -> Int {
            var body = ["receipt-data": data]
            body["password"] = password
            let (http, reply) = try client.request("POST", path, body: try JSONEncoder().encode(body))
            #expect(http == 200)
            return try JSONDecoder().decode(Status.self, from: reply).status
        }
        #expect(try verify("/verifyReceipt", sandbox) == 21007)
        #expect(try verify("/sandbox/verifyReceipt", sandbox) == 0)
        #expect(try verify("/sandbox/verifyReceipt", production) == 21008)
        #expect(try verify("/verifyReceipt", production) == 0)
        #expect(try verify("/verifyReceipt", production, password: "wrong") == 21004)
        #expect(try verify("/verifyReceipt", "AAAA") == 21003)
        let (_, malformed) = try client.request("POST", "/verifyReceipt", body: Data("{".utf8))
        #expect(try JSONDecoder().decode(Status.self, from: malformed).status == 21002)
    }

    @Test func theWebhookIsRetriedOnApplesScheduleInVirtualTime() throws {
        let store = try Self.store()
        let payload =
            "e30.\(Base64URL.encode([UInt8](#"{"notificationType":"DID_RENEW","signedDate":1700000000000}"#.utf8))).c2ln"
        var clocks: [Millis] = []
        let reply = try store.postNotification(payload, now: 1_700_000_000_000) {
            (at: Millis) throws(ValidatorFailure) -> (Int, Data) in
            clocks.append(at)
            if clocks.count == 2 { throw ValidatorFailure(.timedOut, "no answer") }
            return clocks.count < 4 ? (503, Data()) : (200, Data())
        }
        #expect(reply.0 == 200)
        let hour: Millis = 3_600_000
        #expect(
            clocks == [
                1_700_000_000_000, 1_700_000_000_000 + hour, 1_700_000_000_000 + 13 * hour,
                1_700_000_000_000 + 37 * hour,
            ])
        #expect(
            store.sentNotifications.last?.attempts == [
                "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "TIMED_OUT", "UNSUCCESSFUL_HTTP_RESPONSE_CODE", "SUCCESS",
            ])
        // A 4xx is the backend's verdict: not retried.
        var calls = 0
        let rejected = try store.postNotification(payload, now: 0) {
            (_: Millis) throws(ValidatorFailure) -> (Int, Data) in
            calls += 1
            return (422, Data())
        }
        #expect(rejected.0 == 422 && calls == 1)
        // Six failures: a validator failure naming the schedule.
        #expect(throws: ValidatorFailure.self) {
            try store.postNotification(payload, now: 0) { (_: Millis) throws(ValidatorFailure) -> (Int, Data) in
                throw ValidatorFailure(.unavailable, "connection refused")
            }
        }
        // The attempts are in Get Notification History.
        let client = LoopbackHTTPClient(host: "127.0.0.1", port: store.port, timeout: 5)
        let query = try JSONEncoder().encode(["startDate": 1_699_999_000_000, "endDate": 1_700_001_000_000])
        let (status, body) = try client.request(
            "POST", "/inApps/v1/notifications/history", headers: [("Authorization", "Bearer \(Self.token())")],
            body: query)
        #expect(status == 200)
        let history = try JSONDecoder().decode(NotificationHistoryResponse.self, from: body)
        #expect(history.notificationHistory.map(\.sendAttempts.count) == [4, 1, 6])
        // onlyFailures leaves out the one that succeeded on a retry.
        let failures = try JSONEncoder().encode(
            Failures(startDate: 1_699_999_000_000, endDate: 1_700_001_000_000, onlyFailures: true))
        let (_, failedBody) = try client.request(
            "POST", "/inApps/v1/notifications/history", headers: [("Authorization", "Bearer \(Self.token())")],
            body: failures)
        #expect(
            try JSONDecoder().decode(NotificationHistoryResponse.self, from: failedBody).notificationHistory.map(
                \.sendAttempts.count) == [1, 6])
    }

    struct Failures: Encodable { let startDate: Int64; let endDate: Int64; let onlyFailures: Bool }

    /// Apple retries production notifications only.
    @Test func aSandboxNotificationGetsOneAttempt() throws {
        let store = try Self.store()
        var catalog = Catalog.standard
        catalog.bundleId = Self.bundleId
        catalog.environment = .sandbox
        store.reset(ValidatorConfig(catalog: catalog, policy: .default))
        var attempts = 0
        #expect(throws: ValidatorFailure.self) {
            try store.postNotification("e30.e30.c2ln", now: 0) { (_: Millis) throws(ValidatorFailure) -> (Int, Data) in
                attempts += 1
                throw ValidatorFailure(.timedOut, "no answer")
            }
        }
        #expect(attempts == 1)
    }
}
