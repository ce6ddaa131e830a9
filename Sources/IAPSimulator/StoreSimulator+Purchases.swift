import IAPModel

// Purchases: auto-renewable subscriptions (with family sharing), one-time products, restores.

extension StoreSimulator {
    static let day = CivilTime.msPerDay

    func name(_ person: Int) -> String { persons[person].name }

    /// Applies `body` to the chain and to every member chain mirroring it.
    mutating func withMembers(_ cid: String, _ body: (inout StoreSimulator, String) -> Void) {
        body(&self, cid)
        for m in chains[cid]!.members { body(&self, m) }
    }

    func familyMates(of person: Int) -> [Int] {
        guard let f = persons[person].familyId else { return [] }
        return persons.filter { $0.familyId == f && $0.index != person }.map(\.index)
    }

    // MARK: Auto-renewable purchases

    /// First purchase in a group (SUBSCRIBED/INITIAL_BUY) or a purchase after the chain lapsed
    /// (SUBSCRIBED/RESUBSCRIBE). Shares with the family when the product is family-shareable.
    /// `reportedAsOfferRedeemed`: a purchase with a promotional offer or an offer code is notified as
    /// `OFFER_REDEEMED` with the same subtype (the form an earlier version of Apple's documentation gave; the current
    /// one says `SUBSCRIBED`: docs/semantics.md#offers-and-intro-eligibility).
    public mutating func buySubscription(
        person: Int, productId: String, offer: PurchaseOffer, at t: Millis, familyMates: [Int],
        reportedAsOfferRedeemed: Bool = false
    ) {
        advance(to: t)
        let p = product(productId)
        let inApp: Bool = if case .offerCode = offer { false } else { true }
        let offerSpec: OfferSpec? =
            switch offer {
            case .none: nil
            case .introductory: p.introductoryOffer
            case .promotional(let s), .offerCode(let s), .winBack(let s): s
            }
        let resubscribing =
            ownChain(person: person, group: p.groupId!).map { c in
                if case .expired = c.phase { return true }
                if case .revoked = c.phase { return true }
                return false
            } ?? false
        let cid: String
        if resubscribing, let existing = ownChain(person: person, group: p.groupId!) {
            cid = existing.id
        } else {
            cid = newChain(
                person: person, ownership: .purchased, productId: productId,
                token: inApp ? persons[person].accountId : nil)
        }
        if inApp && chains[cid]!.accountToken == nil { chains[cid]!.accountToken = persons[person].accountId }
        startPeriod(
            cid, productId: productId, offer: offer.wire.flatMap { w in offerSpec.map { (w, $0) } }, inApp: inApp,
            firstTxIsChainId: !resubscribing)
        let redeemsOffer: Bool =
            switch offer {
            case .promotional, .offerCode: reportedAsOfferRedeemed
            case .none, .introductory, .winBack: false
            }
        notify(cid, redeemsOffer ? .offerRedeemed : .subscribed, resubscribing ? .resubscribe : .initialBuy)
        let offerText =
            offerSpec.map {
                " with \(offer.wire == .introductory ? "intro" : "offer") \($0.discountType.rawValue.lowercased()) \($0.period)"
            } ?? ""
        log(
            person, resubscribing ? .resubscribe : .buySubscription,
            "\(name(person)) \(resubscribing ? "resubscribes to" : "buys") \(productId)\(offerText)\(inApp ? "" : " (offer code, outside the app)")"
        )
        switch offer {
        case .none: break
        case .introductory: log(person, .introOffer, "  intro offer used")
        case .promotional: log(person, .promotionalOffer, "  promotional offer")
        case .offerCode: log(person, .offerCode, "  offer code redeemed")
        case .winBack: log(person, .winBackOffer, "  win-back offer")
        }
        // Family Sharing: members gain access with their own chains (or resubscribe their existing ones).
        if !p.familyShareable { chains[cid]!.members = [] }
        if p.familyShareable {
            if resubscribing {
                for m in chains[cid]!.members {
                    syncMember(m, from: cid)
                    startPeriod(
                        m, productId: productId, offer: nil, inApp: false, firstTxIsChainId: false,
                        end: chains[cid]!.expires)
                    notify(m, .subscribed, .resubscribe)
                }
            } else {
                shareWithFamily(cid, mates: familyMates)
            }
        }
    }

    mutating func shareWithFamily(_ cid: String, mates: [Int]) {
        let c = chains[cid]!
        for m in mates {
            let mid = newChain(person: m, ownership: .familyShared, productId: c.productId, token: nil, source: cid)
            chains[cid]!.members.append(mid)
            syncMember(mid, from: cid)
            let src = latest(c.currentTx!)!
            makeTransaction(
                chain: mid, productId: c.productId, purchase: src.purchaseDate, expires: src.expiresDate,
                reason: .purchase, offer: nil, quantity: src.quantity ?? 1, inApp: false, txId: mid)
            if c.kind == .autoRenewable {
                signRenewal(mid)
                notify(mid, .subscribed, .initialBuy)
            } else {
                // Sharing a non-consumable sends the member ONE_TIME_CHARGE (docs/semantics.md#family-sharing).
                notify(mid, .oneTimeCharge)
            }
            log(m, .familyShare, "\(name(m)) gets \(c.productId) through Family Sharing from \(name(c.person))")
        }
    }

    /// Copies the renewal-relevant state of the purchaser's chain onto a member's chain.
    mutating func syncMember(_ mid: String, from cid: String) {
        let s = chains[cid]!
        var m = chains[mid]!
        m.productId = s.productId
        m.autoRenewProductId = s.autoRenewProductId
        m.autoRenew = s.autoRenew
        m.phase = s.phase
        m.expires = s.expires
        m.expirationIntent = s.expirationIntent
        m.currentIsFreeTrial = s.currentIsFreeTrial
        chains[mid] = m
    }

    /// Starts a new paid (or offer) period now, purchased by the customer (reason PURCHASE).
    mutating func startPeriod(
        _ cid: String, productId: String, offer: (OfferType, OfferSpec)?, inApp: Bool, firstTxIsChainId: Bool,
        end given: Millis? = nil
    ) {
        let p = product(productId)
        let period = offer?.1.period ?? p.period!
        let end = given ?? period.added(to: now)
        var c = chains[cid]!
        c.productId = productId
        c.autoRenewProductId = productId
        c.autoRenew = true
        c.phase = .active
        c.expires = end
        c.expirationIntent = nil
        c.priceIncrease = nil
        c.currentIsFreeTrial = offer?.1.discountType == .freeTrial
        c.nextOffer = offer.flatMap { o in
            o.1.periods > 1 ? SimChain.PendingOffer(type: o.0, spec: o.1, remaining: o.1.periods - 1) : nil
        }
        chains[cid] = c
        makeTransaction(
            chain: cid, productId: productId, purchase: now, expires: end, reason: .purchase, offer: offer,
            inApp: inApp, txId: firstTxIsChainId && c.txIds.isEmpty ? cid : nil)
        signRenewal(cid)
    }

    // MARK: One-time purchases

    public mutating func buyOneTime(person: Int, productId: String, quantity: Int, at t: Millis, familyMates: [Int]) {
        advance(to: t)
        let p = product(productId)
        let cid = newChain(
            person: person, ownership: .purchased, productId: productId, token: persons[person].accountId)
        makeTransaction(
            chain: cid, productId: productId, purchase: t, expires: nil, reason: .purchase, offer: nil,
            quantity: p.kind == .consumable ? quantity : 1, inApp: true, txId: cid)
        // ONE_TIME_CHARGE: in the sandbox since June 2024, in production since May 27, 2025.
        notify(cid, .oneTimeCharge)
        let family: ScenarioFamily =
            switch p.kind {
            case .consumable: .buyConsumable
            case .nonConsumable: .buyNonConsumable
            default: .buyNonRenewing
            }
        log(person, family, "\(name(person)) buys \(p.kind == .consumable ? "\(quantity) × " : "")\(productId)")
        if p.familyShareable && p.kind == .nonConsumable { shareWithFamily(cid, mates: familyMates) }
    }

    // MARK: Restores

    /// The App Store issues the chain's current purchase again under a new transactionId: the customer restores
    /// purchases or signs in on a second device, or Apple re-grants the transaction. The new id names the same
    /// purchase — same `originalTransactionId`, same `webOrderLineItemId` (one billing period), same dates — so it
    /// grants nothing new, and what happens to the purchase later (a refund, an upgrade, an extension) is signed
    /// under every id of it. The app submits the new id at once; no notification is sent.
    public mutating func restore(_ cid: String, at t: Millis) {
        advance(to: t)
        let c = chains[cid]!
        let original = c.currentTx!
        var tx = latest(original)!
        let id = newId()
        tx.transactionId = id
        tx.signedDate = now
        chains[cid]!.restoredTxIds.append(id)
        restoredFrom[id] = original
        txVersions[id] = [tx]
        txOrder.append(id)
        creations.append(TransactionCreation(transactionId: id, chainId: cid, person: c.person, time: now, inApp: true))
        log(
            c.person, .restore,
            "\(name(c.person)) restores \(tx.productId): transaction \(short(original)) is issued again as \(short(id))"
        )
    }
}
