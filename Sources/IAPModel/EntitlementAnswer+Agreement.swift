extension EntitlementAnswer {
    /// True exactly when ``answerDifferences(from:ignoring:)`` finds no difference at all, decided without building
    /// its dictionaries: almost every question of a check agrees, and the lists hold a handful of entries, so a
    /// linear search per id is cheaper than hashing them. Ids are looked up by their first entry, as there.
    package func agrees(with expected: EntitlementAnswer) -> Bool {
        // A validator may list thousands of ids (a hostile or broken one did: 150,000 unknown products per answer
        // kept a 20-case check busy for minutes); the searches below are quadratic in that, the keyed comparison not.
        if products.count + groups.count + consumables.count + entitlements.count > 64 {
            return allDifferences(from: expected, ignoring: []).isEmpty
        }
        typealias Grant = (active: Bool, state: EntitlementState, expires: Millis?, ownership: InAppOwnershipType?)
        /// What `grant` in ``answerDifferences(from:ignoring:)`` reports nothing for.
        func same(_ e: Grant?, _ o: Grant?) -> Bool {
            switch (e, o) {
            case let (e?, o?):
                guard e.active == o.active, e.state == o.state else { return false }
                return !e.active || (e.expires == o.expires && e.ownership == o.ownership)
            case let (e?, nil): return !e.active
            case let (nil, o?): return !o.active
            case (nil, nil): return true
            }
        }
        func product(_ list: [ProductEntitlement], _ id: String) -> Grant? {
            list.first { $0.productId == id }.map { ($0.active, $0.state, $0.expiresDate, $0.ownership) }
        }
        for list in [products, expected.products] {
            for id in list.lazy.map(\.productId) where !same(product(expected.products, id), product(products, id)) {
                return false
            }
        }
        for e in expected.groups {
            guard let o = groups.first(where: { $0.groupId == e.groupId }),
                o.effectiveProductId == e.effectiveProductId, o.introEligible == e.introEligible
            else { return false }
        }
        func balance(_ list: [ConsumableBalance], _ id: String) -> Int {
            list.first { $0.productId == id }?.balance ?? 0
        }
        for list in [consumables, expected.consumables] {
            for id in list.lazy.map(\.productId) where balance(consumables, id) != balance(expected.consumables, id) {
                return false
            }
        }
        func entitlement(_ list: [EntitlementGrant], _ id: String) -> Grant? {
            list.first { $0.entitlementId == id }.map { ($0.active, $0.state, $0.expiresDate, $0.ownership) }
        }
        for list in [entitlements, expected.entitlements] {
            for id in list.lazy.map(\.entitlementId)
            where !same(entitlement(expected.entitlements, id), entitlement(entitlements, id)) {
                return false
            }
        }
        return true
    }

    /// `list` in id order; the list itself (no copy, no sort) when it already is: the oracle lists products in id
    /// order, a catalog mostly its groups, and many validators their answers. Ties keep their order either way.
    static func sortedById<T>(_ list: [T], _ id: (T) -> String) -> [T] {
        var i = 1
        while i < list.count && !(id(list[i]) < id(list[i - 1])) { i += 1 }
        return i >= list.count ? list : list.sorted { id($0) < id($1) }
    }
}

extension EntitlementAnswer {
    /// This answer with every expiry that lies within `precision` ms of the expected one's set to it: how a
    /// validator that keeps dates to the second (`"precision": "s"`, docs/http-target.md#precision) is compared.
    /// This answer as `profile` can be compared with `expected`: its dates within the profile's precision taken as
    /// the expected ones, and a state the validator tells with one word for several taken as the expected one of its
    /// group (``ValidatorProfile/stateGroups``).
    public func snapping(to expected: EntitlementAnswer, profile: ValidatorProfile) -> EntitlementAnswer {
        var a = snappingDates(to: expected, within: profile.datePrecision)
        guard !profile.stateGroups.isEmpty else { return a }
        func told(_ o: EntitlementState, _ e: EntitlementState?) -> EntitlementState {
            guard let e, o != e, profile.stateGroup(of: o)?.contains(e) == true else { return o }
            return e
        }
        let products = Self.firstById(expected.products, \.productId)
        let entitlements = Self.firstById(expected.entitlements, \.entitlementId)
        for i in a.products.indices {
            a.products[i].state = told(a.products[i].state, products[a.products[i].productId]?.state)
        }
        for i in a.entitlements.indices {
            a.entitlements[i].state = told(
                a.entitlements[i].state, entitlements[a.entitlements[i].entitlementId]?.state)
        }
        return a
    }

    public func snappingDates(to expected: EntitlementAnswer, within precision: Millis) -> EntitlementAnswer {
        guard precision > 1 else { return self }
        func near(_ o: Millis?, _ e: Millis?) -> Millis? {
            guard let o, let e, abs(o - e) < precision else { return o }
            return e
        }
        var a = self
        // Keyed, not searched: `diff` snaps one validator's answer to another's, and either may be long.
        let products = Self.firstById(expected.products, \.productId)
        let entitlements = Self.firstById(expected.entitlements, \.entitlementId)
        for i in a.products.indices {
            a.products[i].expiresDate = near(a.products[i].expiresDate, products[a.products[i].productId]?.expiresDate)
        }
        for i in a.entitlements.indices {
            let e = entitlements[a.entitlements[i].entitlementId]?.expiresDate
            a.entitlements[i].expiresDate = near(a.entitlements[i].expiresDate, e)
        }
        return a
    }

    /// The products and entitlements whose expiry here is the expected one cut to a whole second: the mark of a
    /// validator that keeps seconds while iapcheck compares milliseconds.
    public func expiriesCutToSeconds(comparedTo expected: EntitlementAnswer) -> [String] {
        func cut(_ o: Millis?, _ e: Millis?) -> Bool {
            guard let o, let e, o != e else { return false }
            return o % 1000 == 0 && abs(o - e) < 1000
        }
        var out: [String] = []
        for p in products where cut(p.expiresDate, expected.products.first { $0.productId == p.productId }?.expiresDate)
        {
            out.append(p.productId)
        }
        for g in entitlements
        where cut(g.expiresDate, expected.entitlements.first { $0.entitlementId == g.entitlementId }?.expiresDate) {
            out.append(g.entitlementId)
        }
        return out
    }
}
