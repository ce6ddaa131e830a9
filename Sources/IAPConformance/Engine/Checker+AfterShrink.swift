// What runs on a shrunk counterexample before it is reported: whether an action can still go, and whether a
// backend's wrong answer is only its lag.
import IAPModel
import IAPSimulator
import IAPValidatorAPI
import PropertyEngine

extension Checker {
    /// Whether any one action of the shrunk choices can be deleted with the failure kept, each tried once (at most
    /// ``CheckOptions/maxActions`` attempts past the budget). Asked when the attempt budget ended a shrink: the
    /// passes spend most of a budget lowering values one by one, so a budget's end rarely means that fewer actions
    /// were within reach, and a note saying "a larger budget may give a smaller case" misled when none was.
    package func anActionCanGo(
        _ choices: [UInt64], generator: CaseGenerator, property: PropertyName, outcome: CaseOutcome, signed: Bool
    ) -> Bool {
        let src = ChoiceSource(replaying: choices)
        _ = generator.generate(property, src)
        for span in src.spans where span.label == "action" && span.end <= choices.count {
            var candidate = choices
            candidate.removeSubrange(span.start..<span.end)
            let (c, _) = generator.generate(property, ChoiceSource(replaying: candidate))
            if Self.sameFailure(CaseRunner.run(c, against: validator, signed: signed), outcome) { return true }
        }
        return false
    }

    /// Whether a backend's wrong answer is right a moment later: the counterexample replayed with each differing
    /// question asked again for up to a second. A backend that applies deliveries after answering them (a queue)
    /// and says nothing of it (no `"settleMs"`) fails on its lag alone (docs/http-target.md#asynchronous-backends).
    package func settlesLater(_ best: (GeneratedCase, CaseOutcome)) -> Bool {
        // A race and a kill need the backend itself, not a wrapper.
        guard options.outOfProcess, validator.settleSeconds == 0, case .discrepancy(let d) = best.1, d.kind == .answer,
            ![.parallelDelivery, .durableAck].contains(best.0.property)
        else { return false }
        let probe = SettlingProbe(validator, seconds: 1)
        return if case .passed = CaseRunner.run(best.0, against: probe, signed: options.signed) { true } else { false }
    }
}

/// A validator as it is, but given a settle time (``Validator/settleSeconds``): what ``Checker`` replays a
/// backend's counterexample on to tell its lag from a wrong answer (docs/http-target.md#asynchronous-backends).
final class SettlingProbe: Validator {
    let inner: any Validator
    let settleSeconds: Double

    init(_ inner: any Validator, seconds: Double) {
        self.inner = inner
        settleSeconds = seconds
    }

    var name: String { inner.name }
    var profile: ValidatorProfile { inner.profile }
    var isolation: CaseIsolation { inner.isolation }
    func prepare() throws(ValidatorFailure) { try inner.prepare() }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        try inner.deliver(delivery, now: now)
    }
    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        try inner.entitlements(query)
    }
    func verifiesLater(_ channel: DeliveryChannel) -> Bool { inner.verifiesLater(channel) }
    var mayAskTheAPI: Bool { inner.mayAskTheAPI }
    func serveAPI(_ source: APIAnswerSource?) { inner.serveAPI(source) }
    func takeServedByAPI() -> [String] { inner.takeServedByAPI() }
}
