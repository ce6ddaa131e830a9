import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPStore
import IAPTesting
import IAPValidatorAPI
import Testing

/// A backend built as Apple advises for one that trusts nothing it is posted: the app posts a transaction id alone,
/// and on that, on every notification it verified, and never otherwise, it asks the App Store Server API for the
/// customer's history and statuses, verifies them and keeps what they say. `check` must pass it when its logic is
/// right and catch it when it is not, with the mock App Store answering as Apple would at each step.
@Suite struct APIAskingBackendTests {
    /// The backend: a reference validator (or a mutant) behind HTTP routes of its own shape.
    final class Backend: @unchecked Sendable {
        let logic: any Validator
        let storePort: Int
        /// Asks the API again before every answer, about each purchase the account posted.
        let asksWhenAsked: Bool
        /// Takes every chain of the customer's history as the account's, not only the one the app posted.
        var linksTheWholeHistory = false
        var otherChainsLinked = 0
        var purchases: [String: [String]] = [:]
        /// The history pages of two transactions or more the API served, and how many distinct `signedDate`s each had.
        var pagesServed = 0
        var pagesOfOneSignedDate = 0
        /// Non-consumable purchases served under several ids (restores), and those whose ids disagreed on a refund.
        var restoredPurchases = 0
        var disagreeingPurchases = 0
        let lock = NSLock()
        var server: LoopbackHTTPServer?

        init(_ logic: any Validator, storePort: Int, asksWhenAsked: Bool = false) throws {
            (self.logic, self.storePort, self.asksWhenAsked) = (logic, storePort, asksWhenAsked)
            let server = try LoopbackHTTPServer(port: 0) { [unowned self] r in self.answer(r) }
            server.start()
            self.server = server
        }

        func answer(_ r: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
            lock.lock()
            defer { lock.unlock() }
            let now = r.headers["x-clock"].flatMap { Millis($0) } ?? 0
            let body = (try? JSONSerialization.jsonObject(with: r.body)) as? [String: Any] ?? [:]
            switch r.path {
            case "/test/reset":
                guard let config = try? JSONDecoder().decode(ValidatorConfig.self, from: r.body),
                    (try? logic.reset(config)) != nil
                else { return .init(status: 500, text: "reset failed") }
                return .init(status: 204, text: "")
            case "/v1/purchases":
                let user = body["account"] as? String ?? "", id = body["tx"] as? String ?? ""
                // The history's own token of that id, verified with the rest, says whose it is.
                guard let snapshot = ask(about: id), case let .apiSnapshot(_, pages, _) = snapshot,
                    let own = pages.flatMap(\.signedTransactions).first(where: { Self.ids(in: $0).0 == id })
                else { return .init(status: 404, text: #"{"reason": "Apple does not know \#(id)"}"#) }
                purchases[user, default: []].append(id)
                var linked = [
                    snapshot, SignedDelivery.appTransaction(userId: user, signedTransaction: own, deviceTime: nil),
                ]
                if linksTheWholeHistory {
                    var chains: Set<String> = [Self.ids(in: own).1]
                    for jws in pages.flatMap(\.signedTransactions) where chains.insert(Self.ids(in: jws).1).inserted {
                        linked.append(.appTransaction(userId: user, signedTransaction: jws, deviceTime: nil))
                        otherChainsLinked += 1
                    }
                }
                return keep(linked, now)
            case "/v1/apple/webhook":
                let payload = body["signedPayload"] as? String ?? ""
                guard case .accepted? = try? logic.deliver(.notification(signedPayload: payload), now: now) else {
                    return .init(status: 400, text: "{}")
                }
                guard let nested = Self.nestedTransaction(payload), let snapshot = ask(about: Self.ids(in: nested).0)
                else { return .init(status: 200, text: "{}") }
                return keep([snapshot], now)
            default:
                let query = EntitlementQuery(userId: r.query["account"] ?? "", at: Millis(r.query["at"] ?? "") ?? 0)
                if asksWhenAsked {
                    for id in purchases[query.userId] ?? [] {
                        if let snapshot = ask(about: id) { _ = keep([snapshot], now) }
                    }
                }
                guard let answer = try? logic.entitlements(query), let data = try? JSONEncoder().encode(answer) else {
                    return .init(status: 500, text: "no answer")
                }
                return .init(status: 200, body: data)
            }
        }

        func keep(_ deliveries: [SignedDelivery], _ now: Millis) -> LoopbackHTTPServer.Response {
            for d in deliveries {
                guard case .accepted? = try? logic.deliver(d, now: now) else {
                    return .init(status: 422, text: "{}")
                }
            }
            return .init(status: 200, text: "{}")
        }

        /// Get Transaction History, every page, and Get All Subscription Statuses.
        func ask(about id: String) -> SignedDelivery? {
            let client = LoopbackHTTPClient(host: "127.0.0.1", port: storePort, timeout: 5)
            defer { client.close() }
            var pages: [HistoryResponse] = []
            var revision: String?
            repeat {
                let path = "/inApps/v2/history/\(id)" + (revision.map { "?revision=\($0)" } ?? "")
                guard let (status, body) = try? client.request("GET", path), status == 200,
                    let page = try? JSONDecoder().decode(HistoryResponse.self, from: body)
                else { return nil }
                pages.append(page)
                let signed = Set(page.signedTransactions.map { Self.claims($0)["signedDate"] as? NSNumber })
                if page.signedTransactions.count > 1 {
                    pagesServed += 1
                    if signed.count == 1 { pagesOfOneSignedDate += 1 }
                }
                revision = page.hasMore ? page.revision : nil
            } while revision != nil
            // At Apple, every id of one non-consumable purchase says what was signed last of it.
            var revocations: [String: [Int64?]] = [:]
            for claims in pages.flatMap(\.signedTransactions).map(Self.claims)
            where claims["type"] as? String == "Non-Consumable" {
                revocations[claims["originalTransactionId"] as? String ?? "", default: []].append(
                    (claims["revocationDate"] as? NSNumber)?.int64Value)
            }
            for ids in revocations.values where ids.count > 1 {
                restoredPurchases += 1
                if Set(ids).count > 1 { disagreeingPurchases += 1 }
            }
            let statuses = (try? client.request("GET", "/inApps/v1/subscriptions/\(id)")).flatMap {
                $0.status == 200 ? try? JSONDecoder().decode(StatusResponse.self, from: $0.body) : nil
            }
            let original = pages.flatMap(\.signedTransactions).map { Self.ids(in: $0) }.first { $0.0 == id }?.1 ?? id
            return .apiSnapshot(originalTransactionId: original, history: pages, statuses: statuses)
        }

        /// A token's ids, read unverified (the API's answer is verified when kept).
        static func ids(in jws: String) -> (String, String) {
            let o = claims(jws)
            return (o["transactionId"] as? String ?? "", o["originalTransactionId"] as? String ?? "")
        }

        static func nestedTransaction(_ payload: String) -> String? {
            (claims(payload)["data"] as? [String: Any])?["signedTransactionInfo"] as? String
        }

        static func claims(_ jws: String) -> [String: Any] {
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
        }
    }

    static func target(port: Int, storePort: Int, resets: Bool = true) throws -> HTTPValidator.Target {
        let path = Scratch.directory + "asks-api-\(UUID().uuidString).json"
        try Data(
            #"""
            {"baseURL": "http://127.0.0.1:\#(port)", "clockHeader": "X-Clock",
             "channels": ["app-transaction", "notification"],
             "store": {"port": \#(storePort)},
             "routes": {\#(resets ? #""reset": {"method": "POST", "path": "/test/reset"},"# : "")
                        "appTransaction": {"method": "POST", "path": "/v1/purchases",
                                           "body": {"json": {"account": "{userId}", "tx": "{transactionId}"}}},
                        "notification": {"method": "POST", "path": "/v1/apple/webhook"},
                        "entitlements": {"method": "GET", "path": "/v1/access?account={userId}&at={at}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    /// Hides that the backend asks the API: the store then answers only what reconciliations publish (none here).
    final class Unannounced: Validator {
        let inner: HTTPValidator
        init(_ inner: HTTPValidator) { self.inner = inner }
        var name: String { inner.name }
        var profile: ValidatorProfile { inner.profile }
        var isolation: CaseIsolation { inner.isolation }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            try inner.deliver(d, now: now)
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            try inner.entitlements(q)
        }
        func verifiesLater(_ channel: DeliveryChannel) -> Bool { inner.verifiesLater(channel) }
    }

    /// The backend, its store and the validator iapcheck sees, for `body`.
    static func with<T>(
        _ logic: any Validator, asksWhenAsked: Bool = false, _ body: (MockAppStore, HTTPValidator, Backend) throws -> T
    ) throws -> T {
        let store = try MockAppStore(settings: StoreSettings(port: 0))
        try store.start()
        let backend = try Backend(logic, storePort: store.port, asksWhenAsked: asksWhenAsked)
        defer { backend.server?.stop() }
        let http = HTTPValidator(
            target: try target(port: backend.server!.port, storePort: store.port), name: "http:asks-api", timeout: 10,
            store: store)
        return try body(store, http, backend)
    }

    static func check(
        _ logic: any Validator, cases: Int, announced: Bool = true, asksWhenAsked: Bool = false,
        linksTheWholeHistory: Bool = false
    ) throws
        -> (CheckReport, [String: Int], restored: Int)
    {
        try with(logic, asksWhenAsked: asksWhenAsked) { store, http, backend in
            backend.linksTheWholeHistory = linksTheWholeHistory
            var o = CheckOptions()
            o.cases = cases
            let report = Checker(options: o, validator: announced ? http : Unannounced(http)).run()
            // Transactions are served with the dates their versions were signed, not re-signed at the step: a
            // restored id's older version would look as new as its purchase's newest (a refund reversed under the
            // other id) and win over it. Re-signed, every page would carry one date.
            #expect(
                backend.pagesServed == 0 || backend.pagesOfOneSignedDate < backend.pagesServed,
                "\(backend.pagesOfOneSignedDate) of \(backend.pagesServed) pages carry one signedDate")
            #expect(
                backend.disagreeingPurchases == 0,
                "\(backend.disagreeingPurchases) of \(backend.restoredPurchases) restored purchases disagreed on a refund"
            )
            return (report, store.served, linksTheWholeHistory ? backend.otherChainsLinked : backend.restoredPurchases)
        }
    }

    /// It takes every chain of the customer's history as the account's: the history is one Apple ID's, so a chain the
    /// app did not post (bought on another device) is that account's too, a reading the facts leave open.
    @Test func aBackendThatTakesTheWholeHistoryAsTheAccountsPasses() throws {
        let (report, _, linked) = try Self.check(ReferenceValidator(), cases: 60, linksTheWholeHistory: true)
        #expect(report.failure == nil, "\(report.failure.map { "\($0.outcome)" } ?? "")")
        #expect(linked > 0)
    }

    /// It asks Apple when asked what an account may use, too: what it learns then, the oracle learns before the
    /// answers are compared.
    @Test func aBackendThatAlsoAsksWhenAskedPasses() throws {
        let (report, served, _) = try Self.check(ReferenceValidator(), cases: 5, asksWhenAsked: true)
        #expect(report.failure == nil, "\(report.failure.map { "\($0.outcome)" } ?? "")")
        #expect(report.passed == 5)
        #expect((served["history"] ?? 0) > 30, "\(served)")
    }

    /// certify's forgery probe: each class's genuine twin is found at the API and credited, and no forgery is taken.
    @Test func everyForgeryClassIsProbedAndRefusedOrChangesNothing() throws {
        try Self.with(ReferenceValidator()) { _, http, _ in
            let results = CertificationSuite.probeForgeries(http, catalog: .standard, policy: .default)
            #expect(results.count > 10)
            let uncredited = results.filter { $0.genuineRefused != nil }.map(\.name)
            #expect(uncredited.isEmpty, "twins refused: \(uncredited)")
            let taken = results.filter { !$0.rejected && $0.allowed != true && $0.notProbed == nil }.map {
                "\($0.name): \($0.reason ?? "")"
            }
            #expect(taken.isEmpty, "\(taken)")
        }
    }

    /// A backend without a reset route meets every run of a case under ids of its own: its refusal naming one is the
    /// same refusal in every replay of the shrunk case, not a flaky backend.
    @Test func aRefusalThatNamesTheRunsIdsIsNotFlaky() throws {
        let store = try MockAppStore(settings: StoreSettings(port: 0))
        try store.start()
        let backend = try Backend(ReferenceValidator(), storePort: store.port)
        defer { backend.server?.stop() }
        let http = HTTPValidator(
            target: try Self.target(port: backend.server!.port, storePort: store.port, resets: false),
            name: "http:asks-api", timeout: 10, store: store)
        var o = CheckOptions()
        o.cases = 5
        // Unannounced: the API knows nothing, and every purchase is refused with its id.
        let report = Checker(options: o, validator: Unannounced(http)).run()
        let failure = try #require(report.failure)
        #expect("\(failure.outcome)".contains("Apple does not know 2"), "\(failure.outcome)")
        #expect(failure.flaky == nil, "\(failure.flaky.map { "\($0.outcomes)" } ?? "")")
    }

    /// The doctor's purchase is found at the API too: nothing is blamed on the backend's settings.
    @Test func theDoctorFindsNothingWrong() throws {
        try Self.with(ReferenceValidator()) { store, http, _ in
            let report = Doctor(validator: http, catalog: .standard, policy: .default).run()
            let wrong = report.items.filter { $0.status == .misconfigured || $0.status == .finding }
            #expect(wrong.isEmpty, "\(wrong)")
            #expect((store.served["history"] ?? 0) > 0)
        }
    }

    @Test func aCorrectBackendThatAsksTheAPIOnItsOwnPasses() throws {
        let (report, served, restored) = try Self.check(ReferenceValidator(), cases: 100)
        #expect(report.failure == nil, "\(report.failure.map { "\($0.outcome)" } ?? "")")
        #expect(report.passed == 100)
        #expect(restored > 0)
        // It did ask: every purchase and every notification it took.
        #expect((served["history"] ?? 0) > 500, "\(served)")
        #expect((served["statuses"] ?? 0) > 200, "\(served)")
        // Forgeries posted to a route that takes ids alone were judged by their effect, not by the 200.
        #expect(report.forgeries.sent.values.reduce(0, +) > 0)
        #expect(report.forgeries.sent == report.forgeries.rejected, "\(report.forgeries)")
    }

    @Test func withoutTheAPIsAnswersTheSameBackendLooksBroken() throws {
        let (report, _, _) = try Self.check(ReferenceValidator(), cases: 20, announced: false)
        #expect(report.failure != nil)
    }

    @Test func aBackendThatAsksTheAPIButIgnoresRevocationIsCaught() throws {
        let (report, _, _) = try Self.check(try #require(Mutants.named("ignore-revocation")).make(), cases: 300)
        let d = try #require(report.failure?.discrepancy, "\(report.failure.map { "\($0.outcome)" } ?? "passed")")
        #expect(d.kind == .answer)
        // The report says the backend asked, and counts what it was served among the facts.
        let lines = Explanation.lines(d, in: try #require(report.failure).shrunk)
        #expect(lines.contains { $0.contains("asked Apple's API") }, "\(lines)")
        #expect(lines.contains { $0.contains("api") && $0.contains("revocationDate") }, "\(lines)")
    }
}
