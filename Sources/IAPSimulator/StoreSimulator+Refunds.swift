import IAPModel

// Refunds and revocation: refund requests and decisions, reversals, family-sharing revocation.

extension StoreSimulator {
    // MARK: Refunds and revocation

    public mutating func refund(_ txId: String, reason: RevocationReason, prorated: Bool, at t: Millis) {
        advance(to: t)
        let tx = latest(txId)!
        let cid = tx.originalTransactionId
        updateTransaction(txId) {
            $0.revocationDate = t
            $0.revocationReason = reason
            $0.revocationType = prorated ? .refundProrated : .refundFull
            $0.revocationPercentage = prorated ? Self.proratedRefund : 100_000
        }
        var cuts: [RefundCut] = []
        if let (i, end) = cutPaid(txId, at: t) { cuts.append(RefundCut(tx: txId, segment: i, end: end)) }
        if policy.refundScope == .chain {
            for other in chains[cid]!.txIds where other != txId {
                if let (i, end) = cutPaid(other, at: t) { cuts.append(RefundCut(tx: other, segment: i, end: end)) }
                voided.insert(other)
            }
        }
        cutByRefund[txId] = cuts
        mark(cid)
        if tx.type == .consumable {
            ledger.append(
                LedgerEntry(
                    person: chains[cid]!.person, productId: tx.productId, time: t,
                    delta: -refundedUnits(tx, prorated: prorated),
                    transactionId: txId, clawback: true))
        }
        let isCurrent = chains[cid]!.currentTx == txId
        if isCurrent && tx.type == .autoRenewable {
            chains[cid]!.phase = .revoked
            chains[cid]!.autoRenew = false
            signRenewal(cid)
        }
        notify(cid, .refund, tx: txId)
        let c = chains[cid]!
        log(
            c.person, .refund,
            "\(tx.productId) transaction \(short(txId)) of \(name(c.person)) is refunded\(isCurrent ? "" : " (an earlier period)")"
        )
        if isCurrent || tx.type == .nonConsumable {
            for m in c.members {
                revokeMember(m, reason: reason, at: t, as: .familyStopSharing, why: "purchaser refunded")
            }
            chains[cid]!.members = []
        }
    }

    /// Units a refund takes back from a consumable purchase: all of them, or under the policy that takes the
    /// refunded share only, the units the refunded money paid for (a prorated refund here returns 41.25 %).
    func refundedUnits(_ tx: JWSTransactionDecodedPayload, prorated: Bool) -> Int {
        let units = tx.quantity ?? 1
        guard prorated, policy.consumableRefundShare == .share else { return units }
        return units * Self.proratedRefund / 100_000
    }

    /// The `revocationPercentage` of the simulator's prorated refunds (41.25 %).
    static let proratedRefund = 41_250

    /// A customer asks Apple for a refund of a consumable or an auto-renewable subscription: Apple asks the
    /// developer for consumption data (`CONSUMPTION_REQUEST`) and decides later (``refund(_:reason:prorated:at:)``
    /// or ``declineRefund(_:at:)``). The request itself changes nothing.
    public mutating func requestRefund(_ txId: String, reason: ConsumptionRequestReason, at t: Millis) {
        advance(to: t)
        let tx = latest(txId)!
        let cid = tx.originalTransactionId
        notify(cid, .consumptionRequest, tx: txId)
        notifications[notifications.count - 1].payload.data?.consumptionRequestReason = reason
        log(
            chains[cid]!.person, .refundRequested,
            "\(name(chains[cid]!.person)) asks for a refund of \(tx.productId) \(short(txId)) (\(reason.rawValue)): CONSUMPTION_REQUEST"
        )
    }

    public mutating func declineRefund(_ txId: String, at t: Millis) {
        advance(to: t)
        let tx = latest(txId)!
        notify(tx.originalTransactionId, .refundDeclined, tx: txId)
        log(
            chains[tx.originalTransactionId]!.person, .refundDeclined,
            "refund request for \(tx.productId) \(short(txId)) is declined")
    }

    public mutating func reverseRefund(_ txId: String, at t: Millis) {
        advance(to: t)
        let tx = latest(txId)!
        let cid = tx.originalTransactionId
        updateTransaction(txId) {
            $0.revocationDate = nil
            $0.revocationReason = nil
            $0.revocationType = nil
            $0.revocationPercentage = nil
        }
        let cuts = cutByRefund[txId] ?? []
        cutByRefund[txId] = nil
        voided = []
        for (refunded, _) in cutByRefund where policy.refundScope == .chain {
            let r = latest(refunded)!
            for other in chains[r.originalTransactionId]!.txIds
            where other != refunded && (latest(other)?.purchaseDate ?? .max) < r.revocationDate! {
                voided.insert(other)
            }
        }
        // Restore what this refund cut, unless another refund (chain scope) still voids it.
        for cut in cuts where cut.end > t && !voided.contains(cut.tx) && (cutByRefund[cut.tx] == nil || cut.tx == txId)
        {
            var s = segments[cut.segment]
            s.start = max(s.start, t)  // a stacked non-renewing period may not have begun yet
            s.end = cut.end
            segments.append(s)
            if paidSegment[cut.tx] == cut.segment { paidSegment[cut.tx] = segments.count - 1 }
        }
        // The units this refund took back come back (the latest clawback entry of the transaction is its refund's,
        // possibly zero units under the `share` policy).
        if tx.type == .consumable, let taken = ledger.last(where: { $0.transactionId == txId && $0.clawback }),
            taken.delta != 0
        {
            ledger.append(
                LedgerEntry(
                    person: chains[cid]!.person, productId: tx.productId, time: t, delta: -taken.delta,
                    transactionId: txId, clawback: true))
        }
        if chains[cid]!.currentTx == txId, case .revoked = chains[cid]!.phase {
            chains[cid]!.phase = (chains[cid]!.expires ?? 0) > t ? .active : .expired
            signRenewal(cid)
        }
        mark(cid)
        notify(cid, .refundReversed, tx: txId)
        log(chains[cid]!.person, .refundReversed, "the refund of \(tx.productId) \(short(txId)) is reversed")
    }

    /// Family member `mid` loses access: `family` is the scenario the timeline files it under (the purchaser
    /// stopped sharing or refunded, or the member left), `why` the words it shows.
    mutating func revokeMember(
        _ mid: String, reason: RevocationReason, at t: Millis, as family: ScenarioFamily, why: String
    ) {
        let m = chains[mid]!
        guard let txId = m.currentTx else { return }
        updateTransaction(txId) {
            $0.revocationDate = t
            $0.revocationReason = reason
            $0.revocationType = .familyRevoke
        }
        _ = cutPaid(txId, at: t)
        if let gi = graceSegment[mid], segments[gi].end > t { segments[gi].end = max(segments[gi].start, t) }
        chains[mid]!.phase = .revoked
        chains[mid]!.autoRenew = false
        signRenewal(mid)
        mark(mid)
        notify(mid, .revoke, tx: txId)
        log(
            m.person, family,
            "\(name(m.person)) loses family access to \(m.productId) (\(why))")
    }

    /// The purchaser stops sharing the purchase of chain `cid` with the family.
    public mutating func stopSharing(_ cid: String, at t: Millis) {
        advance(to: t)
        for m in chains[cid]!.members {
            revokeMember(m, reason: .refundedForOtherReason, at: t, as: .familyStopSharing, why: "sharing stopped")
        }
        chains[cid]!.members = []
    }

    /// `person` leaves the family: loses what others shared and stops sharing their own purchases.
    public mutating func leaveFamily(person: Int, at t: Millis) {
        advance(to: t)
        for id in chainOrder {
            var c = chains[id]!
            if c.person == person, !c.members.isEmpty {
                for m in c.members {
                    revokeMember(
                        m, reason: .refundedForOtherReason, at: t, as: .familyLeave,
                        why: "\(name(person)) leaves the family")
                }
                c = chains[id]!
                c.members = []
                chains[id] = c
            }
            if let s = c.source, c.person == person, chains[s]!.members.contains(id) {
                revokeMember(
                    id, reason: .refundedForOtherReason, at: t, as: .familyLeave,
                    why: "\(name(person)) leaves the family")
                chains[s]!.members.removeAll { $0 == id }
            }
        }
        leftFamily.insert(person)
    }

    func short(_ txId: String) -> String { "…" + String(txId.suffix(4)) }
}
