import IAPModel
import PropertyEngine

// What each kind of action can apply to in the current state.
extension HistoryGenerator {
    /// Purchasers' chains, most recent first: choice 0 names the newest, which stays the same when the shrinker
    /// deletes an earlier, unrelated action.
    func purchasers(_ sim: StoreSimulator) -> [SimChain] {
        sim.chainOrder.reversed().compactMap { sim.chains[$0] }.filter { !$0.isMember }
    }

    func activeSubscriptions(_ sim: StoreSimulator) -> [SimChain] {
        purchasers(sim).filter { $0.kind == .autoRenewable && $0.phase == .active }
    }

    func changeable(_ sim: StoreSimulator) -> [SimChain] {
        activeSubscriptions(sim).filter { c in sim.catalog.products(inGroup: c.groupId!).count > 1 }
    }

    func retrying(_ sim: StoreSimulator) -> [SimChain] {
        purchasers(sim).filter { if case .retry = $0.phase { true } else { false } }
    }

    func extendable(_ sim: StoreSimulator, at t: Millis) -> [SimChain] {
        activeSubscriptions(sim).filter { c in
            !c.currentIsFreeTrial && (c.expires ?? 0) > t
                && c.extensions.filter { t - $0 < 365 * CivilTime.msPerDay }.count < 2
        }
    }

    func offerable(_ sim: StoreSimulator) -> [SimChain] {
        activeSubscriptions(sim).filter {
            $0.nextOffer == nil && !(sim.catalog.product($0.productId)?.promotionalOffers.isEmpty ?? true)
        }
    }

    /// Purchases that can be issued again under a new id: a paid-up subscription period or a non-consumable, not
    /// revoked, at most twice per chain.
    func restorable(_ sim: StoreSimulator, at t: Millis) -> [SimChain] {
        purchasers(sim).filter { c in
            guard c.restoredTxIds.count < 2, let id = c.currentTx, let tx = sim.latest(id), tx.revocationDate == nil
            else { return false }
            switch c.kind {
            case .autoRenewable: return c.phase == .active && (c.expires ?? 0) > t
            case .nonConsumable: return true
            default: return false
            }
        }
    }

    func sharing(_ sim: StoreSimulator) -> [SimChain] { purchasers(sim).filter { !$0.members.isEmpty } }

    func leavers(_ sim: StoreSimulator) -> [Int] {
        sim.persons.filter { $0.familyId != nil && !sim.leftFamily.contains($0.index) }.map(\.index)
    }

    /// Transactions a customer could get refunded: not yet revoked, bought by them, not in a chain in billing retry.
    func refundable(_ sim: StoreSimulator) -> [String] {
        sim.txOrder.reversed().filter { id in
            guard sim.restoredFrom[id] == nil, let tx = sim.latest(id), tx.revocationDate == nil,
                tx.inAppOwnershipType == .purchased,
                let c = sim.chains[tx.originalTransactionId]
            else { return false }
            if case .retry = c.phase { return false }
            return true
        }
    }

    /// Refunded transactions whose refund can be reversed: the chain has not moved on since.
    func reversible(_ sim: StoreSimulator) -> [String] {
        sim.txOrder.reversed().filter { id in
            guard sim.restoredFrom[id] == nil, let tx = sim.latest(id), tx.revocationDate != nil,
                tx.revocationType != .familyRevoke,
                let c = sim.chains[tx.originalTransactionId]
            else { return false }
            return tx.type != .autoRenewable || c.currentTx == id
        }
    }
}
