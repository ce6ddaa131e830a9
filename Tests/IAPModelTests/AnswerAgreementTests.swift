import PropertyEngine
import Testing

@testable import IAPModel

/// The comparison's shortcut for agreeing answers says "no difference" exactly when the full comparison finds none:
/// on random pairs of answers over a few ids, with duplicates, missing entries, extra groups and fields that only
/// count when both sides say active.
@Suite struct AnswerAgreementTests {
    static func answer(_ rng: inout SplitMix64) -> EntitlementAnswer {
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        let ids = ["a", "b", "c"]
        let states: [EntitlementState] = [.active, .grace, .billingRetry, .expired, .revoked]
        let expiries: [Millis?] = [nil, 1, 2]
        let owners: [InAppOwnershipType?] = [nil, .purchased, .familyShared]
        func count() -> Int { Int(rng.next() % 4) }
        return EntitlementAnswer(
            products: (0..<count()).map { _ in
                ProductEntitlement(
                    productId: pick(ids), active: rng.next() % 2 == 0, state: pick(states), expiresDate: pick(expiries),
                    ownership: pick(owners))
            },
            groups: (0..<count()).map { _ in
                GroupEntitlement(
                    groupId: pick(ids), effectiveProductId: pick([nil, "a", "b"]), introEligible: rng.next() % 2 == 0)
            },
            consumables: (0..<count()).map { _ in ConsumableBalance(productId: pick(ids), balance: pick([0, 1, 2])) },
            entitlements: (0..<count()).map { _ in
                EntitlementGrant(
                    entitlementId: pick(ids), active: rng.next() % 2 == 0, state: pick(states),
                    expiresDate: pick(expiries), ownership: pick(owners))
            })
    }

    @Test func theShortcutAgreesWithTheFullComparison() {
        var rng = SplitMix64(seed: 2026)
        var agreeing = 0
        for _ in 0..<20000 {
            let expected = Self.answer(&rng)
            // Half the time a near copy, so that agreeing pairs are common too.
            var observed = rng.next() % 2 == 0 ? expected : Self.answer(&rng)
            if rng.next() % 2 == 0 { observed.products.shuffle(using: &rng) }
            if rng.next() % 3 == 0, !observed.products.isEmpty { observed.products[0].expiresDate = 7 }
            let full = observed.allDifferences(from: expected, ignoring: [])
            #expect(observed.agrees(with: expected) == full.isEmpty, "\(observed) against \(expected): \(full)")
            if full.isEmpty { agreeing += 1 }
        }
        #expect(agreeing > 2000)
    }
}
