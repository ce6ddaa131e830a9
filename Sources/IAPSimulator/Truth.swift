import IAPModel

/// What the simulator knows to be true for a person at an instant, derived from its truth segments, chain marks
/// and ledger only (not from transactions), so that it can check the oracle independently. It holds the whole
/// answer: every product the person ever had (state, expiry, ownership), every group, every balance.
public struct TruthView: Hashable, Sendable, CustomStringConvertible {
    public var products: [String: ProductEntitlement]
    public var effective: [String: String]
    public var balances: [String: Int]
    public var introEligible: [String: Bool]

    public var description: String {
        let p = products.keys.sorted().map { id -> String in
            let e = products[id]!
            guard e.active else { return "\(id)=\(e.state.rawValue)" }
            return
                "\(id)=\(e.state.rawValue)/\(e.ownership?.rawValue ?? "-")/until \(e.expiresDate.map(String.init) ?? "-")"
        }
        let e = effective.keys.sorted().map { "\($0)→\(effective[$0]!)" }
        let b = balances.keys.sorted().filter { balances[$0] != 0 }.map { "\($0)×\(balances[$0]!)" }
        let i = introEligible.keys.sorted().map { "\($0):\(introEligible[$0]! ? "eligible" : "used")" }
        return
            "products[\(p.joined(separator: ", "))] groups[\(e.joined(separator: ", "))] balances[\(b.joined(separator: ", "))] intro[\(i.joined(separator: ", "))]"
    }

    /// The same view of an oracle or validator answer, for comparison.
    public init(_ a: EntitlementAnswer) {
        products = [:]
        for p in a.products { products[p.productId] = p }
        effective = [:]
        introEligible = [:]
        for g in a.groups {
            if let e = g.effectiveProductId { effective[g.groupId] = e }
            introEligible[g.groupId] = g.introEligible
        }
        balances = [:]
        for c in a.consumables where c.balance != 0 { balances[c.productId] = c.balance }
    }

    init(
        products: [String: ProductEntitlement], effective: [String: String], balances: [String: Int],
        introEligible: [String: Bool]
    ) {
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
        for s in segments where s.person == person && s.start <= t && t < s.end {
            covering[s.productId, default: []].append(s)
        }
        // Where each of the person's chains stands at t: its last mark at or before t.
        var standing: [String: ChainMark] = [:]
        for m in marks where m.person == person && m.time <= t { standing[m.chainId] = m }
        var had = Set(marks.filter { $0.person == person && $0.time <= t }.map(\.productId))
        had = had.filter { catalog.product($0)?.kind != .consumable }
        var products: [String: ProductEntitlement] = [:]
        for id in had {
            if let segs = covering[id] {
                // Paid access gives the state; every covering grant, paid or grace, counts for the end and for whether
                // the customer owns it (their own grace while a family share covers the product still grants) —
                // or, under policy expiresMeaning paid-first or paid-through, the paid grants alone while one covers;
                // paid-through, in grace alone, the end of the paid period that lapsed (where the grace began).
                let paid = segs.contains { $0.kind == .paid }
                let paidOnly = policy.expiresMeaning == .paidFirst || policy.expiresMeaning == .paidThrough
                let counted = paid && paidOnly ? segs.filter { $0.kind == .paid } : segs
                let lapsed = !paid && policy.expiresMeaning == .paidThrough
                products[id] = ProductEntitlement(
                    productId: id, active: true, state: paid ? .active : .grace,
                    expiresDate: lapsed ? segs.map(\.start).max() : counted.compactMap(\.promisedEnd).max(),
                    ownership: counted.contains { $0.ownership == .purchased } ? .purchased : .familyShared)
            } else {
                // Not granted: the state of the chain whose current period of this product began last; a product
                // no chain is on any more (changed away from) has simply expired.
                let last = standing.values.filter { $0.productId == id }.max {
                    ($0.periodStart, $0.chainId) < ($1.periodStart, $1.chainId)
                }
                products[id] = ProductEntitlement(
                    productId: id, active: false, state: last?.lapsed ?? .expired, expiresDate: nil, ownership: nil)
            }
        }
        var effective: [String: String] = [:]
        for g in catalog.groups {
            let best = products.values.filter(\.active).compactMap { catalog.product($0.productId) }.filter {
                $0.groupId == g.id
            }.min { a, b in
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
                c.person == person && c.time <= t && chains[c.chainId]!.ownership == .purchased
                    && chains[c.chainId]!.groupId == g.id
            }
            intro[g.id] =
                switch policy.introEligibility {
                case .neverReceivedIntro: !own.contains { latest($0.transactionId, at: t)?.offerType == .introductory }
                case .neverSubscribed: own.isEmpty
                }
        }
        return TruthView(
            products: products, effective: effective, balances: balances.filter { $0.value != 0 }, introEligible: intro)
    }

    /// Instants worth checking: every truth boundary, one millisecond either side, and each event.
    public var interestingInstants: [Millis] {
        var ts: Set<Millis> = []
        for s in segments {
            for t in [s.start - 1, s.start, s.start + 1, s.end - 1, s.end, s.end + 1] where t < Self.forever {
                ts.insert(t)
            }
        }
        for e in events { ts.insert(e.time); ts.insert(e.time + 1) }
        return ts.sorted()
    }
}
