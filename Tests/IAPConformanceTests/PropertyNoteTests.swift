import IAPSimulator
import IAPTesting
import Testing

@testable import IAPConformance

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
