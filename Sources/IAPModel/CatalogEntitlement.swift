/// A right the app grants, unlocked by any of several products: what RevenueCat calls an entitlement, Adapty an
/// access level, Apphud a permission group, and many teams simply `isPro` (`docs/catalog.md#entitlements`).
public struct CatalogEntitlement: Codable, Hashable, Sendable {
    public var id: String
    /// The products that unlock it: auto-renewable and non-renewing subscriptions, non-consumables (a consumable
    /// is spent, it unlocks nothing).
    public var products: [String]

    public init(id: String, products: [String]) {
        self.id = id
        self.products = products
    }
}

extension Catalog {
    /// The catalog's entitlements (none when it declares none).
    public var entitlementList: [CatalogEntitlement] { entitlements ?? [] }

    /// This catalog, with entitlements made up from its products when it declares none: one per subscription group
    /// (its products), one per level of a group with several levels (its tiers), and `all-access` (every
    /// subscription and non-consumable; several groups, a lifetime unlock and non-renewing passes then overlap,
    /// lapse and get refunded one at a time under one entitlement). Made
    /// from the catalog alone, so a case's catalog draw does not change. Used when a validator declares entitlement
    /// answers and the catalog has none (a drawn catalog, the built-in one).
    public func withEntitlements() -> Catalog {
        guard entitlements == nil else { return self }
        var out = self
        var list: [CatalogEntitlement] = []
        for g in groups {
            let inGroup = products(inGroup: g.id)
            if !inGroup.isEmpty { list.append(CatalogEntitlement(id: "group-" + g.id, products: inGroup.map(\.id))) }
            // A tier per level, when the group has several: an upgrade, downgrade or crossgrade moves between
            // entitlements, so a product kept or started at the wrong instant shows (tiers in a group-wide
            // entitlement would hide it).
            let levels = Set(inGroup.compactMap(\.level)).sorted()
            if levels.count > 1 {
                for l in levels {
                    list.append(
                        CatalogEntitlement(
                            id: "group-\(g.id)-level-\(l)", products: inGroup.filter { $0.level == l }.map(\.id)))
                }
            }
        }
        let all = products.filter { $0.kind != .consumable }.map(\.id)
        if !all.isEmpty { list.append(CatalogEntitlement(id: "all-access", products: all)) }
        out.entitlements = list
        return out
    }

    /// The entitlements of a user whose products are `products` (an answer's product list): every entitlement
    /// that one of the listed products unlocks, active when one of its products is active, in the best state among
    /// its products (active, grace, billing-retry, expired, revoked), expiring with the latest of its active
    /// products (never, when a non-consumable is among them), `PURCHASED` when one of its active products is.
    /// Pure and shared by the oracle and the reference, which compute their product lists independently.
    public func entitlementGrants(from products: [ProductEntitlement]) -> [EntitlementGrant] {
        guard let entitlements, !entitlements.isEmpty else { return [] }
        var byId: [String: ProductEntitlement] = [:]
        for p in products where byId[p.productId] == nil { byId[p.productId] = p }
        var out: [EntitlementGrant] = []
        for e in entitlements {
            let held = Set(e.products).compactMap { byId[$0] }
            guard !held.isEmpty else { continue }
            let active = held.filter(\.active)
            let best = held.map(\.state).min { $0.rank < $1.rank }!
            guard !active.isEmpty else {
                out.append(
                    EntitlementGrant(entitlementId: e.id, active: false, state: best, expiresDate: nil, ownership: nil))
                continue
            }
            let forever = active.contains { $0.expiresDate == nil }
            out.append(
                EntitlementGrant(
                    entitlementId: e.id, active: true, state: best,
                    expiresDate: forever ? nil : active.compactMap(\.expiresDate).max(),
                    ownership: active.contains { $0.ownership == .purchased } ? .purchased : .familyShared))
        }
        return out
    }
}
