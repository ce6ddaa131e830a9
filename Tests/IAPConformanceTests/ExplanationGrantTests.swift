import IAPConformance
import IAPModel
import IAPTesting
import Testing

/// Under "why the oracle expects this", the grant the expected value rests on comes first: here the user's own
/// chain in its grace period, whose end outlasts a family share bought later (the latest by purchaseDate).
@Suite struct ExplanationGrantTests {
    static let day: Millis = 86_400_000

    static func transaction(_ id: String, purchased: Millis, expires: Millis, ownership: InAppOwnershipType)
        -> JWSTransactionDecodedPayload
    {
        Build.transaction(id, purchased: purchased, expires: expires, ownership: ownership, reason: nil)
    }

    @Test func theUsersOwnGraceIsListedBeforeALaterFamilyShare() {
        var facts = Explanation.Facts()
        let own = Self.transaction("1001", purchased: 0, expires: 30 * Self.day, ownership: .purchased)
        let share = Self.transaction("2002", purchased: 20 * Self.day, expires: 35 * Self.day, ownership: .familyShared)
        facts.add(.appTransaction(AppTransactionSubmission(userId: "u1", transaction: own, deviceTime: nil)))
        facts.add(.appTransaction(AppTransactionSubmission(userId: "u1", transaction: share, deviceTime: nil)))
        let retry = Build.renewalInfo(of: own, signed: 30 * Self.day, retry: true, grace: 46 * Self.day)
        facts.renew(retry)
        let lines = Explanation.productFacts(
            "pro.monthly", at: 40 * Self.day, facts, catalog: .standard, rel: { CivilTime.relative($0) })
        let held = lines.firstIndex { $0.contains("held through chain …1001, in its grace period") }
        let latest = lines.firstIndex { $0.contains("latest by purchaseDate") && $0.contains("…2002") }
        #expect(held != nil && latest != nil && held! < latest!, "\(lines)")
        #expect(lines.contains { $0.contains("renewal info of chain …1001") && $0.contains("gracePeriodExpiresDate") })

        // Asked while the share still holds and outlasts the grace: the latest purchase decides, listed once.
        let before = Explanation.productFacts(
            "pro.monthly", at: 25 * Self.day, facts, catalog: .standard, rel: { CivilTime.relative($0) })
        #expect(!before.contains { $0.contains("held through chain") }, "\(before)")
    }

    /// The facts an expectation rests on include what the latest purchase alone does not show (the Ruby trial's two
    /// reports that left them out): a restore's other id and its refund, and the user's own purchase beside a family
    /// share of a non-consumable.
    @Test func aRestoresOtherIdAndTheUsersOwnPurchaseAreListed() {
        func lines(_ txs: [JWSTransactionDecodedPayload], at t: Millis) -> [String] {
            var facts = Explanation.Facts()
            for x in txs {
                facts.add(.appTransaction(AppTransactionSubmission(userId: "u1", transaction: x, deviceTime: nil)))
            }
            return Explanation.productFacts(
                "lifetime.unlock", at: t, facts, catalog: .standard, rel: { CivilTime.relative($0) })
        }
        let bought = Build.transaction("1001", product: "lifetime.unlock", purchased: 0)
        let restored = Build.transaction(
            "1003", chain: "1001", product: "lifetime.unlock", purchased: 0, signed: Self.day, reason: nil)
        let refund = Build.refunded(bought, at: 2 * Self.day)
        let restore = lines([restored, refund], at: 3 * Self.day)
        #expect(
            restore.contains { $0.contains("the same purchase under another id") && $0.contains("…1001") },
            "\(restore)")
        let share = Build.transaction(
            "2002", product: "lifetime.unlock", purchased: Self.day, ownership: .familyShared)
        let both = lines([bought, share], at: 3 * Self.day)
        #expect(both.contains { $0.contains("also bought by the user") && $0.contains("…1001") }, "\(both)")
    }
}
