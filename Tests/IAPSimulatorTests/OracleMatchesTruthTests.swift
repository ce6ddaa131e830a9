import Foundation
import IAPModel
import IAPOracle
import IAPSimulator
import IAPSweeps
import IAPTesting
import Testing

/// The two independent derivations of docs/semantics.md#three-derivations-that-must-agree must agree, on the whole
/// answer (every product the person ever had with its state, expiry and ownership; groups; balances): the
/// simulator's truth segments and chain marks, and the oracle over every fact signed so far.
@Suite struct OracleMatchesTruthTests {
    /// The seeds of a sweep that `iapcheck-sweeps` runs whole (Sources/IAPSweeps): a thirty-second quick, all with
    /// `IAPCHECK_SWEEP=full` unless that program runs them (CI), ten times with `IAPCHECK_LONG=1`.
    static func seeds(_ full: Int, from first: UInt64 = 1) -> Range<UInt64> {
        first..<(first + UInt64(Sweep.programmed.count(full)))
    }

    static func mismatches(sim: StoreSimulator, policy: Policy) -> [String] {
        OracleTruth.mismatches(sim: sim, policy: policy)
    }

    @Test func oracleEqualsTruthOverManySeeds() {
        let failures = OracleTruth.sweep(Self.seeds(Sweeps.truthSeeds))
        #expect(failures.isEmpty, "\(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test(arguments: Sweeps.policies)
    func oracleEqualsTruthUnderEveryPolicy(_ policy: Policy) {
        let failures = OracleTruth.sweep(Self.seeds(Sweeps.truthSeeds, from: 1000), policy: policy)
        #expect(failures.isEmpty, "\(failures.prefix(3).joined(separator: "\n"))")
    }

    /// The user's own chain in its grace period while a parent's family share of the same product is paid: the
    /// truth and the oracle agree under every meaning of the end (expiresMeaning), and the history does reach the
    /// overlap (the two meanings answer differently there).
    @Test(arguments: [Policy.ExpiresMeaning.either, .accessEnd, .paidFirst, .paidThrough])
    func ownGraceBesideAPaidShareAgreesWithTheTruth(_ meaning: Policy.ExpiresMeaning) throws {
        let start = HistoryGenerator.epoch, day = CivilTime.msPerDay
        var catalog = Catalog.standard
        catalog.gracePeriod = GracePeriodSetting(days: 16, eligibility: .allRenewals)
        let policy = Policy(expiresMeaning: meaning)
        var sim = StoreSimulator(
            catalog: catalog, policy: policy,
            persons: [Person(index: 0, familyId: 1), Person(index: 1, familyId: 1)], start: start)
        sim.buySubscription(person: 1, productId: "plus.monthly", offer: .none, at: start, familyMates: [0])
        let parent = try #require(sim.chainOrder.first { sim.chains[$0]?.person == 1 })
        sim.buySubscription(person: 0, productId: "plus.monthly", offer: .none, at: start + 10 * day, familyMates: [])
        let own = try #require(sim.chainOrder.last { sim.chains[$0]?.person == 0 })
        sim.renew(parent)
        sim.failBilling(own, retryDays: 60)
        #expect(Self.mismatches(sim: sim, policy: policy).isEmpty, "\(Self.mismatches(sim: sim, policy: policy))")
        // At the overlap the truth is the reading the meaning names (either: the access end).
        let ownEnd = Period(1, .month).added(to: start + 10 * day)
        let truth = sim.truth(person: 0, at: ownEnd + day)
        let p = try #require(truth.products["plus.monthly"])
        #expect(p.active && p.state == .active)
        #expect(p.ownership == (meaning == .paidFirst || meaning == .paidThrough ? .familyShared : .purchased), "\(p)")
    }

    /// Under stacking, a second season pass starts where the first ends; a refund of it that is reversed before
    /// then gives it back from where it was to start, not from the reversal (found by the long run, seed 2505).
    @Test func aReversedRefundOfAStackedPassRestoresItFromItsStart() throws {
        let start = HistoryGenerator.epoch, day = CivilTime.msPerDay
        var sim = StoreSimulator(
            catalog: .standard, policy: Policy(nonRenewingStacking: true), persons: [Person(index: 0, familyId: nil)],
            start: start)
        sim.buyOneTime(person: 0, productId: "season.pass", quantity: 1, at: start, familyMates: [])
        sim.buyOneTime(person: 0, productId: "season.pass", quantity: 1, at: start + 10 * day, familyMates: [])
        let second = try #require(sim.txOrder.last)
        sim.refund(second, reason: .refundedForOtherReason, prorated: false, at: start + 11 * day)
        sim.reverseRefund(second, at: start + 12 * day)
        let firstEnd = Period(3, .month).added(to: start)
        let before = sim.truth(person: 0, at: start + 13 * day).products["season.pass"]
        #expect(before?.active == true && before?.expiresDate == firstEnd, "\(before.map { "\($0)" } ?? "nil")")
        let after = sim.truth(person: 0, at: firstEnd).products["season.pass"]
        #expect(after?.active == true && after?.expiresDate == Period(3, .month).added(to: firstEnd))
        #expect(Self.mismatches(sim: sim, policy: Policy(nonRenewingStacking: true)).isEmpty)
    }

    @Test func generationIsDeterministic() throws {
        let (a, _) = Fixtures.generated(seed: 42, property: .orderInsensitivity)
        let (b, _) = Fixtures.generated(seed: 42, property: .orderInsensitivity)
        #expect(a == b)
        let (c, _) = Fixtures.generated(seed: 43, property: .orderInsensitivity)
        #expect(a != c)
    }

    @Test(.long) func everyScenarioFamilyIsGenerated() {
        var seen: Set<ScenarioFamily> = []
        for seed in UInt64(1)...3000 {
            let (c, _) = Fixtures.generated(seed: seed)
            seen.formUnion(c.families)
        }
        let missing = Set(ScenarioFamily.allCases).subtracting(seen).map(\.rawValue).sorted()
        #expect(missing.isEmpty, "never generated: \(missing)")
    }

    /// Every notification type and subtype the simulator can send is sent, in a production catalog (drawn per case,
    /// as `check` does): OFFER_REDEEMED in each form and ONE_TIME_CHARGE (in production since May 2025) included.
    @Test func everyNotificationVariantIsGenerated() {
        var seen: [String: Int] = [:]
        for seed in UInt64(1)...2000 {
            let (c, _) = Fixtures.generated(seed: seed, drawsCatalogs: true)
            for k in Set(c.notificationKinds) { seen[k, default: 0] += 1 }
        }
        let wanted = [
            "OFFER_REDEEMED", "OFFER_REDEEMED/INITIAL_BUY", "OFFER_REDEEMED/RESUBSCRIBE", "OFFER_REDEEMED/UPGRADE",
            "OFFER_REDEEMED/DOWNGRADE", "ONE_TIME_CHARGE", "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF/UPGRADE",
            "DID_CHANGE_RENEWAL_PREF/DOWNGRADE", "RENEWAL_EXTENSION/SUMMARY", "EXTERNAL_PURCHASE_TOKEN/UNREPORTED",
            "TEST",
        ]
        let rare = wanted.filter { seen[$0, default: 0] < 5 }
        #expect(rare.isEmpty, "sent fewer than 5 times in 2,000 cases: \(rare.map { "\($0) \(seen[$0, default: 0])" })")
    }

    /// An upgrade with a pay-as-you-go promotional offer is OFFER_REDEEMED/UPGRADE and leaves the offer's further
    /// periods pending for the new product; a later change of the renewal product drops them, so no renewal carries
    /// another product's offer.
    @Test func aPendingOfferDoesNotFollowAChangeToAnotherProduct() throws {
        let day = CivilTime.msPerDay, start = HistoryGenerator.epoch
        var sim = StoreSimulator(
            catalog: .standard, policy: .default, persons: [Person(index: 0, familyId: nil)], start: start)
        sim.buySubscription(person: 0, productId: "basic.monthly", offer: .none, at: start, familyMates: [])
        let chain = sim.chainOrder[0]
        let promo = try #require(Catalog.standard.product("pro.monthly")?.promotionalOffers.first)
        #expect(promo.discountType == .payAsYouGo && promo.periods > 1)
        sim.changeProduct(chain, to: "pro.monthly", at: start + day, offer: .promotional(promo))
        let upgrade = try #require(sim.notifications.last?.payload)
        #expect(upgrade.notificationType == .offerRedeemed && upgrade.subtype == .upgrade)
        #expect(
            upgrade.data?.transactionInfo?.offerType == .promotional
                && upgrade.data?.transactionInfo?.productId == "pro.monthly")
        #expect(sim.chains[chain]!.nextOffer != nil)
        sim.changeProduct(chain, to: "pro.yearly", at: start + 2 * day)  // a crossgrade: at the next renewal
        #expect(sim.notifications.last?.payload.notificationType == .didChangeRenewalPref)
        #expect(sim.chains[chain]!.nextOffer == nil)
        sim.renew(chain)
        let renewed = try #require(sim.latest(sim.chains[chain]!.currentTx!))
        #expect(renewed.productId == "pro.yearly" && renewed.offerType == nil)
    }

    /// A restore issues the current period again under a new id of the same period; a later refund is signed
    /// under both ids, the refund notification names the original only, and the API history lists both.
    @Test func aRestoredPeriodIsOnePurchaseUnderTwoIds() throws {
        let start = HistoryGenerator.epoch
        var sim = StoreSimulator(
            catalog: .standard, policy: .default, persons: [Person(index: 0, familyId: nil)], start: start)
        sim.buySubscription(person: 0, productId: "pro.monthly", offer: .none, at: start, familyMates: [])
        let cid = try #require(sim.chainOrder.first)
        sim.restore(cid, at: start + CivilTime.msPerDay)
        let original = try #require(sim.chains[cid]?.currentTx)
        let copy = try #require(sim.chains[cid]?.restoredTxIds.first)
        let a = try #require(sim.latest(original)), b = try #require(sim.latest(copy))
        #expect(
            copy != original && b.webOrderLineItemId == a.webOrderLineItemId
                && b.originalTransactionId == a.originalTransactionId)
        #expect(b.purchaseDate == a.purchaseDate && b.expiresDate == a.expiresDate)
        #expect(sim.creations.last?.transactionId == copy && sim.creations.last?.inApp == true)

        let refundAt = start + 2 * CivilTime.msPerDay
        sim.refund(original, reason: .refundedForOtherReason, prorated: false, at: refundAt)
        #expect(sim.latest(copy)?.revocationDate == refundAt, "the refund was not signed under the restored id")
        #expect(sim.notifications.last?.payload.data?.transactionInfo?.transactionId == original)
        #expect(Set(sim.snapshot(chain: cid, at: refundAt + 1).transactions.map(\.transactionId)) == [original, copy])
    }

    /// The oracle keeps what it derives from the facts until a fact arrives: a copy that learns a refund answers
    /// with it, and the copy it came from, asked again, still answers without it.
    @Test func aCopyThatLearnsDoesNotChangeTheOriginalsAnswers() throws {
        let start = HistoryGenerator.epoch
        var sim = StoreSimulator(
            catalog: .standard, policy: .default, persons: [Person(index: 0, familyId: nil)], start: start)
        sim.buySubscription(person: 0, productId: "pro.monthly", offer: .none, at: start, familyMates: [])
        let cid = try #require(sim.chainOrder.first)
        let current = try #require(sim.chains[cid]?.currentTx)
        let bought = try #require(sim.latest(current))
        var k = Knowledge(config: ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: []))
        k.merge(bought)
        k.link(chain: cid, to: "u")
        let t = start + CivilTime.msPerDay
        let before = Oracle.answer(k, user: "u", at: t)
        #expect(before.products.first?.active == true)

        sim.refund(bought.transactionId, reason: .refundedForOtherReason, prorated: false, at: start + 1000)
        var refunded = k
        refunded.merge(try #require(sim.latest(bought.transactionId)))
        #expect(Oracle.answer(refunded, user: "u", at: t).products.first?.state == .revoked)
        #expect(Oracle.answer(k, user: "u", at: t) == before)
        #expect(Oracle.judge(refunded, user: "u", at: t).answer.products.first?.active == false)
    }
}
