import IAPModel

/// What the simulator knows to be true for a person at an instant, derived from its truth segments and ledger
/// only (not from transactions), so that it can check the oracle independently.
public struct TruthView: Hashable, Sendable, CustomStringConvertible {
    /// Entitled products with `active` or `grace` and the ownership of the access.
    public var products: [String: (EntitlementState, InAppOwnershipType)]
    public var effective: [String: String]
    public var balances: [String: Int]
    public var introEligible: [String: Bool]

    public static func == (a: TruthView, b: TruthView) -> Bool { a.description == b.description }
    public func hash(into h: inout Hasher) { h.combine(description) }

    public var description: String {
        let p = products.keys.sorted().map { "\($0)=\(products[$0]!.0.rawValue)/\(products[$0]!.1.rawValue)" }
        let e = effective.keys.sorted().map { "\($0)→\(effective[$0]!)" }
        let b = balances.keys.sorted().filter { balances[$0] != 0 }.map { "\($0)×\(balances[$0]!)" }
        let i = introEligible.keys.sorted().map { "\($0):\(introEligible[$0]! ? "eligible" : "used")" }
        return "products[\(p.joined(separator: ", "))] groups[\(e.joined(separator: ", "))] balances[\(b.joined(separator: ", "))] intro[\(i.joined(separator: ", "))]"
    }

    /// The same view of an oracle or validator answer, for comparison.
    public init(_ a: EntitlementAnswer) {
        products = [:]
        for p in a.products where p.active { products[p.productId] = (p.state, p.ownership ?? .purchased) }
        effective = [:]
        introEligible = [:]
        for g in a.groups {
            if let e = g.effectiveProductId { effective[g.groupId] = e }
            introEligible[g.groupId] = g.introEligible
        }
        balances = [:]
        for c in a.consumables where c.balance != 0 { balances[c.productId] = c.balance }
    }

    init(products: [String: (EntitlementState, InAppOwnershipType)], effective: [String: String], balances: [String: Int], introEligible: [String: Bool]) {
        self.products = products
        self.effective = effective
        self.balances = balances
        self.introEligible = introEligible
    }
}

extension StoreSimulator {
    /// The truth for `person` at `t`.
    public func truth(person: Int, at t: Millis) -> TruthView {
        var covering: [String: [TruthSegment]] = [:]
        for s in segments where s.person == person && s.start <= t && t < s.end { covering[s.productId, default: []].append(s) }
        var products: [String: (EntitlementState, InAppOwnershipType)] = [:]
        for (id, segs) in covering {
            let paid = segs.filter { $0.kind == .paid }
            let chosen = paid.isEmpty ? segs : paid
            products[id] = (paid.isEmpty ? .grace : .active, chosen.contains { $0.ownership == .purchased } ? .purchased : .familyShared)
        }
        var effective: [String: String] = [:]
        for g in catalog.groups {
            let best = products.keys.compactMap { catalog.product($0) }.filter { $0.groupId == g.id }.min { a, b in
                (a.level ?? .max, a.id) < (b.level ?? .max, b.id)
            }
            if let best { effective[g.id] = best.id }
        }
        var balances: [String: Int] = [:]
        for e in ledger where e.person == person && e.time <= t && (!e.clawback || policy.consumableClawback) {
            balances[e.productId, default: 0] += e.delta
        }
        var intro: [String: Bool] = [:]
        for g in catalog.groups {
            let own = creations.filter { c in
                c.person == person && c.time <= t && chains[c.chainId]!.ownership == .purchased && chains[c.chainId]!.groupId == g.id
            }
            intro[g.id] = switch policy.introEligibility {
            case .neverReceivedIntro: !own.contains { latest($0.transactionId, at: t)?.offerType == .introductory }
            case .neverSubscribed: own.isEmpty
            }
        }
        return TruthView(products: products, effective: effective, balances: balances.filter { $0.value != 0 }, introEligible: intro)
    }

    /// Instants worth checking: every truth boundary, one millisecond either side, and each event.
    public var interestingInstants: [Millis] {
        var ts: Set<Millis> = []
        for s in segments {
            for t in [s.start - 1, s.start, s.start + 1, s.end - 1, s.end, s.end + 1] where t < Self.forever { ts.insert(t) }
        }
        for e in events { ts.insert(e.time); ts.insert(e.time + 1) }
        return ts.sorted()
    }
}
