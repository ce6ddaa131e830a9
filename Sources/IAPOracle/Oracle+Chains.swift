import IAPModel

/// The rules that read one chain at one instant: what each of its transactions grants, and what its latest
/// subscription transaction says of grace and of the chain's state. Each rule names the section of
/// docs/semantics.md (or docs/answers.md) it implements.
extension Oracle {
    /// What the rules have found of one user at one instant: the grants, the consumable balances, and the state each
    /// product's chains end in.
    struct Tally {
        var grants: [Grant] = []
        /// Product → the state of the chain whose latest transaction was purchased last, and that purchase.
        var inactiveState: [String: (state: EntitlementState, purchased: Millis)] = [:]
        /// Product → every chain's state (policy inactiveState).
        var chainStates: [String: Set<EntitlementState>] = [:]
        var consumables: [String: Int] = [:]

        /// Adds to a consumable balance; saturates rather than traps, however absurd the artifact's numbers.
        mutating func credit(_ productId: String, _ n: Int) {
            let (sum, over) = consumables[productId, default: 0].addingReportingOverflow(n)
            consumables[productId] = over ? .max : sum
        }
    }

    /// One chain as it stands at `t`: the transactions purchased by then (a prefix, as they are sorted by purchase),
    /// and the refund that voids them.
    struct ChainAt {
        let chain: Prepared.Chain
        let t: Millis
        /// How many of the chain's transactions were purchased by `t`.
        let bought: Int
        /// A refund with chain scope: every transaction bought before it is void (policy Q1).
        let chainRevokedAt: Millis?
        /// The first refund of chain scope after `t` the facts already know (of any transaction of the chain): it
        /// voids everything bought by `t`, an end known ahead.
        let nextChainRefund: Millis?

        /// nil when nothing of the chain was purchased by `t`: no chain yet.
        init?(_ c: Prepared.Chain, at t: Millis, policy: Policy) {
            var bought = 0
            while bought < c.purchased.count && c.purchased[bought] <= t { bought += 1 }
            if bought == 0 { return nil }
            chain = c
            self.t = t
            self.bought = bought
            chainRevokedAt =
                policy.refundScope == .chain
                ? c.transactions[..<bought].compactMap { $0.revocationDate }.filter { $0 <= t }.max() : nil
            nextChainRefund =
                policy.refundScope == .chain
                ? c.transactions.compactMap { $0.revocationDate }.filter { $0 > t }.min() : nil
        }

        /// When `x`, granting at `t`, is already known to stop granting: its own revocation, or the next refund of
        /// chain scope (docs/semantics.md#q1-refund-scope-and-timing); nil when no end is known ahead.
        func knownEnd(of x: JWSTransactionDecodedPayload) -> Millis? {
            [x.revocationDate, nextChainRefund].compactMap { $0 }.min()
        }

        /// A transaction that grants nothing at `t`: revoked itself, or bought before a refund of chain scope
        /// (docs/semantics.md#refunds-and-revocation, #q1-refund-scope-and-timing).
        func void(_ x: JWSTransactionDecodedPayload) -> Bool {
            if Oracle.revoked(x, at: t) { return true }
            if let r = chainRevokedAt, x.purchaseDate < r { return true }
            return false
        }
    }

    /// Refunds and their reversal: a transaction is void from its `revocationDate` on, whether a refund or a family
    /// `REVOKE` put it there (docs/semantics.md#refunds-and-revocation). The version read is the transaction's
    /// standing one, the newest signed (``Knowledge/stands(_:over:)``): a `REFUND_REVERSED` version, signed after the
    /// refund, carries no revocation fields, so once the reversal is known the purchase grants as if never refunded,
    /// its renewal date unchanged (docs/semantics.md#refund-reversal).
    static func revoked(_ x: JWSTransactionDecodedPayload, at t: Millis) -> Bool {
        guard let r = x.revocationDate else { return false }
        return r <= t
    }

    /// Everything one chain says at `t`: what each transaction grants by its kind, then grace and the chain's state
    /// from its latest subscription transaction (docs/semantics.md#grant-intervals).
    static func tallyChain(_ c: ChainAt, _ k: Knowledge, _ reading: Reading, into tally: inout Tally) {
        for i in 0..<c.bought {
            guard let kind = c.chain.kinds[i] else { continue }
            let x = c.chain.transactions[i]
            switch kind {
            case .consumable:
                tally.credit(x.productId, consumableCredit(x, at: c.t, policy: k.config.policy))
            case .nonConsumable:
                if let g = nonConsumableGrant(x, c) { tally.grants.append(g) }
            case .nonRenewing:
                break  // tallyNonRenewing, per product: stacking spans chains
            case .autoRenewable:
                if let g = periodGrant(x, c, k, reading) { tally.grants.append(g) }
            }
        }
        tallyLatest(c, k, reading, into: &tally)
    }

    /// What a consumable purchase adds to its balance: its quantity, once per transactionId; a revoked one is taken
    /// back under policy consumableClawback, every unit (consumableRefundShare `all`) or the refunded share of the
    /// quantity, one percentage for all of it (`share`) (docs/semantics.md#grant-intervals,
    /// #q17-partial-refund-of-a-consumable-quantity). Bounded so that no artifact, however absurd its numbers, can
    /// trap the arithmetic.
    static func consumableCredit(_ x: JWSTransactionDecodedPayload, at t: Millis, policy: Policy) -> Int {
        let q = max(0, x.quantity ?? 1)
        guard revoked(x, at: t) && policy.consumableClawback else { return q }
        let pct = min(max(x.revocationPercentage ?? 100_000, 0), 100_000)
        let back = policy.consumableRefundShare == .all ? q : q / 100_000 * pct + q % 100_000 * pct / 100_000
        return q - back
    }

    /// A non-consumable grants its product for good unless it is void (docs/semantics.md#product-types); a
    /// revocation after `t` is an end the facts already know.
    static func nonConsumableGrant(_ x: JWSTransactionDecodedPayload, _ c: ChainAt) -> Grant? {
        guard !c.void(x) else { return nil }
        return Grant(
            productId: x.productId, end: nil, ownership: x.inAppOwnershipType, grace: false, knownEnd: c.knownEnd(of: x)
        )
    }

    /// An auto-renewable transaction grants `[purchaseDate, expiresDate)`, extended where only the renewal info says
    /// so (policy extensionSignedAs `renewal-info`), cut by an immediate product change unless an introductory
    /// period runs its course by reading (docs/semantics.md#grant-intervals).
    static func periodGrant(_ x: JWSTransactionDecodedPayload, _ c: ChainAt, _ k: Knowledge, _ reading: Reading)
        -> Grant?
    {
        guard !c.void(x), var expires = x.expiresDate else { return nil }
        if k.config.policy.extensionSignedAs == .renewalInfo, let said = extendedRenewalDate(x, c.chain, k),
            said > expires
        {
            expires = said
        }
        let t = c.t
        if reading.introOutlivesChange && x.offerType == .introductory {
            // The introductory period runs its course whatever came after it (docs/semantics.md#q2-upgrade-during-an-introductory-offer).
            guard x.purchaseDate <= t && t < expires else { return nil }
            return Grant(
                productId: x.productId, end: expires, ownership: x.inAppOwnershipType, grace: false,
                knownEnd: c.knownEnd(of: x).flatMap { $0 < expires ? $0 : nil })
        }
        let end = periodEnd(x, expires: expires, c.chain, reading)
        guard x.purchaseDate <= t && t < end else { return nil }
        let known = min(end, c.knownEnd(of: x) ?? .max)
        return Grant(
            productId: x.productId, end: expires, ownership: x.inAppOwnershipType, grace: false,
            knownEnd: known < expires ? known : nil)
    }

    /// An extension signed only in the renewal info (policy extensionSignedAs,
    /// docs/semantics.md#q9-how-an-extension-is-represented): the latest renewal date the renewal info signed while
    /// `x` was the chain's current transaction (before the next one's purchase), for `x`'s product and outside
    /// billing retry.
    static func extendedRenewalDate(_ x: JWSTransactionDecodedPayload, _ c: Prepared.Chain, _ k: Knowledge) -> Millis? {
        let purchase = x.purchaseDate
        var next = Millis.max
        for p in c.purchased where p > purchase {
            next = min(next, p)
        }
        return k.renewalHistory(c.id).filter {
            $0.signedDate >= purchase && $0.signedDate < next && $0.isInBillingRetryPeriod != true
                && $0.productId == x.productId
        }.compactMap(\.renewalDate).max()
    }

    /// Where an auto-renewable period's grant ends: at its expiry, or earlier at an immediate upgrade or crossgrade —
    /// a later `PURCHASE` in the chain inside the period (docs/semantics.md#upgrade). Legacy receipts carry no
    /// reason; there the upgraded-from entry's `is_upgraded` says it.
    static func periodEnd(
        _ x: JWSTransactionDecodedPayload, expires: Millis, _ c: Prepared.Chain, _ reading: Reading
    ) -> Millis {
        let purchase = x.purchaseDate
        var cut: Millis?
        func consider(_ dates: [Millis]) {
            for p in dates where p > purchase && p < expires { cut = min(cut ?? .max, p) }
        }
        consider(c.purchaseReasonDates)
        if x.isUpgraded == true { consider(c.noReasonDates) }
        let end = min(expires, cut ?? .max)
        guard cut == nil, x.isUpgraded == true else { return end }
        // Upgraded, but the upgrading transaction is unknown: it ended no later than the flag was signed.
        return min(end, reading.upgradedGrantsNothing ? x.purchaseDate : x.signedDate)
    }

    /// Grace, and the state of a chain that grants nothing now, read from its latest auto-renewable transaction
    /// purchased by `t` (docs/semantics.md#subscription-status). Unlike that section's derivation it does not skip a
    /// transaction flagged isUpgraded: the flag may be signed after `t`, and the upgrading transaction, purchased
    /// later, is the latest once it exists.
    /// Of several chains of one product, the one purchased last gives the inactive state (policy inactiveState,
    /// docs/semantics.md#q18-one-product-several-chains).
    static func tallyLatest(_ c: ChainAt, _ k: Knowledge, _ reading: Reading, into tally: inout Tally) {
        guard let last = c.chain.kinds[..<c.bought].lastIndex(of: .autoRenewable) else { return }
        let latest = c.chain.transactions[last]
        let renewal = k.renewals[c.chain.id]
        let inRetry = inBillingRetry(renewal, reading)
        if !c.void(latest), inRetry, let g = graceGrant(latest, renewal, c, k, reading) { tally.grants.append(g) }
        let state: EntitlementState = c.void(latest) ? .revoked : inRetry ? .billingRetry : .expired
        tally.chainStates[latest.productId, default: []].insert(state)
        if let prev = tally.inactiveState[latest.productId], prev.purchased > latest.purchaseDate { return }
        tally.inactiveState[latest.productId] = (state, latest.purchaseDate)
    }

    /// A chain is in billing retry when its renewal info says so, or, under the reading that takes a grace date
    /// for the flag, when it carries a grace date (docs/semantics.md#billing-retry,
    /// #q4-malformed-grace-and-expiry-payloads).
    static func inBillingRetry(_ renewal: JWSRenewalInfoDecodedPayload?, _ reading: Reading) -> Bool {
        renewal?.isInBillingRetryPeriod == true
            || (reading.graceDateMeansRetry && renewal?.gracePeriodExpiresDate != nil)
    }

    /// A chain in billing retry whose latest period has ended keeps its product until the renewal info's
    /// `gracePeriodExpiresDate`; without a date, only under the reading that takes a `GRACE_PERIOD` notification's
    /// word for it (docs/semantics.md#grace-period).
    static func graceGrant(
        _ latest: JWSTransactionDecodedPayload, _ renewal: JWSRenewalInfoDecodedPayload?, _ c: ChainAt,
        _ k: Knowledge, _ reading: Reading
    ) -> Grant? {
        guard let e = latest.expiresDate, e <= c.t else { return nil }
        if let g = renewal?.gracePeriodExpiresDate {
            guard c.t < g else { return nil }
            // A refund the facts already know ends the grace before its date.
            return Grant(
                productId: latest.productId, end: g, ownership: latest.inAppOwnershipType, grace: true, paidEnd: e,
                knownEnd: c.knownEnd(of: latest).flatMap { $0 < g ? $0 : nil })
        }
        guard reading.graceFromSubtype, let r = renewal, k.graceClaims[c.chain.id]?.contains(r.signedDate) == true
        else { return nil }
        return Grant(
            productId: latest.productId, end: nil, ownership: latest.inAppOwnershipType, grace: true, paidEnd: e,
            knownEnd: c.knownEnd(of: latest))
    }

    /// Non-renewing subscriptions: each grants the app's duration from its purchase, or from the end of the one
    /// before under policy nonRenewingStacking; stacking spans chains, so this goes per product
    /// (docs/semantics.md#product-types). A transaction counts by its product id, whatever type it claims.
    static func tallyNonRenewing(
        _ known: [JWSTransactionDecodedPayload], _ k: Knowledge, at t: Millis, into tally: inout Tally
    ) {
        let index = k.catalogIndex
        guard !index.nonRenewing.isEmpty, known.contains(where: { index.nonRenewingIds.contains($0.productId) })
        else { return }
        for (id, period) in index.nonRenewing {
            let txs = known.filter { $0.productId == id }.sorted(by: JWSTransactionDecodedPayload.purchasedBefore)
            guard let period else { continue }
            var lastEnd: Millis = .min
            for x in txs {
                let start = k.config.policy.nonRenewingStacking ? max(x.purchaseDate, lastEnd) : x.purchaseDate
                let end = period.added(to: start)
                lastEnd = end
                if !revoked(x, at: t) && start <= t && t < end {
                    let known = x.revocationDate.flatMap { $0 < end ? $0 : nil }
                    tally.grants.append(
                        Grant(productId: id, end: end, ownership: x.inAppOwnershipType, grace: false, knownEnd: known))
                }
            }
            if let last = txs.last {
                tally.inactiveState[id] = (revoked(last, at: t) ? .revoked : .expired, last.purchaseDate)
            }
        }
    }
}
