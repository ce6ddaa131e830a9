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
}
