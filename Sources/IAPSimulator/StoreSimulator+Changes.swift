import IAPModel

// Changes to a running subscription: upgrades, downgrades and crossgrades, offers, renewal-date extensions,
// purchases outside the app and TEST notifications.

extension StoreSimulator {
    /// A change of product within the group: immediate (new transaction now, old one `isUpgraded`) or at the
    /// next renewal (`autoRenewProductId`).
    /// A change of product within the group. With an `offer` (a promotional offer or an offer code of the new
    /// product) Apple reports it as OFFER_REDEEMED/UPGRADE (the new period starts now with the offer) or
    /// OFFER_REDEEMED/DOWNGRADE (the offer applies from the renewal into the new product) instead of
    /// DID_CHANGE_RENEWAL_PREF.
    public mutating func changeProduct(_ cid: String, to q: String, at t: Millis, offer: PurchaseOffer = .none) {
        advance(to: t)
        let c0 = chains[cid]!
        let kind = ProductChange.classify(from: product(c0.productId), to: product(q))
        let spec: (OfferType, OfferSpec)? =
            switch offer {
            case .promotional(let o): (.promotional, o)
            case .offerCode(let o): (.offerCode, o)
            default: nil
            }
        if kind.isImmediate && !product(q).familyShareable {
            for m in c0.members {
                revokeMember(m, reason: .refundedForOtherReason, at: t, as: .familyStopSharing, why: "sharing stopped")
            }
            chains[cid]!.members = []
        }
        withMembers(cid) { sim, id in
            if kind.isImmediate {
                let old = sim.chains[id]!.currentTx!
                // Under policy upgradeDuringIntro `union` an introductory period runs its course beside the new one.
                if !(sim.policy.upgradeDuringIntro == .union && sim.latest(old)?.offerType == .introductory) {
                    _ = sim.cutPaid(old, at: t)
                }
                sim.updateTransaction(old) { $0.isUpgraded = true }
                sim.startPeriod(
                    id, productId: q, offer: spec, inApp: !sim.chains[id]!.isMember, firstTxIsChainId: false)
                if spec != nil {
                    sim.notify(id, .offerRedeemed, .upgrade)
                } else {
                    sim.notify(id, .didChangeRenewalPref, .upgrade)
                }
            } else {
                sim.chains[id]!.autoRenewProductId = q
                // A pending offer belongs to the product it was redeemed for: a change of the renewal product drops
                // it, and an offer redeemed with the change takes its place (the purchaser's; members mirror them).
                sim.chains[id]!.nextOffer = nil
                if let (type, o) = spec, !sim.chains[id]!.isMember {
                    sim.chains[id]!.nextOffer = SimChain.PendingOffer(type: type, spec: o, remaining: o.periods)
                }
                sim.signRenewal(id)
                if spec != nil {
                    sim.notify(id, .offerRedeemed, .downgrade)
                } else {
                    sim.notify(id, .didChangeRenewalPref, .downgrade)
                }
            }
        }
        let with = spec.map { " with offer \($0.1.id ?? "?")" } ?? ""
        log(
            c0.person, kind.family,
            "\(name(c0.person)) changes \(c0.productId) → \(q) (\(kind.isImmediate ? "now" : "at renewal"))\(with)",
            change: ProductMove(from: c0.productId, to: q))
    }

    public mutating func revertChange(_ cid: String, at t: Millis) {
        advance(to: t)
        let c0 = chains[cid]!
        withMembers(cid) { sim, id in
            sim.chains[id]!.autoRenewProductId = sim.chains[id]!.productId
            sim.chains[id]!.nextOffer = nil  // an offer redeemed with the cancelled change goes with it
            sim.signRenewal(id)
            sim.notify(id, .didChangeRenewalPref)
        }
        log(c0.person, .revertDowngrade, "\(name(c0.person)) cancels the pending change back to \(c0.productId)")
    }

    public mutating func redeemPromotionalOffer(_ cid: String, offer: OfferSpec, at t: Millis) {
        advance(to: t)
        var c = chains[cid]!
        c.nextOffer = SimChain.PendingOffer(type: .promotional, spec: offer, remaining: offer.periods)
        chains[cid] = c
        signRenewal(cid)
        notify(cid, .offerRedeemed)
        log(
            c.person, .promotionalOffer,
            "\(name(c.person)) redeems promotional offer \(offer.id ?? "?") for the next renewal")
    }

    public mutating func extendRenewal(_ cid: String, days: Int, at t: Millis) {
        advance(to: t)
        let c0 = chains[cid]!
        let newEnd = c0.expires! + Int64(days) * Self.day
        withMembers(cid) { sim, id in
            let tx = sim.chains[id]!.currentTx!
            // Policy extensionSignedAs: the transaction is re-signed with the new end, or only the renewal info
            // (signed below, its renewalDate the new end) says so.
            if sim.policy.extensionSignedAs == .transaction { sim.updateTransaction(tx) { $0.expiresDate = newEnd } }
            // Extend the truth only if nothing (a chain-scope refund) has cut this period short; from now on the
            // customer is told of the new end.
            if let i = sim.paidSegment[tx], sim.segments[i].end == c0.expires! {
                var s = sim.segments[i]
                sim.segments[i].end = max(s.start, t)
                s.start = max(s.start, t)
                s.end = newEnd
                s.promisedEnd = newEnd
                sim.paidSegment[tx] = sim.segments.count
                sim.segments.append(s)
            }
            sim.chains[id]!.expires = newEnd
            sim.chains[id]!.extensions.append(t)
            sim.signRenewal(id)
            sim.notify(id, .renewalExtended)
        }
        log(c0.person, .extendRenewal, "developer extends \(name(c0.person))'s \(c0.productId) by \(days) days")
    }

    /// The mass endpoint (extend the renewal date for all active subscribers of a product): each eligible chain is
    /// extended as by ``extendRenewal(_:days:at:)``, then the store reports the request done in a
    /// `RENEWAL_EXTENSION`/`SUMMARY` notification that carries a `summary` instead of `data`.
    public mutating func extendRenewalForAll(productId: String, chains ids: [String], days: Int, at t: Millis) {
        precondition(!ids.isEmpty, "no subscriber to extend")
        for id in ids { extendRenewal(id, days: days, at: t) }
        let summary = NotificationSummary(
            requestIdentifier: newUUID(), environment: catalog.environment, appAppleId: catalog.appAppleId,
            bundleId: catalog.bundleId, productId: productId, failedCount: 0, succeededCount: Int64(ids.count))
        let person = chains[ids[0]]!.person
        emit(.renewalExtension, .summary, person: person, summary: summary)
        log(
            person, .extendRenewalForAll,
            "the extension of every \(productId) subscriber is done (\(ids.count) extended): RENEWAL_EXTENSION/SUMMARY")
    }

    /// An external purchase token (External Purchase API) that was not reported in time: an
    /// `EXTERNAL_PURCHASE_TOKEN`/`UNREPORTED` notification with `externalPurchaseToken` instead of `data`. It grants
    /// nothing; a validator must accept it (it is Apple's, for this app) and change nothing.
    public mutating func unreportedExternalPurchase(person: Int, at t: Millis) {
        advance(to: t)
        let id = newUUID()
        let token = ExternalPurchaseToken(
            externalPurchaseId: catalog.environment == .production ? id : "SANDBOX" + id,
            tokenCreationDate: t - Self.day,
            appAppleId: catalog.appAppleId, bundleId: catalog.bundleId)
        emit(.externalPurchaseToken, .unreported, person: person, externalPurchaseToken: token)
        log(
            person, .externalPurchaseToken,
            "an external purchase token from \(name(person))'s device goes unreported: EXTERNAL_PURCHASE_TOKEN/UNREPORTED"
        )
    }

    /// The developer requests a test notification: a `TEST` notification whose `data` names the app and carries no
    /// transaction. A validator must accept it (it is Apple's, for this app) and change nothing.
    public mutating func requestTestNotification(at t: Millis) {
        advance(to: t)
        let data = NotificationData(
            appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
            transactionInfo: nil, renewalInfo: nil, status: nil)
        let n = ResponseBodyV2DecodedPayload(
            notificationType: .test, subtype: nil, notificationUUID: newUUID(), signedDate: now, data: data,
            summary: nil, externalPurchaseToken: nil)
        notifications.append(EmittedNotification(payload: n, chainId: nil, person: 0))
        log(0, .testNotification, "the developer requests a test notification: TEST (no transaction)")
    }
}
