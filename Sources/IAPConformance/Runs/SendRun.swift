import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// `iapcheck send` as a library call (docs/send.md): one customer's history, rebuilt from its script, rendered and
/// delivered as `check` delivers it — on time, once, over the validator's channels — with only what the last send
/// added sent to the validator, then one question about the customer at its clock, answered by the validator and
/// by the oracle.
public struct SendRun: Sendable {
    public var catalog: Catalog
    public var policy: Policy
    public var script: CustomerScript
    /// The customer's ids (the backend knows them from earlier sends; a new customer gets a namespace of its own).
    public var namespace: IDNamespace
    /// Keys (``key(_:)``) of the deliveries earlier sends made.
    public var delivered: Set<String>

    public init(
        catalog: Catalog, policy: Policy, script: CustomerScript, namespace: IDNamespace, delivered: Set<String> = []
    ) {
        self.catalog = catalog
        self.policy = policy
        self.script = script
        self.namespace = namespace
        self.delivered = delivered
    }

    /// The history as a case: every delivery in arrival order, then the question about the customer at `askAt`
    /// (or just after the last arrival, when later).
    /// `about`: the instant the question is about, when earlier than the one it is asked at (in hindsight).
    public func plan(profile: ValidatorProfile, askAt: Millis, about: Millis? = nil) throws(ScriptError)
        -> GeneratedCase
    {
        let sim = try script.replay(catalog: catalog, policy: policy)
        let history = GeneratedHistory.unperturbed(sim)
        let planned = DeliveryPlanner(perturbations: Perturbations(), channels: Set(profile.channels)).plan(history)
        let deliveries = appOpenings(
            sim, planned.compactMap { s -> PlannedDelivery? in if case .deliver(let d) = s { d } else { nil } },
            channels: Set(profile.channels))
        var steps = deliveries.map(CaseStep.deliver)
        let lastArrival = deliveries.map(\.arrival).max()
        let at = max(askAt, (lastArrival ?? askAt) + 1)
        let who = sim.persons[CustomerScript.customer]
        steps.append(
            .query(
                PlannedQuery(
                    appleTime: at, query: EntitlementQuery(userId: who.accountId, at: min(about ?? at, at)),
                    person: CustomerScript.customer, hindsight: about.map { $0 < at } == true ? true : nil)))
        let config = ValidatorConfig(
            catalog: profile.answersEntitlements ? sim.catalog.withEntitlements() : sim.catalog, policy: policy)
        let c = GeneratedCase(
            property: .entitlementAgreement, config: config, persons: sim.persons, origin: sim.origin ?? sim.start,
            events: sim.events, steps: steps,
            notificationKinds: sim.notifications.map { n in
                n.payload.notificationType.rawValue + (n.payload.subtype.map { "/" + $0.rawValue } ?? "")
            }, lost: [])
        return namespace.apply(c).holdingQuestions(at: profile.datePrecision, profile: profile)
    }

    /// Each `open-app` send: the app submits every transaction of the customer it has not submitted (bought outside
    /// the app, renewed while it was closed), as StoreKit's transaction updates hand them over at launch; the
    /// deliveries in arrival order.
    func appOpenings(_ sim: StoreSimulator, _ planned: [PlannedDelivery], channels: Set<DeliveryChannel>)
        -> [PlannedDelivery]
    {
        guard channels.contains(.app) else { return planned }
        var out = planned
        var submitted: Set<String> = []
        for d in planned {
            if case .appTransaction(let s) = d.delivery { submitted.insert(s.transaction.transactionId) }
        }
        for step in script.steps where step.scenario == .openApp {
            for c in sim.creations
            where c.person == CustomerScript.customer && c.time < step.at && !submitted.contains(c.transactionId) {
                guard let tx = sim.latest(c.transactionId, at: step.at) else { continue }
                submitted.insert(c.transactionId)
                let user = sim.persons[CustomerScript.customer].accountId
                out.append(
                    PlannedDelivery(
                        arrival: step.at, now: step.at,
                        delivery: .appTransaction(
                            AppTransactionSubmission(userId: user, transaction: tx, deviceTime: step.at)),
                        label: .app, person: CustomerScript.customer))
            }
        }
        return out.enumerated().sorted { ($0.element.arrival, $0.offset) < ($1.element.arrival, $1.offset) }.map(
            \.element)
    }

    /// The customer's transactions the app has not submitted by `t` that were made outside it: the backend cannot
    /// tell whose they are until it does (`open-app`).
    public func awaitingTheApp(_ c: GeneratedCase, at t: Millis) throws(ScriptError) -> [String] {
        let sim = try script.replay(catalog: catalog, policy: policy)
        var submitted: Set<String> = []
        for case .deliver(let d) in c.steps where d.arrival <= t {
            if case .appTransaction(let s) = d.delivery { submitted.insert(s.transaction.transactionId) }
        }
        return sim.creations.filter { cr in
            cr.person == CustomerScript.customer && !cr.inApp && cr.time <= t
                && !submitted.contains(namespace.transactionId(cr.transactionId))
                && sim.latest(cr.transactionId)?.transactionReason != .renewal
        }.map { namespace.transactionId($0.transactionId) }
    }

    /// What the App Store Server API answers at `t` about each of the customer's chains, in the customer's ids: the
    /// mock App Store serves it, for a backend that asks on its own.
    public func currentSnapshots(at t: Millis) throws(ScriptError) -> [Delivery] {
        let sim = try script.replay(catalog: catalog, policy: policy)
        return sim.chains(of: CustomerScript.customer).map {
            namespace.apply(.apiSnapshot(sim.history(asking: $0.id, at: t)))
        }
    }

    /// A delivery's identity across sends: the same artifact content, whatever send renders it.
    public static func key(_ d: Delivery) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in (try? encoder.encode(d)) ?? Data() { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return String(h, radix: 16)
    }

    /// What one delivery of this send did.
    public struct Sent: Sendable {
        public var step: Int
        public var delivery: PlannedDelivery
        /// The artifacts as sent (a dry run writes them).
        public var signed: SignedDelivery
        public var verdict: DeliveryVerdict
        /// What the validator had to answer: `accepted`, `rejected (why)`, or `accepted or rejected` where Apple
        /// leaves the verdict open.
        public var expected: String
        /// The verdict is one the oracle allows.
        public var asExpected: Bool
        /// The exchange as the transport saw it (`POST /apple/notifications → 200`), when it says.
        public var exchange: String?
    }

    /// How the send ended.
    public struct Outcome: Sendable {
        public var sent: [Sent] = []
        /// Earlier sends' deliveries, sent again first to a validator that remembers nothing between sends.
        public var resent: [Sent] = []
        /// Keys of every delivery the validator has now had (earlier sends' and this one's).
        public var delivered: Set<String> = []
        public var expected: EntitlementAnswer?
        public var observed: EntitlementAnswer?
        /// The first wrong verdict or the wrong answer, with the step it happened at.
        public var discrepancy: Discrepancy?
        public var failure: ValidatorFailure?
        /// The question asked.
        public var question: PlannedQuery?
        /// Lines saying how the answers differ (empty when they agree).
        public var differences: [String] = []
        /// The fields of the expected answer the facts leave open, which are not compared.
        public var open: Set<AnswerDifference.Key> = []
    }

    /// Delivers what is new in `c` (a ``plan(profile:askAt:)``) and asks the question. `replaysEarlier`: the validator
    /// remembers nothing of earlier sends (it lives in this process, or a new one), so their deliveries go first,
    /// quietly. `resets`: the validator is told the app's configuration and the test PKI's root first (a backend's
    /// reset route forgets its state: the first send of a state file only). `exchange` describes the transport's last
    /// request, when it can. `asks: false` (a dry run): the question is not put to the validator, only the oracle.
    public func run(
        _ c: GeneratedCase, against v: any Validator, replaysEarlier: Bool, resets: Bool, asks: Bool = true,
        exchange: () -> String? = { nil }
    ) -> Outcome {
        var out = Outcome()
        out.delivered = delivered
        if resets || replaysEarlier, case .validatorFailed(let e, _)? = CaseRunner.reset(v, for: c) {
            out.failure = e
            return out
        }
        let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
        var knowledge = Knowledge(config: c.config)
        for (i, step) in c.steps.enumerated() {
            switch step {
            case .deliver(let d):
                let key = Self.key(d.delivery)
                let earlier = delivered.contains(key)
                let signed = renderer.render(d.delivery)
                let expected = CaseRunner.expectedVerdict(
                    d, largestToken: signed.largestToken, knowledge, policy: c.config.policy)
                if earlier && !replaysEarlier {
                    if expected == .accept { knowledge.learn(d.delivery) }
                    continue
                }
                let verdict: DeliveryVerdict
                do {
                    verdict = try v.deliver(signed, now: d.now)
                } catch {
                    out.failure = error
                    return out
                }
                if expected.learns(verdict) { knowledge.learn(d.delivery) }
                out.delivered.insert(key)
                let wanted: String =
                    switch expected {
                    case .accept: "accepted"
                    case .either: "accepted or rejected"
                    case .refuse(let why): "rejected (\(why))"
                    }
                let wrong = CaseRunner.wrongVerdict(
                    d, verdict, expected, step: i, verifiesLater: v.verifiesLater(d.delivery.channel))
                let sent = Sent(
                    step: i, delivery: d, signed: signed, verdict: verdict, expected: wanted, asExpected: wrong == nil,
                    exchange: exchange())
                if earlier { out.resent.append(sent) } else { out.sent.append(sent) }
                if out.discrepancy == nil, let wrong {
                    out.discrepancy = wrong
                }
            case .query(let q):
                out.question = q
                if asks {
                    ask(q, step: i, c, v, knowledge, into: &out)
                } else {
                    out.expected = Oracle.judge(knowledge, user: q.query.userId, at: q.query.at).answer
                }
            }
        }
        return out
    }

    /// The question about the customer: both answers, and the discrepancy when they differ.
    func ask(
        _ q: PlannedQuery, step: Int, _ c: GeneratedCase, _ v: any Validator, _ knowledge: Knowledge,
        into out: inout Outcome
    ) {
        let judgement = Oracle.judge(knowledge, user: q.query.userId, at: q.query.at)
        (out.expected, out.open) = (judgement.answer, judgement.undetermined)
        do {
            let (observed, diffs, lines) = try CaseRunner.settledAnswer(
                q.query, v, judgement, profile: v.profile, deliveredAgain: false)
            out.observed = observed
            out.differences = lines
            guard !diffs.isEmpty, out.discrepancy == nil else { return }
            out.discrepancy = Discrepancy(
                property: .entitlementAgreement, kind: .answer, step: step,
                expected: CaseRunner.summary(judgement.answer, profile: v.profile),
                observed: CaseRunner.summary(observed, profile: v.profile), differences: lines,
                expectedAnswer: judgement.answer, observedAnswer: observed, differenceKeys: diffs.map(CaseRunner.key))
        } catch {
            out.failure = error
        }
    }
}
