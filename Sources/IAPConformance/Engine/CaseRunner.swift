import Dispatch
import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// Runs one case against a validator: reset (with the test PKI's root as trust anchor), then each step in order —
/// deliveries rendered as signed artifacts (forged ones by the forgery kit), the oracle learning the same genuine
/// facts; at every question the two answers must agree. Stops at the first discrepancy.
public enum CaseRunner {
    public static func run(_ c: GeneratedCase, against v: any Validator, signed: Bool = true) -> CaseOutcome {
        var tally = ForgeryTally()
        return run(c, against: v, signed: signed, tally: &tally)
    }

    /// With `signed: false` (in-process validators only) facts travel decoded and forged artifacts are skipped:
    /// entitlement logic at full speed, no cryptography.
    public static func run(_ c: GeneratedCase, against v: any Validator, signed: Bool = true, tally: inout ForgeryTally)
        -> CaseOutcome
    {
        // A validator that keeps its state meets every run of a case under ids no earlier run used; a discrepancy
        // says which, for the backend's logs.
        guard v.isolation == .namespace else { return runAsGiven(c, against: v, signed: signed, tally: &tally) }
        let namespace = IDNamespace.next()
        let outcome = runAsGiven(namespace.apply(c), against: v, signed: signed, tally: &tally)
        guard case .discrepancy(var d) = outcome else { return outcome }
        d.backendIds = .init(namespace: namespace.value)
        return .discrepancy(d)
    }

    static func runAsGiven(_ c: GeneratedCase, against v: any Validator, signed: Bool, tally: inout ForgeryTally)
        -> CaseOutcome
    {
        if c.property == .parallelDelivery, let sides = raceSides(v) {
            return runParallel(c, against: v, sides: sides, signed: signed, race: &tally.race)
        }
        let decodedPath = signed ? nil : v as? any DecodedDeliveryValidator
        let pki = TestPKI.harness
        if let failure = reset(v, for: c) { return failure }
        // After the reset: a job's subprocess says its hello (and so its profile) when it starts there.
        let profile = v.profile
        let renderer = ArtifactRenderer(pki: pki, appAppleId: c.config.catalog.appAppleId)
        let kit = ForgeryKit(pki: pki)
        var knowledge = Knowledge(config: c.config)
        // A backend that calls Apple's API of its own accord gets Apple's answers as of each step.
        let api = APIService(c, for: v)
        defer { api?.serve(nil, on: v) }
        var questions = 0
        let restartable = c.property == .durableAck ? v as? any RestartableValidator : nil
        var deliveries = 0
        var acknowledged: [(ForgeryClass, DeliveryChannel)] = []
        var settled: UInt64 = 0  // when what a queue took that it must refuse has had its settle time
        for (i, step) in c.steps.enumerated() {
            switch step {
            case .deliver(let d):
                if decodedPath != nil && d.forgery != nil { continue }
                // A case planned for more channels (a corpus file) sends only what this validator takes.
                if !profile.accepts(d.delivery.channel) { continue }
                let verdict: DeliveryVerdict, expected: ExpectedVerdict
                api?.serve(v, at: d.arrival, clock: d.now, step: i)
                do {
                    (verdict, expected) = try send(d, to: v, decodedPath, renderer, kit, knowledge, c.config.policy)
                } catch {
                    return .validatorFailed(error, step: i)
                }
                let later = v.verifiesLater(d.delivery.channel)
                if let f = d.forgery {
                    // A replayed UUID may be acknowledged, and anything by a route that verifies later; it counts as
                    // rejected only if the answers show it changed nothing (the case passes to its end).
                    tally.record(f, on: d.delivery.channel, rejected: !verdict.isAccepted)
                    if verdict.isAccepted && (f.mayBeAcknowledged || later) {
                        acknowledged.append((f, d.delivery.channel))
                    }
                }
                api?.learnServed(from: v, into: &knowledge)
                if let wrong = wrongVerdict(d, verdict, expected, step: i, verifiesLater: later) {
                    return .discrepancy(api?.annotated(wrong) ?? wrong)
                }
                if later, verdict.isAccepted, case .refuse = expected { settled = settleDeadline(of: v) }
                if expected.learns(verdict) { knowledge.learn(d.delivery) }
                // Fault profile: kill the validator right after it acknowledged, at deterministic points of the case.
                deliveries += 1
                if let restartable, deliveries % 5 == 0 {
                    do {
                        try restartable.killAndRestart()
                    } catch {
                        return .validatorFailed(error, step: i)
                    }
                }
            case .query(let q):
                if q.isHindsight && !profile.questionsInHindsight { continue }  // asked about its present only
                questions += 1
                waitUntil(settled)
                do {
                    if let wrong = try question(c, q, step: i, v, &knowledge, profile: profile, api: api) {
                        return .discrepancy(api?.annotated(wrong) ?? wrong)
                    }
                } catch {
                    return .validatorFailed(error, step: i)
                }
            }
        }
        for (f, channel) in acknowledged { tally.reject(f, on: channel) }
        return .passed(questions: questions)
    }

    /// A delivery as the validator takes it (decoded, or rendered and signed; a forgery by the kit), and the
    /// verdict it must get.
    static func send(
        _ d: PlannedDelivery, to v: any Validator, _ decodedPath: (any DecodedDeliveryValidator)?,
        _ renderer: ArtifactRenderer, _ kit: ForgeryKit, _ knowledge: Knowledge, _ policy: Policy
    ) throws(ValidatorFailure) -> (DeliveryVerdict, ExpectedVerdict) {
        if let decodedPath {
            let expected = expectedVerdict(d, largestToken: nil, knowledge, policy: policy)
            return (try decodedPath.deliver(decoded: d.delivery, now: d.now), expected)
        }
        let signed = d.forgery.map { kit.render($0, d.delivery) } ?? renderer.render(d.delivery)
        let expected = expectedVerdict(d, largestToken: signed.largestToken, knowledge, policy: policy)
        return (try v.deliver(signed, now: d.now), expected)
    }

    /// A question, the API answering as of its instant: a validator that asked the API for its answer is asked
    /// again, against what the oracle now knows too.
    static func question(
        _ c: GeneratedCase, _ q: PlannedQuery, step: Int, _ v: any Validator, _ knowledge: inout Knowledge,
        profile: ValidatorProfile, api: APIService?
    ) throws(ValidatorFailure) -> Discrepancy? {
        api?.serve(v, at: q.appleTime, clock: q.isHindsight ? q.appleTime : q.query.at, step: step)
        let wrong = try wrongAnswer(c, q, step: step, v, knowledge, profile: profile)
        guard api?.learnServed(from: v, into: &knowledge) == true else { return wrong }
        let again = try wrongAnswer(c, q, step: step, v, knowledge, profile: profile)
        api?.learnServed(from: v, into: &knowledge)  // the same facts again, taken at their step
        return again
    }

    /// After a route that verifies later received what it must refuse: its effect, if any, shows once the validator's
    /// queue has had its settle time (docs/http-target.md#asynchronous-backends). The next question waits for that
    /// instant, not the delivery: the deliveries between run meanwhile, and several such share one wait.
    static func settleDeadline(of v: any Validator) -> UInt64 {
        DispatchTime.now().uptimeNanoseconds + UInt64(min(v.settleSeconds, 60) * 1e9)
    }

    static func waitForTheQueue(of v: any Validator) { waitUntil(settleDeadline(of: v)) }

    static func waitUntil(_ deadline: UInt64) {
        let now = DispatchTime.now().uptimeNanoseconds
        if deadline > now { usleep(UInt32((deadline - now) / 1000)) }
    }

    /// The verdict a delivery must get.
    enum ExpectedVerdict: Equatable {
        case accept
        /// Refused, and why: the forgery class, or why the facts are not this app's.
        case refuse(String)
        /// Either verdict: a validly signed token of genuine content that only its size sets apart.
        case either

        /// Whether the oracle learns the delivery's facts, as the validator was right to take them.
        func learns(_ verdict: DeliveryVerdict) -> Bool { self == .accept || (self == .either && verdict.isAccepted) }
    }

    /// A genuine fact of this app is accepted; anything else is refused: a forgery (its class), an artifact of
    /// another app or environment (the reason the knowledge gives). A validly signed token that only its size sets
    /// apart may get either verdict unless the policy declares a limit, which then holds for every token, genuine or
    /// padded (docs/semantics.md#q19-token-size). `largestToken` is nil where nothing is rendered (decoded facts).
    static func expectedVerdict(_ d: PlannedDelivery, largestToken: Int?, _ knowledge: Knowledge, policy: Policy)
        -> ExpectedVerdict
    {
        let rejection = knowledge.rejection(d.delivery)
        let genuine = d.forgery == nil || d.forgery?.isHardeningOnly == true
        if let size = largestToken, genuine, rejection == nil {
            if let limit = policy.tokenSizeLimit {
                guard size <= limit else {
                    // The padded class keeps its name; a genuine token says its size.
                    return .refuse(
                        d.forgery.map { "forged: \($0.rawValue)" }
                            ?? "a token of \(size) bytes, over the policy's tokenSizeLimit of \(limit)")
                }
                return .accept
            }
            if d.forgery != nil { return .either }
        }
        if let f = d.forgery { return .refuse("forged: \(f.rawValue)") }
        if let rejection { return .refuse(rejection) }
        return .accept
    }

    /// The discrepancy when the validator's verdict is not the expected one. A forgery that may be acknowledged (a
    /// replayed notification UUID) is judged by the answers instead, and so is anything a route that verifies later
    /// (`verifiesLater`) accepted: its acceptance says only that the delivery was received.
    static func wrongVerdict(
        _ d: PlannedDelivery, _ verdict: DeliveryVerdict, _ expected: ExpectedVerdict, step: Int,
        verifiesLater: Bool = false
    ) -> Discrepancy? {
        let shouldAccept: Bool
        let wanted: String
        switch expected {
        case .either: return nil
        case .accept: (shouldAccept, wanted) = (true, "accepted")
        case .refuse(let why): (shouldAccept, wanted) = (false, "rejected (\(why))")
        }
        guard verdict.isAccepted != shouldAccept, !(d.forgery?.mayBeAcknowledged ?? false) else { return nil }
        if verifiesLater && verdict.isAccepted { return nil }
        return Discrepancy(
            property: shouldAccept ? .robustInput : .forgeryRejected, kind: .verdict, step: step, expected: wanted,
            observed: describe(verdict), differences: [], expectedAnswer: nil, observedAnswer: nil)
    }

    /// The discrepancy when the validator's answer to a question differs from the oracle's judgement (on the fields
    /// the facts decide and the validator's profile declares).
    static func wrongAnswer(
        _ c: GeneratedCase, _ q: PlannedQuery, step: Int, _ v: any Validator, _ knowledge: Knowledge,
        profile: ValidatorProfile
    ) throws(ValidatorFailure) -> Discrepancy? {
        let judgement = Oracle.judge(knowledge, user: q.query.userId, at: q.query.at)
        let expected = judgement.answer
        let (observed, diffs, lines) = try settledAnswer(
            q.query, v, judgement, profile: profile, deliveredAgain: deliversAgain(c, through: step))
        guard !diffs.isEmpty else { return nil }
        return Discrepancy(
            property: attribute(c, step: step), kind: .answer, step: step,
            expected: summary(expected, profile: profile),
            observed: summary(observed, profile: profile), differences: lines, expectedAnswer: expected,
            observedAnswer: observed, differenceKeys: diffs.map(key))
    }

    /// The validator's answer to `query` and how it differs from the judgement. A validator that applies deliveries
    /// after acknowledging them (``Validator/settleSeconds``, docs/http-target.md#asynchronous-backends) is asked
    /// again, every 20 ms, while the answer differs and its settle time has not passed: the last answer counts.
    static func settledAnswer(
        _ query: EntitlementQuery, _ v: any Validator, _ judgement: Oracle.Judgement, profile: ValidatorProfile,
        deliveredAgain: Bool
    ) throws(ValidatorFailure) -> (EntitlementAnswer, [AnswerDifference], [String]) {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(v.settleSeconds, 0) * 1e9)
        while true {
            let observed = try v.entitlements(query)
            let (diffs, lines) = differences(
                observed, from: judgement, profile: profile, deliveredAgain: deliveredAgain)
            if diffs.isEmpty || DispatchTime.now().uptimeNanoseconds >= deadline { return (observed, diffs, lines) }
            usleep(20_000)
        }
    }

    /// Resets the validator for a case, trusting the test PKI's root; the failure outcome if it fails.
    static func reset(_ v: any Validator, for c: GeneratedCase) -> CaseOutcome? {
        var config = c.config
        config.trustedRoots = TestPKI.harness.trustedRoots
        do {
            try v.reset(config)
            return nil
        } catch {
            return .validatorFailed(error, step: -1)
        }
    }

    /// Whether the case sent an artifact again (a duplicate, a retry, a replay) up to `step`.
    static func deliversAgain(_ c: GeneratedCase, through step: Int) -> Bool {
        c.steps.prefix(step + 1).contains {
            if case .deliver(let d) = $0 { !d.label.isFirstSending } else { false }
        }
    }

    /// The property a wrong answer violates: the case's own property when one of its perturbations (a duplicate,
    /// a retry, a forged or unknown artifact, a skewed clock) happened before the question, else plain
    /// entitlement agreement.
    package static func attribute(_ c: GeneratedCase, step: Int) -> PropertyName {
        for s in c.steps.prefix(step + 1) {
            switch s {
            case .deliver(let d):
                if !d.label.isFirstSending || d.now != d.arrival {
                    return c.property
                }
            case .query(let q):
                // A question in hindsight is about another instant by design, not under a skewed clock.
                if !q.isHindsight
                    && (q.query.at != q.appleTime || (q.query.deviceTime.map { $0 != q.query.at } ?? false))
                {
                    return c.property
                }
            }
        }
        return .entitlementAgreement
    }

    /// The differences that count — declared fields only, dates compared to the validator's precision — and their
    /// lines, with a hint when the validator's expiries are the oracle's cut to seconds (it may keep seconds).
    /// `deliveredAgain`: the case sent some artifact more than once before the question, which a balance off by a
    /// whole factor may come from as well.
    static func differences(
        _ observed: EntitlementAnswer, from judgement: Oracle.Judgement, profile: ValidatorProfile,
        deliveredAgain: Bool = false
    ) -> ([AnswerDifference], [String]) {
        let compared = observed.snapping(to: judgement.answer, profile: profile)
        let diffs = compared.answerDifferences(from: judgement.answer, ignoring: judgement.undetermined).filter {
            profile.compares($0.key)
        }
        var lines = diffs.map(\.text)
        let cut = observed.expiriesCutToSeconds(comparedTo: judgement.answer)
        if profile.datePrecision < 1000, !cut.isEmpty, diffs.contains(where: { $0.field == .expiresDate }) {
            lines.append(
                "(the validator's expiry of \(cut.joined(separator: ", ")) is the expected one cut to the second: if it keeps dates to the second, declare \"precision\": \"s\" on the date in the target file's answer mapping, docs/http-target.md#precision)"
            )
        }
        let balanceDiffers = diffs.contains {
            if case .consumable = $0.subject { true } else { false }
        }
        if balanceDiffers, let hint = unitsHint(observed, judgement.answer, deliveredAgain: deliveredAgain) {
            lines.append(hint)
        }
        return (diffs, lines)
    }

    /// Every differing consumable balance a whole multiple of the expected one (or all a whole fraction): the
    /// backend may count more units per purchase than the mapping's `unitsPerPurchase` says.
    /// When the case delivered something more than once, a balance some times the expected one is first of all
    /// what a backend crediting every delivery of a purchase gives: the hint says so before naming the mapping, so
    /// that a real double credit is not "fixed" in the target file.
    package static func unitsHint(
        _ observed: EntitlementAnswer, _ expected: EntitlementAnswer, deliveredAgain: Bool = false
    ) -> String? {
        var ratios: Set<String> = []
        for e in expected.consumables where e.balance != 0 {
            let o = observed.consumables.first { $0.productId == e.productId }?.balance ?? 0
            guard o != e.balance, o != 0 else { continue }
            if o % e.balance == 0 {
                ratios.insert("\(o / e.balance) times")
            } else if e.balance % o == 0 {
                ratios.insert("1/\(e.balance / o) of")
            } else {
                return nil
            }
        }
        guard ratios.count == 1, let r = ratios.first else { return nil }
        if deliveredAgain && r.hasSuffix("times") {
            return
                "(every differing balance is \(r) the expected one, and this case delivered some artifacts more than once: a backend that credits every delivery of a purchase, not each transactionId once, answers so; only if it counts another number of units per purchase is it the target file's \"unitsPerPurchase\" on answer.consumables, docs/http-target.md#consumable-balances)"
        }
        return
            "(every differing balance is \(r) the expected one: if the backend counts another number of units per purchase, set \"unitsPerPurchase\" on answer.consumables in the target file to it, docs/http-target.md#consumable-balances)"
    }

    static func key(_ d: AnswerDifference) -> String { "\(d.subject)/\(d.field.rawValue)" }

    static func describe(_ v: DeliveryVerdict) -> String {
        switch v {
        case .accepted: "accepted"
        case .rejected(let r): "rejected (\(r))"
        }
    }

    /// A one-line summary of an answer: the entitled products with their states (when the validator answers them)
    /// and the balances, or for a validator that answers in entitlements and not products, its active entitlements.
    public static func summary(_ a: EntitlementAnswer, profile: ValidatorProfile = .undeclared) -> String {
        let byProducts = profile.answers.contains { $0.list == .products } || !profile.answersEntitlements
        let active =
            byProducts
            ? a.products.filter(\.active).map { p in
                p.state == .active || !profile.declares(.productsState)
                    ? p.productId : "\(p.productId) (\(p.state.rawValue))"
            }
            : a.entitlements.filter(\.active).map { e in
                // A state the validator does not answer is not compared, so not shown either.
                e.state == .active || !profile.declares(.entitlementsState)
                    ? e.entitlementId : "\(e.entitlementId) (\(e.state.rawValue))"
            }
        let coins =
            profile.declares(.consumables)
            ? a.consumables.filter { $0.balance != 0 }.map { "\($0.productId)×\($0.balance)" } : []
        let all = active + coins
        return all.isEmpty ? "nothing" : all.joined(separator: ", ")
    }
}
