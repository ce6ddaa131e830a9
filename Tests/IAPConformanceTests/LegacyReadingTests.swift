import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPTesting
import IAPValidatorAPI
import Testing

/// Legacy `verifyReceipt` answers shaped as Apple's (docs/semantics.md#receipt-fields): a backend of a legacy app
/// that reads `latest_receipt_info` where Apple returns it, and `in_app` where it does not, is right; one that reads
/// either array alone is right exactly where Apple says that array holds everything.
@Suite struct LegacyReadingTests {
    /// The reference as a legacy app's backend: its facts come from verifyReceipt answers only.
    static func legacyOnly<V: ReferenceValidator>(_ v: V) -> V {
        v.profile = ValidatorProfile(answers: ValidatorProfile.undeclared.answers, channels: [.legacy])
        return v
    }

    /// Reads only `latest_receipt_info`, whatever the receipt holds.
    final class LatestOnly: ReferenceValidator {
        override var name: String { "latest-receipt-info-only" }
        override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
            guard var r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)) else {
                return super.ingestLegacyReceipt(userId: userId, body: body)
            }
            r.receipt?.in_app = []
            let stripped = (try? JSONEncoder().encode(r)) ?? Data(body.utf8)
            return super.ingestLegacyReceipt(userId: userId, body: String(decoding: stripped, as: UTF8.self))
        }
    }

    /// The built-in catalog with only the products of these kinds.
    static func catalog(_ kinds: Set<ProductKind>) -> Catalog {
        var c = Catalog.standard
        c.products = c.products.filter { kinds.contains($0.kind) }
        let groups = Set(c.products.compactMap(\.groupId))
        c.groups = c.groups.filter { groups.contains($0.id) }
        c.entitlements = nil
        return c
    }

    static func check(_ v: any Validator, _ catalog: Catalog, seed: UInt64, cases: Int = Sweep.count(2000))
        -> CheckReport
    {
        var o = CheckOptions()
        o.cases = cases
        o.seed = seed
        o.catalog = catalog
        o.properties = [.entitlementAgreement, .idempotentDelivery, .orderInsensitivity]
        return Checker(options: o, validator: v).run()
    }

    static func failure(_ r: CheckReport) -> String {
        r.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? ""
    }

    @Test(.long, arguments: [UInt64(1), 2])
    func readingLatestReceiptInfoWhereAppleReturnsItPasses(seed: UInt64) {
        let r = Self.check(Self.legacyOnly(ReferenceValidator()), .standard, seed: seed)
        #expect(r.failure == nil, "\(Self.failure(r))")
    }

    @Test(.long, arguments: [UInt64(1), 2])
    func readingOnlyLatestReceiptInfoPassesForASubscriptionApp(seed: UInt64) {
        let subscriptions = Self.catalog([.autoRenewable])
        let r = Self.check(Self.legacyOnly(LatestOnly()), subscriptions, seed: seed)
        #expect(r.failure == nil, "\(Self.failure(r))")
    }

    @Test(.long) func readingOnlyInAppPassesForAnAppWithoutSubscriptionsAndIsCaughtWithThem() {
        let mutant = Mutants.named("legacy-in-app-only")!
        let oneTime = Self.catalog([.nonConsumable, .nonRenewing, .consumable])
        let r = Self.check(Self.legacyOnly(mutant.make()), oneTime, seed: 1)
        #expect(r.failure == nil, "\(Self.failure(r))")
        let caught = Self.check(Self.legacyOnly(mutant.make()), .standard, seed: 1, cases: 500)
        #expect(caught.failure != nil)
    }

    /// The legacy forgery classes as the validator receives them: an error or missing `status` beside a receipt,
    /// half an answer, an HTML page; a validator that reads the receipt whatever the status says is caught on one.
    /// An upgraded entry's `cancellation_date` is the upgrade's marker only at the upgrade itself; a refund of the
    /// upgraded-from period afterwards is a refund (it once read as the marker, and a later receipt undid a refund
    /// the REFUND notification had told: `--policy refundScope chain`, seed 1, case 1110 at ten times CI's sweep).
    @Test func anUpgradedEntryRefundedAfterwardsStaysRefunded() throws {
        func tx(_ id: String, purchase: Millis, upgraded: Bool = false, cancelled: Millis? = nil)
            -> JWSTransactionDecodedPayload
        {
            var t = JWSTransactionDecodedPayload(
                transactionId: id, originalTransactionId: "1", bundleId: "b", productId: "p\(id)",
                purchaseDate: purchase, type: .autoRenewable, signedDate: 9_000, environment: .production,
                transactionReason: nil)
            if upgraded { t.isUpgraded = true }
            t.revocationDate = cancelled
            return t
        }
        let marker = ReferenceValidator.upgradeMarkersCleared([
            tx("1", purchase: 0, upgraded: true, cancelled: 60_000), tx("2", purchase: 60_000),
        ])
        #expect(marker[0].revocationDate == nil && marker[0].isUpgraded == true)
        let refunded = ReferenceValidator.upgradeMarkersCleared([
            tx("1", purchase: 0, upgraded: true, cancelled: 240_000), tx("2", purchase: 60_000),
        ])
        #expect(refunded[0].revocationDate == 240_000 && refunded[0].isUpgraded == true)
        // No later entry in the receipt to tell by: read as the marker, as before.
        let alone = ReferenceValidator.upgradeMarkersCleared([tx("1", purchase: 0, upgraded: true, cancelled: 5)])
        #expect(alone[0].revocationDate == nil)

        // The case as the run that found it made it (a policy file, the command line's defaults).
        let dir = try CLI.folder("upgraded-refund")
        try Data(#"{"refundScope": "chain"}"#.utf8).write(to: URL(fileURLWithPath: dir + "/policy.json"))
        let r = try CLI.run(
            [
                "check", "--validator", "reference", "--policy", "policy.json", "--seed", "1", "--case", "1110",
                "--no-corpus",
            ], in: dir)
        #expect(r.status == 0 && r.out.contains("1/1 cases passed"), "\(r.out)\(r.err)")
    }

    @Test func legacyForgeriesAreWrongInTheirOwnWayAndCaught() throws {
        let kit = ForgeryKit(pki: TestPKI.harness)
        let tx = Catalog.standard.probeTransaction(
            of: Catalog.standard.probeProduct!, at: 1_780_000_000_000, user: "u")
        let notification = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: nil, notificationUUID: "5e1f0000-0000-4000-9000-000000000001",
            signedDate: tx.signedDate, data: nil)
        func body(_ f: ForgeryClass) throws -> String {
            let d = ForgeryKit.delivery(f, tempting: tx, notification: notification, userId: "u")
            guard case .legacyReceipt(_, let body) = kit.render(f, d) else { throw CocoaError(.coderInvalidValue) }
            return body
        }
        func object(_ s: String) -> [String: Any]? {
            try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any]
        }
        let error = try #require(object(try body(.legacyErrorStatus)))
        #expect((error["status"] as? Int).map { $0 != 0 } == true && error["receipt"] != nil)
        let missing = try #require(object(try body(.legacyMissingStatus)))
        #expect(missing["status"] == nil && missing["receipt"] != nil)
        #expect(object(try body(.legacyTruncatedBody)) == nil)
        #expect(try body(.legacyNonJSONBody).hasPrefix("<html>"))
        for f in ForgeryClass.allCases where f.isLegacyOnly {
            #expect(ReferenceValidator().ingestLegacyReceipt(userId: "u", body: try body(f)).isAccepted == false)
        }

        var o = CheckOptions()
        o.cases = 500
        o.properties = [.forgeryRejected]
        let caught = Checker(options: o, validator: Mutants.named("legacy-status-unchecked")!.make()).run()
        let failure = try #require(caught.failure)
        #expect(failure.property == .forgeryRejected)
        #expect(
            [ForgeryClass.legacyErrorStatus, .legacyMissingStatus].contains {
                Self.failure(caught).contains($0.rawValue)
            })
    }
}
