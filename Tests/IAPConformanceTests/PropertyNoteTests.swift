import IAPConformance
import IAPModel
import IAPSimulator
import IAPTesting
import Testing

/// The line under a FAIL headline agrees with the timeline: "before any of this property's perturbations" only when
/// no perturbed delivery came by the failing step.
@Suite struct PropertyNoteTests {
    static func discrepancy(_ property: PropertyName, _ kind: Discrepancy.Kind, step: Int) -> Discrepancy {
        Discrepancy(
            property: property, kind: kind, step: step, expected: "accepted", observed: "rejected", differences: [])
    }

    @Test func aRefusedDuplicateIsNotSaidToComeBeforeThePerturbations() throws {
        var checked = 0
        for seed in UInt64(1)...60 {
            let (c, _) = Fixtures.generator().generate(.idempotentDelivery, .init(seed: seed))
            let duplicate = c.steps.firstIndex {
                if case .deliver(let d) = $0 { d.label == .duplicate } else { false }
            }
            guard let i = duplicate else { continue }
            checked += 1
            let onDuplicate = CheckRun.propertyNote(
                Self.discrepancy(.robustInput, .verdict, step: i), in: c, caseProperty: .idempotentDelivery)
            #expect(!onDuplicate.contains("before any"), "\(onDuplicate)")
            #expect(onDuplicate.contains("robust-input"))
            // The first step, before any perturbation: the plain property is named as such.
            if CaseRunner.attribute(c, step: 0) == .entitlementAgreement {
                let plain = CheckRun.propertyNote(
                    Self.discrepancy(.entitlementAgreement, .answer, step: 0), in: c, caseProperty: .idempotentDelivery)
                #expect(plain.contains("before any of this property's perturbations"))
            }
        }
        #expect(checked > 0, "no generated case had a duplicate delivery")
    }
}

/// A balance off by a whole factor names the mapping's `unitsPerPurchase` (docs/http-target.md#consumable-balances).
@Suite struct UnitsHintTests {
    static func answer(_ balance: Int) -> EntitlementAnswer {
        EntitlementAnswer(consumables: [ConsumableBalance(productId: "coins", balance: balance)])
    }

    @Test func aBalanceTenTimesTheExpectedOneNamesUnitsPerPurchase() {
        #expect(CaseRunner.unitsHint(Self.answer(10), Self.answer(1))?.contains("10 times") == true)
        #expect(CaseRunner.unitsHint(Self.answer(1), Self.answer(4))?.contains("1/4 of") == true)
        #expect(CaseRunner.unitsHint(Self.answer(3), Self.answer(2)) == nil)
        #expect(CaseRunner.unitsHint(Self.answer(2), Self.answer(2)) == nil)
    }

    /// Twice the expected balance in a case that delivered a purchase twice is first of all a double credit: the
    /// hint must not send the reader to the target file to hide it.
    @Test func aDoubleBalanceAfterARepeatedDeliveryNamesTheDoubleCreditFirst() throws {
        let hint = try #require(CaseRunner.unitsHint(Self.answer(2), Self.answer(1), deliveredAgain: true))
        #expect(hint.contains("credits every delivery of a purchase"))
        #expect(
            hint.firstRange(of: "credits every delivery")!.lowerBound
                < hint.firstRange(of: "unitsPerPurchase")!.lowerBound)
        // A fraction is no double credit: the mapping's hint as before.
        #expect(
            CaseRunner.unitsHint(Self.answer(1), Self.answer(2), deliveredAgain: true)?.hasPrefix(
                "(every differing balance is 1/2 of") == true)
        #expect(CaseRunner.unitsHint(Self.answer(2), Self.answer(1))?.contains("credits every delivery") == false)
    }
}
