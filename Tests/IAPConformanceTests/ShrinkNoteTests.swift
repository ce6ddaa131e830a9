import IAPConformance
import IAPMutants
import IAPSimulator
import PropertyEngine
import Testing

/// When the attempt budget ends a shrink, the FAIL line says whether fewer actions were within reach: the passes
/// spend most of a budget lowering values, and "a larger --shrink-attempts may give a smaller case" on a case none
/// of whose actions can go sent users to raise a budget for nothing.
@Suite struct ShrinkNoteTests {
    @Test func aBudgetEndedShrinkSaysWhenNoActionCanGo() throws {
        var o = CheckOptions()
        o.cases = 50
        let checker = Checker(options: o, validator: Mutants.named("ignore-revocation")!.make())
        let f = try #require(checker.run().failure)
        #expect(f.shrinkExhausted && f.actionsNeeded)
        let clause = f.shrinkClause(timeBudget: 60, timed: false)
        #expect(clause.contains("no single action can go") && !clause.contains("smaller case"), "\(clause)")
        // The probe itself: the case as first found has an action that can go (the shrink deleted some).
        let (original, source) = checker.generate(caseIndex: f.caseIndex)
        let outcome = CaseRunner.run(original, against: checker.validator, signed: false)
        #expect(
            checker.anActionCanGo(
                source.choices, generator: checker.generator(forCase: f.caseIndex), property: original.property,
                outcome: outcome, signed: false))
    }
}
