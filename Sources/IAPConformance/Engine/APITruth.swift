import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// What Apple's API knows at each instant of a case, for a backend that calls it of its own accord
/// (docs/mock-app-store.md#a-backend-that-asks-on-its-own): every genuine fact the case delivers on any channel but
/// the legacy one (whose receipts are less precise), in the version signed last by then, by customer. The API never
/// knows a fact the case does not deliver, and the oracle learns exactly what it served: a correct backend that asks
/// agrees with the oracle whatever it asks and when.
struct APITruth: Sendable {
    /// By transaction id, every version, oldest signed first.
    private var versions: [String: [JWSTransactionDecodedPayload]] = [:]
    /// By chain, every renewal info, oldest signed first.
    private var renewals: [String: [JWSRenewalInfoDecodedPayload]] = [:]
    /// Transaction and original transaction ids → the customer (the person whose deliveries carry them).
    private var customerOf: [String: Int] = [:]
    /// The customer's transaction ids, in the order first seen.
    private var idsOf: [Int: [String]] = [:]

    init(_ c: GeneratedCase) {
        var genuine: [(Delivery, person: Int)] = []
        for case .deliver(let d) in c.steps where d.forgery == nil { genuine.append((d.delivery, d.person)) }
        self.init(config: c.config, genuine)
    }

    /// From deliveries that are not forged; those of another app or environment are left out here.
    init(config: ValidatorConfig, _ genuine: [(Delivery, person: Int)]) {
        let knowledge = Knowledge(config: config)
        for d in genuine where knowledge.rejection(d.0) == nil {
            switch d.0 {
            case .appTransaction(let s): add(s.transaction, of: d.person)
            case .notification(let n):
                if let tx = n.data?.transactionInfo { add(tx, of: d.person) }
                if let r = n.data?.renewalInfo { add(r) }
            case .apiSnapshot(let s):
                for tx in s.transactions { add(tx, of: d.person) }
                for r in s.renewalInfos { add(r) }
            case .legacyReceipt: break
            }
        }
        for k in versions.keys { versions[k]?.sort(by: JWSTransactionDecodedPayload.signedBefore) }
        for k in renewals.keys { renewals[k]?.sort { $0.signedDate < $1.signedDate } }
    }

    private mutating func add(_ tx: JWSTransactionDecodedPayload, of person: Int) {
        if versions[tx.transactionId] == nil { idsOf[person, default: []].append(tx.transactionId) }
        versions[tx.transactionId, default: []].append(tx)
        if customerOf[tx.transactionId] == nil { customerOf[tx.transactionId] = person }
        if customerOf[tx.originalTransactionId] == nil { customerOf[tx.originalTransactionId] = person }
    }

    private mutating func add(_ r: JWSRenewalInfoDecodedPayload) {
        renewals[r.originalTransactionId, default: []].append(r)
    }

    /// What Get Transaction History and Get All Subscription Statuses say at `t` about the customer of `id`: nil
    /// when no transaction of that id (or chain) was signed by then.
    func snapshot(asking id: String, at t: Millis) -> APISnapshot? {
        guard let person = customerOf[id] else { return nil }
        // One purchase under several ids (a restore) says at Apple what was signed last of it under any of them, as
        // the oracle reads it: the case may deliver a refund under one id only (docs/answers.md).
        let current = Oracle.samePurchase(
            (idsOf[person] ?? []).compactMap { versions[$0]?.last { $0.signedDate <= t } })
        guard let asked = current.first(where: { $0.transactionId == id || $0.originalTransactionId == id }) else {
            return nil
        }
        // Apple's history order (ascending by last modification). A transaction keeps the date its version was
        // signed: Apple re-signs at every answer, but the oracle, which learns what is served, takes the newest
        // signed version of a purchase, and versions re-signed at one instant would tie.
        let transactions = current.sorted(by: JWSTransactionDecodedPayload.signedBefore)
        var chains: [String] = []
        for tx in transactions where !chains.contains(tx.originalTransactionId) {
            chains.append(tx.originalTransactionId)
        }
        let renewalInfos = chains.compactMap { chain in renewals[chain]?.last { $0.signedDate <= t } }
        return APISnapshot(
            originalTransactionId: asked.originalTransactionId, transactions: transactions, renewalInfos: renewalInfos)
    }
}

/// A case's API for a backend that may ask it: set before each step at the step's instant; after it, what the
/// backend was served is what the oracle learns.
final class APIService {
    let truth: APITruth
    let appAppleId: Int64?
    /// The facts behind each token the source signed.
    let signed = Locked<[String: Fact]>([:])
    /// The step being run, and what the backend was served, step by step, for the report of a failure.
    var step = 0
    var served = Discrepancy.ServedByAPI()

    enum Fact: Sendable {
        case transaction(JWSTransactionDecodedPayload)
        case renewal(JWSRenewalInfoDecodedPayload)
    }

    init?(_ c: GeneratedCase, for v: any Validator) {
        guard v.mayAskTheAPI else { return nil }
        truth = APITruth(c)
        appAppleId = c.config.catalog.appAppleId
    }

    /// The doctor's and certify's forgery probe's: their purchase, as the channels carry it.
    init?(config: ValidatorConfig, _ genuine: [Delivery], for v: any Validator) {
        guard v.mayAskTheAPI else { return nil }
        truth = APITruth(config: config, genuine.map { ($0, 0) })
        appAppleId = config.catalog.appAppleId
    }

    /// The discrepancy with what the backend was served by then.
    func annotated(_ d: Discrepancy) -> Discrepancy {
        var d = d
        if !served.entries.isEmpty { d.servedByAPI = served }
        return d
    }

    /// The API answers as of `t` from now on (step `step` of the case).
    func serve(_ v: any Validator, at t: Millis, clock: Millis, step: Int) {
        self.step = step
        serve(v, at: t, clock: clock)
    }

    /// The API answers as of Apple's instant `t` from now on, each subscription's status as of the backend's clock
    /// (the instant iapcheck gives it, which the question asks about: a backend that takes Apple's status and one
    /// that reads the expiry against its clock then agree, under a clock skew too).
    func serve(_ v: any Validator, at t: Millis, clock: Millis? = nil) {
        v.serveAPI { [truth, appAppleId, signed] id in
            guard let snapshot = truth.snapshot(asking: id, at: t) else { return nil }
            let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: appAppleId)
            var facts: [String: Fact] = [:]
            let responses = renderer.apiResponses(
                snapshot,
                sign: { tx in
                    let token = renderer.transaction(tx)
                    facts[token] = .transaction(tx)
                    return token
                },
                { r in
                    let token = renderer.renewal(r)
                    facts[token] = .renewal(r)
                    return token
                }, statusesAt: clock ?? t)
            signed.withLock { $0.merge(facts) { a, _ in a } }
            guard case let .apiSnapshot(otid, history, statuses) = responses else { return nil }
            return APIAnswers(originalTransactionId: otid, history: history, statuses: statuses)
        }
    }

    /// The API answers only what reconciliations publish again (the case is over).
    func serve(_ none: APIAnswerSource?, on v: any Validator) { v.serveAPI(none) }

    /// Teaches the oracle what the backend was served since the last step; whether there was anything.
    @discardableResult
    func learnServed(from v: any Validator, into knowledge: inout Knowledge) -> Bool {
        let tokens = v.takeServedByAPI()
        guard !tokens.isEmpty else { return false }
        let facts = signed.withLock { known in tokens.compactMap { known[$0] } }
        var snapshot = APISnapshot(originalTransactionId: "", transactions: [], renewalInfos: [])
        for fact in facts {
            switch fact {
            case .transaction(let tx): snapshot.transactions.append(tx)
            case .renewal(let r): snapshot.renewalInfos.append(r)
            }
        }
        knowledge.learn(.apiSnapshot(snapshot))
        served.entries.append(.init(step: step, facts: snapshot))
        return true
    }
}
