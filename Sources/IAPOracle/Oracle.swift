import IAPModel

/// The reference entitlement oracle: a pure function of known facts, a user and an instant (docs/semantics.md#grant-intervals, #derived-answers).
///
/// It works with grant intervals: each transaction grants `[purchaseDate, end)`, cut at its revocation and at an
/// immediate product change; grace adds `[expiresDate of the latest, gracePeriodExpiresDate)` while in billing
/// retry. Only transactions purchased at or before `t` exist at `t`. The exact answer format is in
/// `docs/answers.md`.
public enum Oracle {
    struct Grant {
        var productId: String
        var end: Millis?
        var ownership: InAppOwnershipType
        var grace: Bool
        /// An earlier end the facts already say (a revocation or an immediate product change after the instant
        /// asked about, known to a validator whose clock is behind Apple's): then the expiry is either
        /// (docs/answers.md#what-the-facts-leave-open).
        var knownEnd: Millis? = nil
    }

    /// The expected answer and the parts of it that the known facts do not decide.
    public struct Judgement: Sendable {
        public var answer: EntitlementAnswer
        /// Fields of products, groups and balances on which two readings of the facts disagree: not compared
        /// (the fields on which they agree still are).
        public var undetermined: Set<AnswerDifference.Key>
    }

    /// The answer at `t` and what of it is undetermined. These are left open by the facts or the policy:
    /// - a question about an instant before some fact was signed (the validator's clock is behind Apple's): the
    ///   newest version of a transaction or renewal info and the version in force at `t` are both defensible;
    /// - a transaction flagged `isUpgraded` without its upgrading transaction: when the upgrade happened is
    ///   known only to be before the flagged version was signed;
    /// - a renewal info with a grace date but without the billing-retry flag, under the policy that accepts
    ///   either reading of it; a `GRACE_PERIOD` notification whose renewal info has no grace date;
    /// - an introductory period changed away from at once, under the policy that accepts either reading of it.
    /// Every reading of each is computed; the fields where they differ (a product's state, a group's effective
    /// product) are not compared, every other field is.
    public static func judge(_ k: Knowledge, user: String, at t: Millis) -> Judgement {
        let readings = k.readings
        let (primary, open) = answerAndOpenStates(k, user: user, at: t, reading: readings[0])
        var undetermined = open
        func consider(_ other: EntitlementAnswer) {
            for d in other.answerDifferences(from: primary) {
                undetermined.insert(d.key)
                // A product active in one reading only: its expiry and ownership are open too.
                if d.field == .active {
                    undetermined.insert(.init(subject: d.subject, field: .expiresDate))
                    undetermined.insert(.init(subject: d.subject, field: .ownership))
                }
            }
        }
        for r in readings.dropFirst() { consider(answer(k, user: user, at: t, reading: r)) }
        if k.newestSignedDate > t {
            for past in [k.asOf(t), k.asOf(t, perPurchase: true)] {
                for r in past.readings { consider(answer(past, user: user, at: t, reading: r)) }
            }
        }
        return Judgement(answer: primary, undetermined: undetermined)
    }

    /// One purchase can reach a validator under several transactionIds — a restore, a second device, a re-grant
    /// (docs/answers.md#one-purchase-several-transactionids). A billing period keeps its `webOrderLineItemId`, a
    /// non-consumable purchase its `originalTransactionId`; whatever of the purchase was signed last, under any of
    /// its ids (a refund, an upgrade flag, an extension), is what is known of it, and every id of it says so.
    static func samePurchase(_ txs: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload] {
        // Nearly always every purchase is known under one id: find that out without sorting or copying.
        var seen: Set<PurchaseKey> = []
        seen.reserveCapacity(txs.count)
        var repeated = false
        for x in txs {
            if let p = purchaseKey(of: x), !seen.insert(p).inserted {
                repeated = true
                break
            }
        }
        guard repeated else { return txs }
        var newest: [PurchaseKey: JWSTransactionDecodedPayload] = [:]
        for x in txs.sorted(by: JWSTransactionDecodedPayload.signedBefore) {
            if let p = purchaseKey(of: x) { newest[p] = x }
        }
        return txs.map { x in
            guard let p = purchaseKey(of: x), let n = newest[p], n.transactionId != x.transactionId else { return x }
            var y = n
            y.transactionId = x.transactionId
            return y
        }
    }

    /// The purchase a transaction belongs to, when it can be known under several ids: its billing period (chain and
    /// `webOrderLineItemId`), or its non-consumable purchase (the chain alone); nil for consumables and
    /// non-renewing subscriptions.
    struct PurchaseKey: Hashable {
        var chain: String
        var period: String?
    }

    static func purchaseKey(of x: JWSTransactionDecodedPayload) -> PurchaseKey? {
        if x.type == ProductKind.autoRenewable.wireType {
            return x.webOrderLineItemId.map { PurchaseKey(chain: x.originalTransactionId, period: $0) }
        }
        if x.type == ProductKind.nonConsumable.wireType { return PurchaseKey(chain: x.originalTransactionId) }
        return nil
    }

    /// The answer at `t` under one reading of the facts (by default the policy's).
    public static func answer(_ k: Knowledge, user: String, at t: Millis, reading: Reading? = nil) -> EntitlementAnswer
    {
        answerAndOpenStates(k, user: user, at: t, reading: reading).answer
    }

    /// The answer, and the states it leaves open: an inactive product whose chains end in different states, under
    /// policy `inactiveState` `either` (Apple reports a status per chain; combining them is the app's choice,
    /// docs/semantics.md#q18-one-product-several-chains), and the inactive entitlements it alone could decide.
    static func answerAndOpenStates(_ k: Knowledge, user: String, at t: Millis, reading: Reading? = nil) -> (
        answer: EntitlementAnswer, open: Set<AnswerDifference.Key>
    ) {
        let reading = reading ?? Reading(policy: k.config.policy)
        let catalog = k.config.catalog, policy = k.config.policy
        let prepared = k.prepared(user)
        let all = prepared.all
        // Usually everything known was purchased by t: then no copy.
        let known = all.allSatisfy { $0.purchaseDate <= t } ? all : all.filter { $0.purchaseDate <= t }

        var grants: [Grant] = []
        var inactiveState: [String: (EntitlementState, Millis)] = [:]  // product → state, from the chain's latest
        var chainStates: [String: Set<EntitlementState>] = [:]  // product → every chain's state (policy inactiveState)
        var consumables: [String: Int] = [:]

        for c in prepared.chains {
            let otid = c.id, whole = c.transactions
            // The chain's transactions purchased by t (a prefix: sorted by purchase); none, no chain yet.
            var bought = 0
            while bought < c.purchased.count && c.purchased[bought] <= t { bought += 1 }
            if bought == 0 { continue }
            let chain = whole[..<bought]
            // A refund with chain scope voids every transaction bought before it (policy Q1).
            let chainRevokedAt: Millis? =
                policy.refundScope == .chain
                ? chain.compactMap { $0.revocationDate }.filter { $0 <= t }.max() : nil
            func void(_ x: JWSTransactionDecodedPayload) -> Bool {
                if x.isRevoked(at: t) { return true }
                if let r = chainRevokedAt, x.purchaseDate < r { return true }
                return false
            }
            for i in 0..<bought {
                guard let kind = c.kinds[i] else { continue }
                let x = whole[i]
                switch kind {
                case .consumable:
                    // Bounded so that no artifact, however absurd its numbers, can trap the arithmetic.
                    let q = max(0, x.quantity ?? 1)
                    var back = 0
                    if x.isRevoked(at: t) && policy.consumableClawback {
                        // One percentage covers the whole quantity (policy consumableRefundShare).
                        let pct = min(max(x.revocationPercentage ?? 100_000, 0), 100_000)
                        back =
                            policy.consumableRefundShare == .all ? q : q / 100_000 * pct + q % 100_000 * pct / 100_000
                    }
                    let (sum, over) = consumables[x.productId, default: 0].addingReportingOverflow(q - back)
                    consumables[x.productId] = over ? .max : sum
                case .nonConsumable:
                    if !void(x) {
                        grants.append(
                            Grant(
                                productId: x.productId, end: nil, ownership: x.inAppOwnershipType, grace: false,
                                knownEnd: x.revocationDate))
                    }
                case .nonRenewing:
                    break  // below, per product (stacking spans chains)
                case .autoRenewable:
                    guard !void(x), var expires = x.expiresDate else { continue }
                    let purchase = x.purchaseDate
                    if policy.extensionSignedAs == .renewalInfo {
                        // An extension signed only in the renewal info: what the renewal info signed while x was the
                        // chain's current transaction (before the next one's purchase) gives as the renewal date.
                        var next = Millis.max
                        for p in c.purchased where p > purchase {
                            next = min(next, p)
                        }
                        let said = k.renewalHistory(otid).filter {
                            $0.signedDate >= purchase && $0.signedDate < next && $0.isInBillingRetryPeriod != true
                                && $0.productId == x.productId
                        }.compactMap(\.renewalDate).max()
                        if let said, said > expires { expires = said }
                    }
                    if reading.introOutlivesChange && x.offerType == .introductory {
                        // Policy upgradeDuringIntro: the introductory period runs its course whatever came after it.
                        if x.purchaseDate <= t && t < expires {
                            grants.append(
                                Grant(
                                    productId: x.productId, end: expires, ownership: x.inAppOwnershipType, grace: false)
                            )
                        }
                        continue
                    }
                    // An immediate upgrade or crossgrade: a later PURCHASE in the chain inside x's period ends x.
                    // (Legacy receipts carry no reason; there the upgraded-from entry's is_upgraded says it.)
                    var cut: Millis?
                    func consider(_ dates: [Millis]) {
                        for p in dates where p > purchase && p < expires { cut = min(cut ?? .max, p) }
                    }
                    consider(c.purchaseReasonDates)
                    if x.isUpgraded == true { consider(c.noReasonDates) }
                    var end = min(expires, cut ?? .max)
                    if cut == nil, x.isUpgraded == true {
                        // Upgraded, but the upgrading transaction is unknown: it ended no later than the flag was signed.
                        end = min(end, reading.upgradedGrantsNothing ? x.purchaseDate : x.signedDate)
                    }
                    if x.purchaseDate <= t && t < end {
                        let known = min(end, x.revocationDate ?? .max)
                        grants.append(
                            Grant(
                                productId: x.productId, end: expires, ownership: x.inAppOwnershipType, grace: false,
                                knownEnd: known < expires ? known : nil))
                    }
                }
            }
            // Grace and the state of a chain that grants nothing now, from its latest transaction (docs/semantics.md#subscription-status).
            // The latest purchased at or before t (an isUpgraded flag signed after t must not hide it; see docs/semantics.md#subscription-status).
            guard let last = c.kinds[..<bought].lastIndex(of: .autoRenewable) else { continue }
            let latest = whole[last]
            let renewal = k.renewals[otid]
            let inRetry =
                renewal?.isInBillingRetryPeriod == true
                || (reading.graceDateMeansRetry && renewal?.gracePeriodExpiresDate != nil)
            if !void(latest), inRetry, let e = latest.expiresDate, e <= t {
                if let g = renewal?.gracePeriodExpiresDate {
                    if t < g {
                        grants.append(
                            Grant(
                                productId: latest.productId, end: g, ownership: latest.inAppOwnershipType, grace: true))
                    }
                } else if reading.graceFromSubtype, let r = renewal, k.graceClaims[otid]?.contains(r.signedDate) == true
                {
                    grants.append(
                        Grant(productId: latest.productId, end: nil, ownership: latest.inAppOwnershipType, grace: true))
                }
            }
            let state: EntitlementState = void(latest) ? .revoked : inRetry ? .billingRetry : .expired
            chainStates[latest.productId, default: []].insert(state)
            if let prev = inactiveState[latest.productId], prev.1 > latest.purchaseDate { continue }
            inactiveState[latest.productId] = (state, latest.purchaseDate)
        }

        // Non-renewing subscriptions: the app's duration from purchaseDate, optionally stacked.
        let index = k.catalogIndex
        // A transaction counts by its product id, whatever type it claims.
        if !index.nonRenewing.isEmpty, known.contains(where: { index.nonRenewingIds.contains($0.productId) }) {
            for (id, period) in index.nonRenewing {
                let txs = known.filter { $0.productId == id }.sorted(by: JWSTransactionDecodedPayload.purchasedBefore)
                guard let period else { continue }
                var lastEnd: Millis = .min
                for x in txs {
                    let start = policy.nonRenewingStacking ? max(x.purchaseDate, lastEnd) : x.purchaseDate
                    let end = period.added(to: start)
                    lastEnd = end
                    if !x.isRevoked(at: t) && start <= t && t < end {
                        let known = x.revocationDate.flatMap { $0 < end ? $0 : nil }
                        grants.append(
                            Grant(
                                productId: id, end: end, ownership: x.inAppOwnershipType, grace: false, knownEnd: known)
                        )
                    }
                }
                if let last = txs.last {
                    inactiveState[id] = (last.isRevoked(at: t) ? .revoked : .expired, last.purchaseDate)
                }
            }
        }

        // Per product: paid access gives the state (grace only without it); the end is the latest of every grant, paid
        // or grace, and the user owns it when any grant is their own (docs/answers.md#products-products).
        struct Held {
            var end: Millis?
            var purchased = false
            mutating func add(_ g: Grant) {
                if let e = g.end { end = max(end ?? e, e) }
                if g.ownership == .purchased { purchased = true }
            }
        }
        var paid: [String: Held] = [:], grace: [String: Held] = [:]
        for g in grants {
            if g.grace { grace[g.productId, default: Held()].add(g) } else { paid[g.productId, default: Held()].add(g) }
        }
        var listed: Set<String> = [], nonConsumables: Set<String> = []
        // Groups where the user's own subscription (or introductory offer, by policy) spent the intro eligibility.
        var spent: Set<String> = []
        for x in known {
            if x.type != .consumable { listed.insert(x.productId) }
            if x.type == .nonConsumable { nonConsumables.insert(x.productId) }
            if let g = x.subscriptionGroupIdentifier, x.inAppOwnershipType == .purchased,
                policy.introEligibility == .neverSubscribed || x.offerType == .introductory
            {
                spent.insert(g)
            }
        }
        var products: [ProductEntitlement] = []
        products.reserveCapacity(listed.count)
        for id in listed.sorted() {
            let held: (Held, EntitlementState)?
            switch (paid[id], grace[id]) {
            case (var p?, let g?):
                // The user's own grace while another grant (a family share) covers the product: still a grant.
                if let e = g.end { p.end = max(p.end ?? e, e) }
                p.purchased = p.purchased || g.purchased
                held = (p, .active)
            case (let p?, nil): held = (p, .active)
            case (nil, let g?): held = (g, .grace)
            case (nil, nil): held = nil
            }
            if let (h, state) = held {
                products.append(
                    ProductEntitlement(
                        productId: id, active: true, state: state, expiresDate: h.end,
                        ownership: h.purchased ? .purchased : .familyShared))
            } else {
                let state = inactiveState[id]?.0 ?? (nonConsumables.contains(id) ? .revoked : .expired)
                products.append(
                    ProductEntitlement(productId: id, active: false, state: state, expiresDate: nil, ownership: nil))
            }
        }

        // A group's effective product: its active product of the highest level (1 is highest; ties by id).
        var best: [String: (level: Int, id: String)] = [:]
        for p in products where p.active {
            guard let place = index.placement[p.productId] else { continue }
            if let b = best[place.groupId], (b.level, b.id) <= (place.level, p.productId) { continue }
            best[place.groupId] = (place.level, p.productId)
        }
        let groups = index.groupIds.map { g in
            GroupEntitlement(groupId: g, effectiveProductId: best[g]?.id, introEligible: !spent.contains(g))
        }
        let answer = EntitlementAnswer(
            products: products, groups: groups,
            consumables: consumables.map { ConsumableBalance(productId: $0.key, balance: $0.value) },
            entitlements: catalog.entitlementGrants(from: products))
        // An end the facts already know ahead of `t`: the transaction's own expiry or that end (either).
        let earlyEnds = Set(grants.filter { $0.knownEnd != nil }.map(\.productId))
        let splitStates = policy.inactiveState == .either && chainStates.values.contains { $0.count > 1 }
        guard !earlyEnds.isEmpty || splitStates else { return (answer, []) }
        var open: Set<AnswerDifference.Key> = []
        var openStates: Set<String> = []
        for p in products {
            if p.active && earlyEnds.contains(p.productId) {
                open.insert(.init(subject: .product(p.productId), field: .expiresDate))
            }
            if splitStates && !p.active && (chainStates[p.productId]?.count ?? 0) > 1 {
                openStates.insert(p.productId)
                open.insert(.init(subject: .product(p.productId), field: .state))
            }
        }
        for e in catalog.entitlements ?? [] {
            let granted = answer.entitlements.first { $0.entitlementId == e.id }
            if granted?.active == true && e.products.contains(where: earlyEnds.contains) {
                open.insert(.init(subject: .entitlement(e.id), field: .expiresDate))
            }
            if granted?.active == false && e.products.contains(where: openStates.contains) {
                open.insert(.init(subject: .entitlement(e.id), field: .state))
            }
        }
        return (answer, open)
    }
}
