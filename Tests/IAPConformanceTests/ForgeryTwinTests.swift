import Foundation
import IAPConformance
import IAPModel
import IAPReference
import Testing

/// The forgery probe credits a rejection only when the class's genuine twin was accepted.
@Suite struct ForgeryTwinTests {
    /// Verifies every signature as the reference does, then refuses whatever passed: it refuses every forgery, and
    /// every genuine artifact as well.
    final class RefusesEverything: ReferenceValidator, @unchecked Sendable {
        override func ingestApp(_ s: AppTransactionSubmission) -> DeliveryVerdict { .rejected(reason: "closed") }
        override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
            .rejected(reason: "closed")
        }
        override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
            .rejected(reason: "closed")
        }
    }

    @Test func aValidatorRefusingGenuineArtifactsIsCreditedWithNoForgeryClass() {
        let results = CertificationSuite.probeForgeries(RefusesEverything(), catalog: .standard, policy: .default)
        #expect(results.count >= 25)
        let credited = results.filter(\.rejected).map(\.name)
        #expect(credited.isEmpty, "credited although genuine artifacts are refused: \(credited)")
        #expect(results.allSatisfy { $0.genuineRefused == "closed" && $0.reason?.contains("genuine twin") == true })
    }

    /// The reference accepts every twin: every class is credited, none says its twin was refused.
    @Test func theReferenceIsCreditedWithEveryClass() {
        let results = CertificationSuite.probeForgeries(ReferenceValidator(), catalog: .standard, policy: .default)
        #expect(results.allSatisfy { $0.genuineRefused == nil }, "\(results.filter { $0.genuineRefused != nil })")
        let notRejected = results.filter { !$0.rejected }.map { "\($0.name): \($0.reason ?? "")" }
        // A replayed notification is acknowledged as a repeat: allowed, and said so, not counted as a rejection.
        #expect(
            notRejected == [
                "replayed-notification-uuid: acknowledged as a repeat, which is allowed when the answers do not change"
            ], "\(notRejected)")
        #expect(results.allSatisfy { $0.holds })
    }

    /// Refuses genuine app transactions only: the classes probed on the app channel are not credited; those on
    /// the notification and legacy channels are.
    final class RefusesAppTransactions: ReferenceValidator, @unchecked Sendable {
        override func ingestApp(_ s: AppTransactionSubmission) -> DeliveryVerdict { .rejected(reason: "no app route") }
    }

    @Test func onlyTheClassesWhoseTwinWasRefusedLoseTheirCredit() {
        let results = CertificationSuite.probeForgeries(RefusesAppTransactions(), catalog: .standard, policy: .default)
        let byName = Dictionary(uniqueKeysWithValues: results.map { ($0.name, $0) })
        #expect(byName["tampered-payload"]?.genuineRefused == "no app route")
        #expect(byName["wrong-app-apple-id"]?.rejected == true)
        #expect(byName["legacy-error-status"]?.rejected == true)
        #expect(byName["replayed-notification-uuid"]?.allowed == true)
    }
}
