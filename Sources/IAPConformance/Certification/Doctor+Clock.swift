import IAPModel
import IAPOracle
import IAPValidatorAPI

/// The doctor's clock check: whether the answers follow the instants iapcheck asks about.
extension DoctorSession {
    /// What to check when an answer never shows the purchase active: the mapping and the ids, before the clock.
    static func neverActiveFix(_ subject: String, entitlements: Bool, clockFix: String) -> String {
        let kind = entitlements ? "entitlement" : "product"
        return
            "check that the backend knows the \(kind) as \(subject) (the catalog's product ids, --entitlements and --bundle-id must be the backend's own), "
            + "that the answer mapping's `each`, `key` and `active` pointers find it in the backend's response, and that the purchase was accepted above"
            + "; if all of that holds and the backend lists only what is active, it may not read the clock iapcheck sets: \(clockFix)"
    }

    /// Whether a product or entitlement appears in an answer at all, active or not.
    static func listed(_ a: EntitlementAnswer, _ subject: String, entitlements: Bool) -> Bool {
        entitlements
            ? a.entitlements.contains { $0.entitlementId == subject }
            : a.products.contains { $0.productId == subject }
    }

    /// Whether a product or entitlement is active in an answer.
    static func active(_ a: EntitlementAnswer, _ subject: String, entitlements: Bool) -> Bool {
        entitlements
            ? a.entitlements.first { $0.entitlementId == subject }?.active ?? false
            : a.products.first { $0.productId == subject }?.active ?? false
    }

    /// A minute before the purchase, a minute before its expiry and a minute after it, the answers must be the
    /// oracle's: inactive, active, inactive. A validator that does not read the clock iapcheck sets answers the same
    /// at two of them (whichever its own clock says): false then. (A minute before the purchase catches a backend on
    /// the wall clock even where iapcheck derives `active` from a mapped expiry.) A purchase that never expires (a
    /// non-consumable) is asked about a minute before and a minute after it: inactive, active.
    mutating func checkClock(_ s: DoctorScenario, knowledge: Knowledge, profile: ValidatorProfile) -> Bool {
        let entitlements = profile.answersEntitlements
        guard profile.declares(entitlements ? .entitlementsActive : .productsActive) else {
            add("clock", .skipped, "needs an active field in the answers (products or entitlements)")
            return true
        }
        let start = DoctorScenario.start
        // A validator asked about its present only is never asked about the minute before a purchase it holds, but
        // where `active` is read off the expiry nothing else shows whether it reads the clock (judged below).
        let before =
            profile.questionsInHindsight || doctor.hints.activeFromExpiry ? [start - CivilTime.msPerMinute] : []
        let instants =
            s.expiry.map { e in before + [e - CivilTime.msPerMinute, e + CivilTime.msPerMinute] }
            ?? before + [start + CivilTime.msPerMinute]
        let expected = instants.map {
            Self.active(Oracle.judge(knowledge, user: s.user, at: $0).answer, s.subject, entitlements: entitlements)
        }
        if before.isEmpty && s.expiry == nil {
            add(
                "clock", .skipped,
                "asked about its present only, a purchase that never expires shows nothing of the clock (\(s.subject) is active from its purchase on)"
            )
            return true
        }
        guard expected.contains(true) && expected.contains(false) else {
            // A consumable: nothing in the answers turns on and off with the instant asked about.
            add(
                "clock", .skipped,
                "needs a subscription or a non-consumable in the catalog: \(s.subject) is never active")
            return true
        }
        do {
            var observed: [Bool] = []
            var listed = false
            for t in instants {
                // Apple, asked then, knows what was signed by then, and says each status as of then.
                api?.serve(v, at: t, clock: t)
                let a = try timed("entitlements") { (v: any Validator) throws(ValidatorFailure) in
                    try v.entitlements(EntitlementQuery(userId: s.user, at: t, deviceTime: t))
                }
                observed.append(Self.active(a, s.subject, entitlements: entitlements))
                listed = listed || Self.listed(a, s.subject, entitlements: entitlements)
            }
            return judgeClock(
                Observed(active: observed, listed: listed, expected: expected, askedBefore: !before.isEmpty), s,
                profile: profile)
        } catch {
            failed("clock", error, during: "entitlements")
            return false
        }
    }

    /// What the clock check saw: `active` at each instant asked, whether the subject was listed at all, the oracle's
    /// `active` there, and whether the first instant was the minute before the purchase.
    struct Observed {
        var active: [Bool]
        var listed: Bool
        var expected: [Bool]
        var askedBefore: Bool
    }

    /// The clock check's verdict on what it saw (``checkClock(_:knowledge:profile:)``).
    mutating func judgeClock(_ o: Observed, _ s: DoctorScenario, profile: ValidatorProfile) -> Bool {
        let entitlements = profile.answersEntitlements
        let start = DoctorScenario.start
        let names =
            (o.askedBefore ? ["a minute before the purchase"] : [])
            + (s.expiry == nil ? ["a minute after it"] : ["a minute before expiry", "a minute after it"])
        let when =
            "\(s.subject.debugDescription) "
            + zip(names, o.active).map { "\($0.1 ? "active" : "inactive") \($0.0)" }.joined(separator: ", ")
            + " (purchase \(CivilTime.iso8601(start))\(s.expiry.map { ", expiry \(CivilTime.iso8601($0))" } ?? ""))"
        // An empty answer read from a status the target says means "nothing" (a 404 of a mistyped route, say).
        var lastAnswerNotRead: String {
            guard case let (request, status?)? = doctor.hints.lastExchange(), status != 200 else { return "" }
            return " (the last answer was HTTP \(status) to \(request), read as holding nothing)"
        }
        if o.active == o.expected {
            add("clock", .ok, when)
            return true
        }
        if !o.listed && o.expected.contains(true) {
            // Never in the answer at all, whatever the instant: the answer is not read where the product shows,
            // or the backend names it otherwise; no clock explains that (a backend on its own clock still
            // lists what it holds, inactive).
            add(
                "answer", .misconfigured,
                "\(s.subject.debugDescription) is never in the answer, not even a minute \(s.expiry == nil ? "after its purchase" : "before its expiry"), when it is active: \(when)"
                    + lastAnswerNotRead,
                fix: Self.neverActiveFix(s.subject, entitlements: entitlements, clockFix: doctor.hints.clockFix))
            return false
        }
        // Expiry: the same answer on both sides of it; no expiry: on both sides of the purchase. Active before the
        // purchase as well tells a backend on its own clock only where iapcheck reads `active` off the expiry:
        // where the backend says it, an answer that changes at the expiry shows the clock is read, and the
        // purchase counted before its purchaseDate is a finding for check to show (see below).
        let last = o.active.count - 1
        let activeBefore = o.askedBefore && o.active[0] && !o.expected[0] && o.active[0] == o.active[1]
        // The same answer on both sides of the end comes first: nothing but the clock (or a never-ending expiry
        // where active is read off it) explains that.
        if activeBefore && !profile.questionsInHindsight && o.active[last - 1] != o.active[last] {
            add(
                "clock", .finding,
                "\(when): either the backend does not read the clock, or it lists a purchase before its purchaseDate, which a backend asked about its present only never meets (check asks it no such question)",
                fix: "if it is the clock: " + doctor.hints.clockFix)
            return true
        }
        let ownClockBeforePurchase = activeBefore && (doctor.hints.activeFromExpiry || s.expiry == nil)
        if o.active[last - 1] == o.active[last] || ownClockBeforePurchase {
            add(
                "clock", .misconfigured, "the answers do not follow the instants iapcheck asks about: \(when)",
                fix: doctor.hints.clockFix)
            return false
        }
        let early =
            o.askedBefore && o.active[0] && !o.expected[0]
            ? " (active before its purchaseDate: at an instant only transactions purchased by then count, docs/answers.md; check will show it with a shrunk history)"
            : ""
        add(
            "clock", .finding,
            when + "; expected " + o.expected.map { $0 ? "active" : "inactive" }.joined(separator: ", ") + early)
        return true
    }
}
