import Foundation
import IAPConformance
import IAPModel
import IAPOracle
import IAPReference
import IAPSigning
import IAPSimulator
import Testing

/// Case sizes grow across a run and then have a long tail: a few customers with years of renewals or runs of
/// purchases, the median case small, `--max-size` capping it.
@Suite struct CaseSizeTests {
    @Test func sizesStartSmallThenHaveALongTail() {
        #expect(HistoryGenerator.sizeLimit(caseIndex: 0) == 4)
        #expect(HistoryGenerator.sizeLimit(caseIndex: 9) <= 6)
        let late = 1000..<2000
        let tail = late.filter { HistoryGenerator.isLongTail(caseIndex: $0) }
        #expect(tail.count > 60 && tail.count < 140, "\(tail.count) long-tail cases of 1,000")
        #expect(tail.allSatisfy { HistoryGenerator.sizeLimit(caseIndex: $0) == HistoryGenerator.defaultMaxSize })
        #expect(
            late.filter { !HistoryGenerator.isLongTail(caseIndex: $0) }.allSatisfy {
                HistoryGenerator.sizeLimit(caseIndex: $0) == 8
            })
        #expect(tail.allSatisfy { HistoryGenerator.sizeLimit(caseIndex: $0, maxSize: 8) == 8 })
        #expect(HistoryGenerator.sizeLimit(caseIndex: 5_000_000, maxSize: 0) == 1)
        // Long-tail cases fall on every property of a run (properties take turns by index).
        #expect(Set(tail.map { $0 % PropertyName.standard.count }).count == PropertyName.standard.count)
    }

    static func sizes(maxSize: Int) -> [Int] {
        var o = CheckOptions()
        o.drawsCatalogs = true
        o.maxSize = maxSize
        let checker = Checker(options: o, validator: ReferenceValidator())
        return (0..<800).flatMap { checker.generate(caseIndex: $0).0.historySizes ?? [] }.sorted()
    }

    @Test func someCustomersHaveLongHistoriesWhileTheMedianStaysSmall() {
        let sizes = Self.sizes(maxSize: HistoryGenerator.defaultMaxSize)
        #expect(sizes[sizes.count / 2] <= 5, "median \(sizes[sizes.count / 2])")
        #expect((sizes.last ?? 0) >= 40, "largest history \(sizes.last ?? 0)")
        #expect(sizes.filter { $0 > 20 }.count >= 5)
        let capped = Self.sizes(maxSize: 8)
        #expect((capped.last ?? 0) < (sizes.last ?? 0))
        #expect(capped.filter { $0 > 20 }.count < sizes.filter { $0 > 20 }.count)
    }

    /// Every notification type and subtype Apple documents is listed in coverage, with 0 when no case sent it.
    @Test func coverageListsEveryDocumentedNotificationEvenUnsent() throws {
        var coverage = Coverage()
        #expect(Coverage.documentedNotifications.allSatisfy { coverage.notifications[$0] == 0 })
        let checker = Checker(options: CheckOptions(), validator: ReferenceValidator())
        for i in 0..<50 { coverage.add(checker.generate(caseIndex: i).0) }
        // Documented, never generated (a product Apple stops selling): listed with 0.
        #expect(coverage.notifications["EXPIRED/PRODUCT_NOT_FOR_SALE"] == 0)
        #expect(coverage.notifications["SUBSCRIBED/INITIAL_BUY", default: 0] > 0)
        let decoded = try JSONDecoder().decode(
            Coverage.self, from: Data(#"{"families":{},"notifications":{"DID_RENEW":3},"properties":{}}"#.utf8))
        #expect(decoded.notifications["DID_RENEW"] == 3 && decoded.notifications["TEST"] == 0)
    }

    /// The history answer lists the chain's transactions in Apple's order: by the date each was last modified, so a
    /// refunded old period comes after the newer ones.
    @Test func apiAnswersAreInApplesOrder() {
        var sim = StoreSimulator(
            catalog: .standard, policy: .default, persons: [Person(index: 0, familyId: nil)],
            start: HistoryGenerator.epoch)
        sim.buySubscription(
            person: 0, productId: "pro.monthly", offer: .none, at: HistoryGenerator.epoch, familyMates: [])
        let chain = sim.chainOrder[0]
        for _ in 0..<3 { sim.renew(chain) }
        let first = sim.chains[chain]!.txIds[0]
        sim.refund(first, reason: .refundedForOtherReason, prorated: false, at: sim.now + 3_600_000)
        let ids = sim.snapshot(chain: chain, at: sim.now + 7_200_000).transactions.map(\.transactionId)
        #expect(ids.count == 4)
        #expect(ids.last == first, "the refunded purchase was modified last: \(ids)")
        #expect(Array(ids.dropLast()) == Array(sim.chains[chain]!.txIds.dropFirst()))
    }

    /// A history answer is the customer's, not the chain's: asked with one subscription's id it lists every
    /// transaction of the customer (another group's subscription, a consumable, a non-consumable; another
    /// customer's not), and the statuses list both groups; rendered, the other chain is there too.
    @Test func aHistoryAnswerIsTheCustomersWholeHistory() throws {
        let t0 = HistoryGenerator.epoch, hour: Millis = 3_600_000
        var sim = StoreSimulator(
            catalog: .standard, policy: .default,
            persons: [Person(index: 0, familyId: nil), Person(index: 1, familyId: nil)], start: t0)
        sim.buySubscription(person: 0, productId: "pro.monthly", offer: .none, at: t0, familyMates: [])
        sim.buySubscription(person: 0, productId: "storage.monthly", offer: .none, at: t0 + hour, familyMates: [])
        sim.buyOneTime(person: 0, productId: "coins.100", quantity: 2, at: t0 + 2 * hour, familyMates: [])
        sim.buyOneTime(person: 0, productId: "lifetime.unlock", quantity: 1, at: t0 + 3 * hour, familyMates: [])
        sim.buySubscription(person: 1, productId: "pro.monthly", offer: .none, at: t0 + 4 * hour, familyMates: [])
        let pro = sim.chainOrder[0]
        let answer = sim.history(asking: pro, at: t0 + 5 * hour)
        #expect(answer.originalTransactionId == pro)
        #expect(
            Set(answer.transactions.map(\.productId)) == [
                "pro.monthly", "storage.monthly", "coins.100", "lifetime.unlock",
            ])
        #expect(Set(answer.transactions.map(\.originalTransactionId)).count == 4)
        #expect(Set(answer.renewalInfos.map(\.productId)) == ["pro.monthly", "storage.monthly"])
        // Asked with the consumable's chain: the same history.
        let coins = try #require(sim.chains(of: 0).first { $0.productId == "coins.100" }?.id)
        #expect(Set(sim.history(asking: coins, at: t0 + 5 * hour).transactions) == Set(answer.transactions))
        let signed = ArtifactRenderer(pki: TestPKI.harness, appAppleId: Catalog.standard.appAppleId).render(
            .apiSnapshot(answer))
        guard case let .apiSnapshot(_, pages, statuses) = signed else { Issue.record("not an API answer"); return }
        #expect(pages.flatMap(\.signedTransactions).count == 4)
        #expect(Set(try #require(statuses).data.map(\.subscriptionGroupIdentifier)) == ["21000001", "21000002"])
        // What a validator may know from it: every chain's transactions and renewal info.
        var k = Knowledge(config: ValidatorConfig(catalog: .standard, policy: .default))
        let learned = k.learn(.apiSnapshot(answer))
        #expect(learned)
        #expect(Set(k.renewals.keys) == Set(answer.renewalInfos.map(\.originalTransactionId)) && k.renewals.count == 2)
        #expect(k.transactions.count == 4)
        let v = ReferenceValidator()
        try v.reset(ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: TestPKI.harness.trustedRoots))
        #expect(try v.deliver(signed, now: t0 + 5 * hour).isAccepted)
    }
}
