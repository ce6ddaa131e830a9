import Foundation
import IAPModel

extension ReferenceValidator {
    struct Holding {
        var state: EntitlementState
        var expires: Millis?
        var ownership: InAppOwnershipType?
        var since: Millis
    }

    /// What the user holds of each product, merged as holdings arrive, with what the group answers need.
    struct Holdings {
        var held: [String: Holding] = [:]
        /// Per group, the user's own transactions in it (intro eligibility).
        var introTxs: [String: [JWSTransactionDecodedPayload]] = [:]
        /// Per non-renewing product, its transactions of every chain (stacking spans chains).
        var nonRenewing: [String: [JWSTransactionDecodedPayload]] = [:]
        /// Policy expiresMeaning paid-first or paid-through: a paid grant beside the user's own grace gives the end and
        /// ownership.
        var paidFirst = false

        /// Keeps the better of two holdings of a product: entitled beats not; of two entitled, paid access gives the
        /// state, the holding lasts as long as either (a grace of the user's own beyond a family share still
        /// grants) and is the user's own if either is; of two not entitled, the later purchase
        /// (docs/answers.md#products-products, docs/semantics.md#q18-one-product-several-chains).
        mutating func record(_ productId: String, _ h: Holding) {
            guard let old = held[productId] else {
                held[productId] = h
                return
            }
            switch (old.state.isEntitled, h.state.isEntitled) {
            case (false, true): held[productId] = h
            case (true, true) where paidFirst && (old.state == .active) != (h.state == .active):
                // Policy expiresMeaning paid-first: the paid grant's end and ownership while it covers.
                held[productId] = old.state == .active ? old : h
            case (true, true):
                var merged = h.state == .active && old.state != .active ? h : old
                if let a = old.expires, let b = h.expires { merged.expires = max(a, b) }
                if h.ownership == .purchased || old.ownership == .purchased { merged.ownership = .purchased }
                held[productId] = merged
            case (false, false): if h.since >= old.since { held[productId] = h }
            case (true, false): break
            }
        }
    }

    /// Per chain: the latest transaction's status (auto-renewable), each purchase (non-consumable), stacked or
    /// overlapping periods (non-renewing); per product the best holding; per group the highest level held
    /// (docs/semantics.md#derived-answers).
    func answer(_ q: EntitlementQuery) -> EntitlementAnswer {
        let t = evaluationInstant(q)
        var holdings = Holdings()
        holdings.paidFirst = [.paidFirst, .paidThrough].contains(config.policy.expiresMeaning)
        for otid in chains.keys.filter({ user(ofChain: $0) == q.userId }).sorted() {
            hold(chain: otid, at: t, into: &holdings)
        }
        holdNonRenewing(at: t, into: &holdings)
        let products = holdings.held.map { id, h in
            ProductEntitlement(
                productId: id, active: h.state.isEntitled, state: h.state,
                expiresDate: h.state.isEntitled ? h.expires : nil, ownership: h.state.isEntitled ? h.ownership : nil)
        }
        let balances = consumableBalance(userId: q.userId, at: t).map {
            ConsumableBalance(productId: $0.key, balance: $0.value)
        }
        return EntitlementAnswer(
            products: products, groups: groupAnswers(products, introTxs: holdings.introTxs), consumables: balances,
            entitlements: config.catalog.entitlementGrants(from: products))
    }

    /// One chain's holdings at `t`, by the kind of its first transaction; the transactions it lists, one per
    /// purchase, purchased by `t` and of this app.
    func hold(chain otid: String, at t: Millis, into holdings: inout Holdings) {
        let chain = chains[otid]!
        let listed = transactions(of: chain, chain: otid, at: t)
        let everything = chain.severalIdsPerPurchase ? onePerPurchase(listed) : listed
        let txs = everything.filter { $0.purchaseDate <= t && includes($0) }
            .sorted(by: JWSTransactionDecodedPayload.purchasedBefore)
        for tx in txs where tx.inAppOwnershipType == .purchased {
            if let g = tx.subscriptionGroupIdentifier { holdings.introTxs[g, default: []].append(tx) }
        }
        guard let first = txs.first else { return }
        switch first.type {
        case .autoRenewable:
            let renewal = renewalInfo(of: chain, chain: otid, at: t)
            holdSubscription(txs, everything: everything, renewal: renewal, chain: otid, at: t, into: &holdings)
        case .nonConsumable:
            for tx in txs {
                let ok = !isRevoked(tx, at: t)
                holdings.record(
                    tx.productId,
                    Holding(state: ok ? .active : .revoked, ownership: ok ? ownership(tx) : nil, since: tx.purchaseDate)
                )
            }
        case .nonRenewing:
            holdings.nonRenewing[first.productId, default: []] += txs
        default:
            break
        }
    }

    /// An auto-renewable chain holds what its latest transaction's status says — active, grace, or the inactive
    /// state — for the product it entitles to; its earlier products are expired, save an introductory period left
    /// running under policy `upgradeDuringIntro` `union` (docs/semantics.md#subscription-status,
    /// #q2-upgrade-during-an-introductory-offer).
    func holdSubscription(
        _ txs: [JWSTransactionDecodedPayload], everything: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis, into holdings: inout Holdings
    ) {
        guard let latest = latestTransaction(txs, chain: otid, at: t) else { return }
        for tx in txs where tx.productId != latest.productId {
            holdings.record(tx.productId, Holding(state: .expired, since: .min))
        }
        var s = status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
        let introRuns = config.policy.upgradeDuringIntro == .union
        if s == .active, upgradedAway(latest, chain: everything), !(introRuns && latest.offerType == .introductory) {
            s = .expired
        }
        if introRuns {
            for tx in introPeriodsLeftRunning(txs, latest: latest, at: t) {
                holdings.record(
                    tx.productId,
                    Holding(
                        state: .active, expires: periodEnd(of: tx, chain: otid), ownership: ownership(tx),
                        since: tx.purchaseDate))
            }
        }
        let productId = entitledProduct(latest: latest, renewal: renewal)
        guard isEntitled(s) else {
            let state: EntitlementState = s == .revoked ? .revoked : s == .billingRetry ? .billingRetry : .expired
            holdings.record(productId, Holding(state: state, since: latest.purchaseDate))
            return
        }
        let grace = s != .active
        // Policy expiresMeaning paid-through: in grace, the end of the period that lapsed.
        let lapsed = grace && config.policy.expiresMeaning == .paidThrough
        let exp =
            grace && !lapsed
            ? graceEnd(renewal, latest: latest) : lapsed ? latest.expiresDate : periodEnd(of: latest, chain: otid)
        holdings.record(
            productId,
            Holding(
                state: grace ? .grace : .active, expires: exp, ownership: ownership(latest), since: latest.purchaseDate)
        )
    }

    /// Non-renewing products, each over every chain: periods from purchase, stacked by policy nonRenewingStacking; a
    /// product without a duration is active, without an end, from each unrevoked purchase; a product none of whose
    /// periods covers `t` is expired, or revoked when its last purchase was (docs/semantics.md#product-types).
    func holdNonRenewing(at t: Millis, into holdings: inout Holdings) {
        for (productId, txs) in holdings.nonRenewing.sorted(by: { $0.key < $1.key }) {
            var lastEnd: Millis = .min
            let ordered = txs.sorted(by: JWSTransactionDecodedPayload.purchasedBefore)
            for tx in ordered {
                let start = config.policy.nonRenewingStacking ? max(tx.purchaseDate, lastEnd) : tx.purchaseDate
                guard let end = nonRenewingEnd(tx, start: start) else {
                    if !isRevoked(tx, at: t) {
                        holdings.record(
                            productId, Holding(state: .active, ownership: ownership(tx), since: tx.purchaseDate))
                    }
                    continue
                }
                lastEnd = end
                if !isRevoked(tx, at: t) && covers(start: start, end: end, at: t) {
                    holdings.record(
                        productId,
                        Holding(state: .active, expires: end, ownership: ownership(tx), since: tx.purchaseDate))
                }
            }
            if holdings.held[productId] == nil || !(holdings.held[productId]!.state.isEntitled), let last = ordered.last
            {
                holdings.held[productId] = Holding(
                    state: isRevoked(last, at: t) ? .revoked : .expired, since: last.purchaseDate)
            }
        }
    }

    /// Per group, its active product of the highest level (1 is highest; ties by id), and its intro eligibility
    /// (docs/semantics.md#levels-and-classification, #offers-and-intro-eligibility).
    func groupAnswers(_ products: [ProductEntitlement], introTxs: [String: [JWSTransactionDecodedPayload]])
        -> [GroupEntitlement]
    {
        var best: [String: (level: Int, productId: String)] = [:]
        for p in products where p.active {
            guard let place = placementById[p.productId] else { continue }
            if let b = best[place.groupId], (b.level, b.productId) <= (place.level, p.productId) { continue }
            best[place.groupId] = (place.level, p.productId)
        }
        return config.catalog.groups.map { g -> GroupEntitlement in
            GroupEntitlement(
                groupId: g.id, effectiveProductId: best[g.id]?.productId,
                introEligible: introEligible(group: g.id, own: introTxs[g.id] ?? []))
        }
    }

    /// `a + b`, stopping at the ends of `Int` instead of trapping.
    package static func saturating(_ a: Int, _ b: Int) -> Int {
        let (sum, over) = a.addingReportingOverflow(b)
        return over ? (b > 0 ? .max : .min) : sum
    }

    func consumableUnits(userId: String, at t: Millis) -> [String: Int] {
        var out: [String: Int] = [:]
        for tx in consumableCredits.values
        where tx.purchaseDate <= t && user(ofChain: tx.originalTransactionId) == userId {
            let units = max(tx.quantity ?? 1, 0)
            var kept = units
            if config.policy.consumableClawback && isRevoked(tx, at: t) {
                switch config.policy.consumableRefundShare {
                case .all: kept = 0
                case .share:
                    // What was not refunded stays: the unrefunded fraction of the units, a partial unit counting
                    // whole. Full-width, so that a huge quantity cannot overflow.
                    let share = Swift.min(Swift.max(tx.revocationPercentage ?? 100_000, 0), 100_000)
                    kept = units - 100_000.dividingFullWidth(units.multipliedFullWidth(by: share)).quotient
                }
            }
            out[tx.productId] = Self.saturating(out[tx.productId, default: 0], kept)
        }
        return out
    }
}

// Decision points no mutant replaces (yet): not overridable.
extension ReferenceValidator {
    /// A transaction flagged `isUpgraded` with no later transaction known: the customer moved to another product
    /// and the upgrading transaction has not arrived yet, so it entitles to nothing. (With the upgrading
    /// transaction known, the upgraded one is simply no longer the latest once the upgrade's `purchaseDate` is
    /// reached.)
    public func upgradedAway(_ latest: JWSTransactionDecodedPayload, chain all: [JWSTransactionDecodedPayload]) -> Bool
    {
        guard latest.isUpgraded == true else { return false }
        let expires = periodEnd(of: latest, chain: latest.originalTransactionId) ?? .max
        // The upgrade is a purchase inside the upgraded period (legacy receipts carry no reason).
        return !all.contains { y in
            (y.transactionReason == .purchase || y.transactionReason == nil)
                && y.purchaseDate > latest.purchaseDate && y.purchaseDate < expires
        }
    }

    /// Under policy `upgradeDuringIntro` `union`: the introductory-offer transactions of a chain, other than its
    /// current one, that the customer changed away from and that still run at `t` (their own period, not revoked,
    /// and not voided by a refund of the chain when refunds void chains).
    public func introPeriodsLeftRunning(
        _ txs: [JWSTransactionDecodedPayload], latest: JWSTransactionDecodedPayload, at t: Millis
    ) -> [JWSTransactionDecodedPayload] {
        txs.filter { tx in
            guard tx.transactionId != latest.transactionId, tx.offerType == .introductory, !isRevoked(tx, at: t),
                let e = periodEnd(of: tx, chain: tx.originalTransactionId),
                covers(start: tx.purchaseDate, end: e, at: t)
            else { return false }
            let voidedByChainRefund =
                config.policy.refundScope == .chain
                && txs.contains { isRevoked($0, at: t) && $0.revocationDate! > tx.purchaseDate }
            return !voidedByChainRefund
        }
    }

    /// Whether `tx`, new to `chain`, is a purchase the chain already holds under another id (a restore): a
    /// non-consumable's chain is one purchase; a subscription period keeps its `webOrderLineItemId`.
    static func repeatsAPurchase(_ tx: JWSTransactionDecodedPayload, in chain: Chain) -> Bool {
        if tx.type == .nonConsumable { return !chain.transactions.isEmpty }
        guard let w = tx.webOrderLineItemId else { return false }
        return chain.transactions.values.contains { $0.webOrderLineItemId == w }
    }

    /// Runs `body` on the chain `otid` (a new one when there is none) where `chains` stores it.
    func withChain(_ otid: String, _ body: (inout Chain) -> Void) {
        body(&chains[otid, default: Chain()])
    }

    public func user(ofChain otid: String) -> String? {
        guard let chain = chains[otid] else { return nil }
        if let u = chain.user { return u }
        return chain.transactions.values.lazy.compactMap(\.appAccountToken).first
    }
}
