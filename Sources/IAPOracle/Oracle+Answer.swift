import IAPModel

/// The rules that turn the grants of every chain into the answer a validator gives (docs/answers.md), and the
/// fields of it the facts leave open.
extension Oracle {
    /// What the grants of one product add up to: the latest end, and whether any grant is the user's own.
    struct Held {
        var end: Millis?
        var purchased = false
        /// Grace grants: the latest end of the paid periods that lapsed.
        var paidEnd: Millis?
        mutating func add(_ g: Grant) {
            if let e = g.end { end = max(end ?? e, e) }
            if let p = g.paidEnd { paidEnd = max(paidEnd ?? p, p) }
            if g.ownership == .purchased { purchased = true }
        }
    }

    /// Per product: paid access gives the state (grace only without it); the end is the latest of every grant, paid
    /// or grace, and the user owns it when any grant is their own (docs/answers.md#products-products). Listed:
    /// every product of a known transaction but consumables, which are balances.
    static func productEntitlements(_ tally: Tally, known: [JWSTransactionDecodedPayload], reading: Reading)
        -> [ProductEntitlement]
    {
        var paid: [String: Held] = [:], grace: [String: Held] = [:]
        for g in tally.grants {
            if g.grace { grace[g.productId, default: Held()].add(g) } else { paid[g.productId, default: Held()].add(g) }
        }
        var listed: Set<String> = [], nonConsumables: Set<String> = []
        for x in known {
            if x.type != .consumable { listed.insert(x.productId) }
            if x.type == .nonConsumable { nonConsumables.insert(x.productId) }
        }
        var products: [ProductEntitlement] = []
        products.reserveCapacity(listed.count)
        for id in listed.sorted() {
            if let (h, state) = held(paid: paid[id], grace: grace[id], meaning: reading.expiresMeaning) {
                products.append(
                    ProductEntitlement(
                        productId: id, active: true, state: state, expiresDate: h.end,
                        ownership: ownership(h)))
            } else {
                // An inactive product's state: its chains' (inactiveState); a non-consumable without one was revoked.
                let state = tally.inactiveState[id]?.state ?? (nonConsumables.contains(id) ? .revoked : .expired)
                products.append(
                    ProductEntitlement(productId: id, active: false, state: state, expiresDate: nil, ownership: nil))
            }
        }
        return products
    }

    /// Family Sharing: a product is the user's own (`PURCHASED`) when any grant holding it is their own purchase, and
    /// `FAMILY_SHARED` only when every grant is a family member's share — members get transactions of their own,
    /// marked `inAppOwnershipType: FAMILY_SHARED` (docs/semantics.md#family-sharing). A share ends with `REVOKE`,
    /// whose revocation voids it like a refund (``revoked(_:at:)``).
    static func ownership(_ h: Held) -> InAppOwnershipType {
        h.purchased ? .purchased : .familyShared
    }

    /// A product is active when any grant holds it; grace gives the state only without paid access, and the user's
    /// own grace still counts while another grant (a family share) covers the product: the later end, and the
    /// user's own ownership — or, read paid-first or paid-through (``Reading/expiresMeaning``), the paid grant's end
    /// and ownership; paid-through, in grace alone, the end of the paid period that lapsed
    /// (docs/semantics.md#q18-one-product-several-chains: "continue to provide service through the grace period"
    /// says access, not which grant a backend reports).
    static func held(paid: Held?, grace: Held?, meaning: Policy.ExpiresMeaning = .accessEnd)
        -> (Held, EntitlementState)?
    {
        switch (paid, grace) {
        case (let p?, _?) where meaning == .paidFirst || meaning == .paidThrough: return (p, .active)
        case (nil, var g?) where meaning == .paidThrough:
            g.end = g.paidEnd
            return (g, .grace)
        case (var p?, let g?):
            if let e = g.end { p.end = max(p.end ?? e, e) }
            p.purchased = p.purchased || g.purchased
            return (p, .active)
        case (let p?, nil): return (p, .active)
        case (nil, let g?): return (g, .grace)
        case (nil, nil): return nil
        }
    }

    /// One entry per catalog group: its effective product is its active product of the highest level (1 is
    /// highest; ties by id) (docs/semantics.md#levels-and-classification), and its introductory offer stays open
    /// until spent (``introSpentGroups(_:policy:)``).
    static func groupEntitlements(
        _ products: [ProductEntitlement], known: [JWSTransactionDecodedPayload], _ k: Knowledge
    )
        -> [GroupEntitlement]
    {
        let index = k.catalogIndex
        var best: [String: (level: Int, id: String)] = [:]
        for p in products where p.active {
            guard let place = index.placement[p.productId] else { continue }
            if let b = best[place.groupId], (b.level, b.id) <= (place.level, p.productId) { continue }
            best[place.groupId] = (place.level, p.productId)
        }
        let spent = introSpentGroups(known, policy: k.config.policy)
        return index.groupIds.map { g in
            GroupEntitlement(groupId: g, effectiveProductId: best[g]?.id, introEligible: !spent.contains(g))
        }
    }

    /// Groups where the user spent the intro eligibility: by default an introductory offer of their own taken in
    /// the group; under policy introEligibility `never-subscribed`, any subscription of their own in it. A family
    /// share spends nothing (docs/semantics.md#offers-and-intro-eligibility, #q7-intro-eligibility-definition).
    static func introSpentGroups(_ known: [JWSTransactionDecodedPayload], policy: Policy) -> Set<String> {
        var spent: Set<String> = []
        for x in known {
            if let g = x.subscriptionGroupIdentifier, x.inAppOwnershipType == .purchased,
                policy.introEligibility == .neverSubscribed || x.offerType == .introductory
            {
                spent.insert(g)
            }
        }
        return spent
    }

    /// The fields the facts leave open (docs/answers.md#what-the-facts-leave-open): the expiry of an active product
    /// whose end the facts already know ahead of the instant (its own expiry or that end), and, under policy
    /// inactiveState `either`, the state of an inactive product whose chains end in different states; with the
    /// entitlements those products alone could decide.
    static func openFields(_ answer: EntitlementAnswer, _ tally: Tally, _ config: ValidatorConfig)
        -> Set<AnswerDifference.Key>
    {
        let earlyEnds = Set(tally.grants.filter { $0.knownEnd != nil }.map(\.productId))
        let splitStates = config.policy.inactiveState == .either && tally.chainStates.values.contains { $0.count > 1 }
        guard !earlyEnds.isEmpty || splitStates else { return [] }
        var open: Set<AnswerDifference.Key> = []
        var openStates: Set<String> = []
        for p in answer.products {
            if p.active && earlyEnds.contains(p.productId) {
                open.insert(.init(subject: .product(p.productId), field: .expiresDate))
            }
            if splitStates && !p.active && (tally.chainStates[p.productId]?.count ?? 0) > 1 {
                openStates.insert(p.productId)
                open.insert(.init(subject: .product(p.productId), field: .state))
            }
        }
        for e in config.catalog.entitlements ?? [] {
            let granted = answer.entitlements.first { $0.entitlementId == e.id }
            if granted?.active == true && e.products.contains(where: earlyEnds.contains) {
                open.insert(.init(subject: .entitlement(e.id), field: .expiresDate))
            }
            if granted?.active == false && e.products.contains(where: openStates.contains) {
                open.insert(.init(subject: .entitlement(e.id), field: .state))
            }
        }
        return open
    }
}
