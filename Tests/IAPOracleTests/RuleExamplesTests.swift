import IAPModel
import IAPOracle
import IAPTesting
import Testing

/// One example per rule of the oracle, written as the specification's examples: a short history, the answer the
/// oracle must give, and the section of docs/semantics.md (or docs/answers.md) the rule implements. Each example
/// fails when its rule is deleted or inverted.
@Suite struct RuleExamplesTests {
    static let day = Build.day
    static let t0 = Build.t0

    /// The oracle's answer for the user at `t`, and the product `id` in it.
    static func product(_ id: String, at t: Millis, after deliveries: [Delivery], policy: Policy = .default)
        throws -> ProductEntitlement
    {
        let k = Build.knowledge(deliveries, policy: policy)
        let judged = Oracle.judge(k, user: Build.user, at: t)
        #expect(judged.undetermined.isEmpty, "the facts decide this example: nothing may be open")
        return try #require(judged.answer.products.first { $0.productId == id }, "\(id) is not listed")
    }

    /// docs/semantics.md#grant-intervals: a subscription transaction grants from its purchase to its expiry.
    @Test func aSubscriptionGrantsItsPeriod() throws {
        let tx = Build.transaction("1001")
        let during = try Self.product("pro.monthly", at: Self.t0 + Self.day, after: [Build.appTransaction(tx)])
        #expect(during.active && during.state == .active && during.expiresDate == tx.expiresDate)
        let after = try Self.product("pro.monthly", at: tx.expiresDate!, after: [Build.appTransaction(tx)])
        #expect(!after.active && after.state == .expired)
    }

    /// docs/semantics.md#refunds-and-revocation: a refund voids the transaction from its `revocationDate`.
    @Test func aRefundVoidsFromItsRevocationDate() throws {
        let tx = Build.transaction("1001")
        let refund = Build.refunded(tx, at: Self.t0 + 5 * Self.day)
        let history = [Build.appTransaction(tx), Build.notification(.refund, tx: refund)]
        let p = try Self.product("pro.monthly", at: Self.t0 + 6 * Self.day, after: history)
        #expect(!p.active && p.state == .revoked)
    }

    /// docs/semantics.md#q1-refund-scope-and-timing: under refundScope `chain`, a refund of any transaction of the
    /// chain ends every period bought before it, so a question in hindsight, before that refund, leaves the expiry
    /// open (an end known ahead) as it does for a period's own refund. The Java trial's correct validator answered
    /// the refund's date and was failed for it.
    @Test func aLaterRefundOfChainScopeIsAnEndKnownAhead() throws {
        let first = Build.transaction("1001")
        let renewal = Build.transaction("1002", chain: "1001", purchased: first.expiresDate!, reason: .renewal)
        let refund = Build.refunded(first, at: renewal.purchaseDate + 10 * Self.day)
        let history = [
            Build.appTransaction(first), Build.appTransaction(renewal), Build.notification(.refund, tx: refund),
        ]
        let before = renewal.purchaseDate + 5 * Self.day
        let key = AnswerDifference.Key(subject: .product("pro.monthly"), field: .expiresDate)
        let chain = Oracle.judge(
            Build.knowledge(history, policy: Policy(refundScope: .chain)), user: Build.user, at: before)
        #expect(chain.answer.products.first?.active == true && chain.undetermined.contains(key))
        let own = Oracle.judge(Build.knowledge(history), user: Build.user, at: before)
        #expect(own.answer.products.first?.active == true && !own.undetermined.contains(key))
    }

    /// docs/semantics.md#refund-reversal: a reversed refund grants again, the renewal date unchanged.
    @Test func aReversedRefundGrantsAgain() throws {
        let tx = Build.transaction("1001")
        let refund = Build.refunded(tx, at: Self.t0 + 5 * Self.day)
        let reversal = Build.reinstated(refund, at: Self.t0 + 7 * Self.day)
        let history = [
            Build.appTransaction(tx), Build.notification(.refund, tx: refund),
            Build.notification(.refundReversed, tx: reversal),
        ]
        let p = try Self.product("pro.monthly", at: Self.t0 + 8 * Self.day, after: history)
        #expect(p.active && p.state == .active && p.expiresDate == tx.expiresDate)
    }

    /// docs/semantics.md#ordering-and-duplicates: the newest signed version stands, whatever order versions arrive
    /// in; the purchase arriving after its refund does not undo the refund.
    @Test func aVersionArrivingLateDoesNotUndoANewerOne() throws {
        let tx = Build.transaction("1001")
        let refund = Build.refunded(tx, at: Self.t0 + 5 * Self.day)
        let history = [Build.notification(.refund, tx: refund), Build.appTransaction(tx)]
        let p = try Self.product("pro.monthly", at: Self.t0 + 6 * Self.day, after: history)
        #expect(!p.active && p.state == .revoked)
    }

    /// docs/semantics.md#family-sharing: a family member's share grants, and says it is shared.
    @Test func aFamilyShareAloneIsFamilyShared() throws {
        let share = Build.transaction("1002", ownership: .familyShared)
        let p = try Self.product("pro.monthly", at: Self.t0 + Self.day, after: [Build.appTransaction(share)])
        #expect(p.active && p.ownership == .familyShared)
    }

    /// docs/semantics.md#family-sharing: the user's own purchase beside a share makes the product their own.
    @Test func anOwnPurchaseBesideAShareIsPurchased() throws {
        let share = Build.transaction("1002", ownership: .familyShared)
        let own = Build.transaction("1003", purchased: Self.t0 + Self.day)
        let history = [Build.appTransaction(share), Build.appTransaction(own)]
        let p = try Self.product("pro.monthly", at: Self.t0 + 2 * Self.day, after: history)
        #expect(p.active && p.ownership == .purchased)
    }

    /// docs/semantics.md#family-sharing: `REVOKE` ends a member's share at its revocation date.
    @Test func aFamilyRevokeEndsTheShare() throws {
        let share = Build.transaction("1002", ownership: .familyShared)
        let revoked = Build.refunded(share, at: Self.t0 + 3 * Self.day, type: .familyRevoke)
        let history = [Build.appTransaction(share), Build.notification(.revoke, tx: revoked)]
        let p = try Self.product("pro.monthly", at: Self.t0 + 4 * Self.day, after: history)
        #expect(!p.active && p.state == .revoked)
    }

    /// docs/semantics.md#grace-period: after a failed renewal, the grace date keeps service on, in state grace.
    @Test func graceKeepsAccessAfterAFailedRenewal() throws {
        let tx = Build.transaction("1001")
        let graceEnd = tx.expiresDate! + 16 * Self.day
        let failed = Build.renewalInfo(of: tx, retry: true, grace: graceEnd)
        let history = [
            Build.appTransaction(tx), Build.notification(.didFailToRenew, .gracePeriod, tx: tx, renewal: failed),
        ]
        let p = try Self.product("pro.monthly", at: tx.expiresDate! + Self.day, after: history)
        #expect(p.active && p.state == .grace && p.expiresDate == graceEnd)
    }

    /// docs/answers.md#what-the-facts-leave-open: a refund of the lapsed period, known ahead of a question inside its
    /// grace, ends the grace before its date: the expiry is either, so it is not compared (it was, against the grace
    /// date alone).
    @Test func aRefundKnownAheadLeavesAGracePeriodsEndOpen() throws {
        let tx = Build.transaction("1001")
        let graceEnd = tx.expiresDate! + 16 * Self.day
        let failed = Build.renewalInfo(of: tx, retry: true, grace: graceEnd)
        let refund = Build.refunded(tx, at: tx.expiresDate! + 5 * Self.day)
        let history = [
            Build.appTransaction(tx), Build.notification(.didFailToRenew, .gracePeriod, tx: tx, renewal: failed),
            Build.notification(.refund, tx: refund),
        ]
        let judged = Oracle.judge(Build.knowledge(history), user: Build.user, at: tx.expiresDate! + Self.day)
        #expect(judged.answer.products.first?.state == .grace)
        #expect(judged.undetermined.contains(.init(subject: .product("pro.monthly"), field: .expiresDate)))
    }

    /// docs/semantics.md#billing-retry: a failed renewal without grace ends service; the product is in billing retry.
    @Test func billingRetryWithoutGraceEndsAccess() throws {
        let tx = Build.transaction("1001")
        let failed = Build.renewalInfo(of: tx, retry: true)
        let history = [Build.appTransaction(tx), Build.notification(.didFailToRenew, tx: tx, renewal: failed)]
        let p = try Self.product("pro.monthly", at: tx.expiresDate! + Self.day, after: history)
        #expect(!p.active && p.state == .billingRetry)
    }

    /// docs/semantics.md#product-types: a non-consumable grants for good, with no end.
    @Test func aNonConsumableLastsUntilRevoked() throws {
        let tx = Build.transaction("1004", product: "lifetime.unlock")
        let p = try Self.product("lifetime.unlock", at: Self.t0 + 900 * Self.day, after: [Build.appTransaction(tx)])
        #expect(p.active && p.expiresDate == nil)
    }

    /// docs/semantics.md#product-types: a non-renewing subscription grants its period and does not renew.
    @Test func aNonRenewingPassLastsItsPeriod() throws {
        let tx = Build.transaction("1005", product: "season.pass")
        let end = Period(3, .month).added(to: Self.t0)
        let during = try Self.product("season.pass", at: end - 1, after: [Build.appTransaction(tx)])
        #expect(during.active && during.expiresDate == end)
        let after = try Self.product("season.pass", at: end, after: [Build.appTransaction(tx)])
        #expect(!after.active)
    }

    /// docs/answers.md#consumables-consumables: a consumable purchase adds its quantity once per transaction; a
    /// refund takes it back under the default policy (consumableClawback).
    @Test func aConsumableAddsItsQuantityAndARefundTakesItBack() {
        let tx = Build.transaction("1006", product: "coins.100", quantity: 3)
        let bought = Build.knowledge([Build.appTransaction(tx), Build.appTransaction(tx)])
        let balance = Oracle.judge(bought, user: Build.user, at: Self.t0 + 1).answer.consumables
        #expect(balance == [ConsumableBalance(productId: "coins.100", balance: 3)])
        let refunded = Build.knowledge([
            Build.appTransaction(tx), Build.notification(.refund, tx: Build.refunded(tx, at: Self.t0 + Self.day)),
        ])
        let after = Oracle.judge(refunded, user: Build.user, at: Self.t0 + 2 * Self.day).answer.consumables
        #expect(after.allSatisfy { $0.balance == 0 })
    }

    /// docs/semantics.md#levels-and-classification: a group's effective product is its active product of the highest
    /// level (level 1 is highest).
    @Test func theHighestLevelIsTheGroupsEffectiveProduct() {
        let basic = Build.transaction("1007", product: "basic.monthly")
        let pro = Build.transaction("1008", product: "pro.yearly", purchased: Self.t0 + Self.day)
        let k = Build.knowledge([Build.appTransaction(basic), Build.appTransaction(pro)])
        let groups = Oracle.judge(k, user: Build.user, at: Self.t0 + 2 * Self.day).answer.groups
        #expect(groups.first { $0.groupId == "21000001" }?.effectiveProductId == "pro.yearly")
    }

    /// docs/semantics.md#upgrade: the upgraded transaction (`isUpgraded`, no revocation) stops granting from the new
    /// transaction's purchase; the new product grants from then.
    @Test func anUpgradeEndsTheOldGrantAtTheNewPurchase() throws {
        let basic = Build.transaction("1009", product: "basic.monthly")
        let upgradeAt = Self.t0 + 10 * Self.day
        var flagged = basic
        flagged.isUpgraded = true
        flagged.signedDate = upgradeAt
        let pro = Build.transaction("1010", chain: "1009", product: "pro.monthly", purchased: upgradeAt)
        let history = [
            Build.appTransaction(basic), Build.notification(.didChangeRenewalPref, .upgrade, tx: pro),
            Build.appTransaction(flagged),
        ]
        let old = try Self.product("basic.monthly", at: upgradeAt + Self.day, after: history)
        #expect(!old.active)
        let new = try Self.product("pro.monthly", at: upgradeAt + Self.day, after: history)
        #expect(new.active && new.expiresDate == pro.expiresDate)
    }

    /// docs/semantics.md#core-rules: a delivery for another app is refused and teaches nothing.
    @Test func anotherAppsDeliveryIsRefused() {
        var other = Catalog.standard
        other.bundleId = "com.example.other"
        let tx = Build.transaction("1011", catalog: other)
        var k = Build.knowledge([])
        #expect(k.rejection(Build.appTransaction(tx)) != nil)
        let learned = k.learn(Build.appTransaction(tx))
        #expect(!learned)
        #expect(Oracle.judge(k, user: Build.user, at: Self.t0 + 1).answer.products.isEmpty)
    }
}
