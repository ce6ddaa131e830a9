import IAPModel

/// Which offer a purchase uses.
public enum PurchaseOffer: Codable, Hashable, Sendable {
    case none
    case introductory
    case promotional(OfferSpec)
    case offerCode(OfferSpec)
    case winBack(OfferSpec)

    var wire: OfferType? {
        switch self {
        case .none: nil
        case .introductory: .introductory
        case .promotional: .promotional
        case .offerCode: .offerCode
        case .winBack: .winBack
        }
    }
}

/// How a change of product within a group takes effect (docs/semantics.md#levels-and-classification).
public enum ProductChange: String, Codable, Sendable {
    case upgrade, downgrade, crossgradeImmediate, crossgradeDeferred

    public var isImmediate: Bool { self == .upgrade || self == .crossgradeImmediate }
    public var family: ScenarioFamily {
        switch self {
        case .upgrade: .upgrade
        case .downgrade: .downgrade
        case .crossgradeImmediate: .crossgradeImmediate
        case .crossgradeDeferred: .crossgradeDeferred
        }
    }

    public static func classify(from p: CatalogProduct, to q: CatalogProduct) -> ProductChange {
        let lp = p.level ?? 1, lq = q.level ?? 1
        if lq < lp { return .upgrade }
        if lq > lp { return .downgrade }
        return p.period == q.period ? .crossgradeImmediate : .crossgradeDeferred
    }
}

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
    public mutating func buySubscription(person: Int, productId: String, offer: PurchaseOffer, at t: Millis, familyMates: [Int],
                                         reportedAsOfferRedeemed: Bool = false) {
        advance(to: t)
        let p = product(productId)
        let inApp: Bool = if case .offerCode = offer { false } else { true }
        let offerSpec: OfferSpec? = switch offer {
        case .none: nil
        case .introductory: p.introductoryOffer
        case .promotional(let s), .offerCode(let s), .winBack(let s): s
        }
        let resubscribing = ownChain(person: person, group: p.groupId!).map { c in
            if case .expired = c.phase { return true }
            if case .revoked = c.phase { return true }
            return false
        } ?? false
        let cid: String
        if resubscribing, let existing = ownChain(person: person, group: p.groupId!) {
            cid = existing.id
        } else {
            cid = newChain(person: person, ownership: .purchased, productId: productId, token: inApp ? persons[person].accountId : nil)
        }
        if inApp && chains[cid]!.accountToken == nil { chains[cid]!.accountToken = persons[person].accountId }
        startPeriod(cid, productId: productId, offer: offer.wire.flatMap { w in offerSpec.map { (w, $0) } }, inApp: inApp, firstTxIsChainId: !resubscribing)
        let redeemsOffer: Bool = switch offer {
        case .promotional, .offerCode: reportedAsOfferRedeemed
        case .none, .introductory, .winBack: false
        }
        notify(cid, redeemsOffer ? .offerRedeemed : .subscribed, resubscribing ? .resubscribe : .initialBuy)
        let offerText = offerSpec.map { " with \(offer.wire == .introductory ? "intro" : "offer") \($0.discountType.rawValue.lowercased()) \($0.period)" } ?? ""
        log(person, resubscribing ? .resubscribe : .buySubscription, "\(name(person)) \(resubscribing ? "resubscribes to" : "buys") \(productId)\(offerText)\(inApp ? "" : " (offer code, outside the app)")")
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
                    startPeriod(m, productId: productId, offer: nil, inApp: false, firstTxIsChainId: false, end: chains[cid]!.expires)
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
            makeTransaction(chain: mid, productId: c.productId, purchase: src.purchaseDate, expires: src.expiresDate,
                            reason: .purchase, offer: nil, quantity: src.quantity ?? 1, inApp: false, txId: mid)
            if c.kind == .autoRenewable {
                signRenewal(mid)
                notify(mid, .subscribed, .initialBuy)
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
    mutating func startPeriod(_ cid: String, productId: String, offer: (OfferType, OfferSpec)?, inApp: Bool, firstTxIsChainId: Bool, end given: Millis? = nil) {
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
        c.nextOffer = offer.flatMap { o in o.1.periods > 1 ? SimChain.PendingOffer(type: o.0, spec: o.1, remaining: o.1.periods - 1) : nil }
        chains[cid] = c
        makeTransaction(chain: cid, productId: productId, purchase: now, expires: end, reason: .purchase, offer: offer,
                        inApp: inApp, txId: firstTxIsChainId && c.txIds.isEmpty ? cid : nil)
        signRenewal(cid)
    }

    /// The period of `cid` ends and the App Store charges successfully: DID_RENEW with a new transaction.
    public mutating func renew(_ cid: String) {
        let e = chains[cid]!.expires!
        advance(to: e)
        // Family Sharing is per product: renewing into a product that is not shareable ends the members' access
        // (their last period simply ends now).
        if !product(chains[cid]!.autoRenewProductId).familyShareable { chains[cid]!.members = [] }
        // The purchaser's offer and period decide the new period; members mirror it exactly.
        let purchaser = chains[cid]!
        let next = purchaser.autoRenewProductId
        let offer = purchaser.nextOffer
        let end = (offer?.spec.period ?? product(next).period!).added(to: e)
        withMembers(cid) { sim, id in
            var c = sim.chains[id]!
            c.productId = next
            c.expires = end
            c.priceIncrease = nil
            c.currentIsFreeTrial = offer?.spec.discountType == .freeTrial
            if var o = offer, !c.isMember {
                o.remaining -= 1
                c.nextOffer = o.remaining > 0 ? o : nil
            }
            sim.chains[id] = c
            sim.makeTransaction(chain: id, productId: next, purchase: e, expires: end, reason: .renewal,
                                offer: c.isMember ? nil : offer.map { ($0.type, $0.spec) }, inApp: false)
            sim.signRenewal(id)
            sim.notify(id, .didRenew)
        }
        let c = chains[cid]!
        log(c.person, .renew, "\(c.productId) renews for \(name(c.person)) until \(CivilTime.relative(c.expires! - (origin ?? 0)))")
    }

    /// The renewal charge fails: billing retry, with grace if the app has it and it applies. With `quirk`, the
    /// renewal info signed now is flawed as production payloads have been: grace given without the retry flag, or
    /// (when grace does not apply to this period) a `GRACE_PERIOD` subtype with no grace date.
    public mutating func failBilling(_ cid: String, retryDays: Int, quirk: Bool = false) {
        let c0 = chains[cid]!
        let e = c0.expires!
        advance(to: e)
        let product = product(c0.autoRenewProductId)
        var graceEnd: Millis?
        if let g = catalog.gracePeriod, g.eligibility == .allRenewals || !c0.currentIsFreeTrial {
            graceEnd = e + Int64(g.days(forPeriod: product.period!)) * Self.day
        }
        let flaw: RenewalQuirk? = !quirk ? nil : graceEnd != nil ? .graceWithoutRetryFlag : catalog.gracePeriod != nil ? .gracePeriodWithoutDate : nil
        // Under the policy that reads the flag, a grace without it is no grace for the app.
        let grants = graceEnd != nil && !(flaw == .graceWithoutRetryFlag && policy.graceWithoutRetryFlag == .deny)
        let retryEnd = max(e + Int64(retryDays) * Self.day, (graceEnd ?? e) + Self.day)
        withMembers(cid) { sim, id in
            var c = sim.chains[id]!
            c.phase = .retry(e0: e, graceEnd: graceEnd, retryEnd: retryEnd)
            c.expirationIntent = .billingError
            c.renewalQuirk = flaw
            sim.chains[id] = c
            // A period voided by a chain-scope refund (policy) grants no grace either.
            if grants, let graceEnd, !sim.voided.contains(c.currentTx!) {
                sim.graceSegment[id] = sim.segments.count
                sim.segments.append(TruthSegment(person: c.person, productId: c.productId, chainId: id, start: e, end: graceEnd, kind: .grace,
                                                 ownership: c.ownership, promisedEnd: graceEnd))
            }
            sim.signRenewal(id)
            sim.notify(id, .didFailToRenew, graceEnd == nil && flaw == nil ? nil : .gracePeriod)
        }
        switch (graceEnd, flaw) {
        case (let g?, .graceWithoutRetryFlag?):
            log(c0.person, .graceWithoutRetryFlag, "billing fails for \(name(c0.person))'s \(c0.productId); grace until \(CivilTime.relative(g - (origin ?? 0))), but the renewal info says not in billing retry")
        case (let g?, _):
            log(c0.person, .billingFailureGrace, "billing fails for \(name(c0.person))'s \(c0.productId); grace until \(CivilTime.relative(g - (origin ?? 0)))")
        case (nil, .gracePeriodWithoutDate?):
            log(c0.person, .gracePeriodWithoutDate, "billing fails for \(name(c0.person))'s \(c0.productId); no grace after a free trial, but the notification says GRACE_PERIOD (no grace date)")
        case (nil, _):
            log(c0.person, .billingFailureNoGrace, "billing fails for \(name(c0.person))'s \(c0.productId); billing retry without grace")
        }
    }

    /// Billing recovers during retry: inside grace the cycle is kept, after it a new cycle starts now (docs/semantics.md#billing-recovery).
    public mutating func recover(_ cid: String, at t: Millis) {
        advance(to: t)
        guard case .retry(let e0, let g, _) = chains[cid]!.phase else { preconditionFailure("not in retry") }
        let inGrace = g.map { t < $0 } ?? false
        withMembers(cid) { sim, id in
            var c = sim.chains[id]!
            let next = c.autoRenewProductId
            let period = sim.product(next).period!
            let start = inGrace ? e0 : t
            let end = period.added(to: start)
            if let gi = sim.graceSegment[id], sim.segments[gi].end > t { sim.segments[gi].end = t }
            c.phase = .active
            c.productId = next
            c.expires = end
            c.expirationIntent = nil
            c.currentIsFreeTrial = false
            c.nextOffer = nil
            sim.chains[id] = c
            sim.makeTransaction(chain: id, productId: next, purchase: start, expires: end, reason: .renewal, offer: nil, inApp: false)
            sim.signRenewal(id)
            sim.notify(id, .didRenew, .billingRecovery)
        }
        let c = chains[cid]!
        log(c.person, inGrace ? .recoverInGrace : .recoverAfterGrace,
            "billing recovers \(inGrace ? "inside" : "after") grace for \(name(c.person))'s \(c.productId); paid until \(CivilTime.relative(c.expires! - (origin ?? 0)))")
    }

    public mutating func expireGrace(_ cid: String) {
        guard case .retry(_, let g?, _) = chains[cid]!.phase else { preconditionFailure("no grace") }
        advance(to: g)
        withMembers(cid) { sim, id in
            sim.chains[id]!.graceExpiredSent = true
            sim.signRenewal(id)
            sim.notify(id, .gracePeriodExpired)
        }
        let c = chains[cid]!
        log(c.person, .graceExpired, "grace period ends for \(name(c.person))'s \(c.productId); still in billing retry")
    }

    public mutating func exhaustRetry(_ cid: String) {
        guard case .retry(_, _, let r) = chains[cid]!.phase else { preconditionFailure("not in retry") }
        advance(to: r)
        withMembers(cid) { sim, id in
            sim.chains[id]!.phase = .expired
            sim.chains[id]!.autoRenew = false
            sim.signRenewal(id)
            sim.notify(id, .expired, .billingRetry)
        }
        let c = chains[cid]!
        log(c.person, .retryExhausted, "billing retry gives up; \(name(c.person))'s \(c.productId) expires")
    }

    /// The period ends without renewal: auto-renew was off (VOLUNTARY) or a price increase was not accepted.
    /// With `quirk`, the renewal info signed now lacks `expirationIntent`, as production payloads have.
    public mutating func expire(_ cid: String, quirk: Bool = false) {
        let c0 = chains[cid]!
        advance(to: c0.expires!)
        let priceIncrease = c0.autoRenew && c0.priceIncrease == .customerHasNotResponded
        withMembers(cid) { sim, id in
            var c = sim.chains[id]!
            if case .revoked = c.phase {} else { c.phase = .expired }
            c.expirationIntent = priceIncrease ? .customerDidNotConsentToPriceIncrease : .customerCancelled
            if quirk { c.renewalQuirk = .expiredWithoutIntent }
            c.autoRenew = false
            sim.chains[id] = c
            sim.signRenewal(id)
            sim.notify(id, .expired, priceIncrease ? .priceIncrease : .voluntary)
        }
        log(c0.person, priceIncrease ? .priceIncreaseNoConsent : quirk ? .expiredWithoutIntent : .expireVoluntary,
            "\(name(c0.person))'s \(c0.productId) expires (\(priceIncrease ? "price increase not accepted" : "auto-renew off"))\(quirk ? "; the renewal info has no expirationIntent" : "")")
    }

    public mutating func setAutoRenew(_ cid: String, on: Bool, at t: Millis) {
        advance(to: t)
        withMembers(cid) { sim, id in
            sim.chains[id]!.autoRenew = on
            sim.chains[id]!.expirationIntent = on ? nil : .customerCancelled
            sim.signRenewal(id)
            sim.notify(id, .didChangeRenewalStatus, on ? .autoRenewEnabled : .autoRenewDisabled)
        }
        let c = chains[cid]!
        log(c.person, on ? .reenable : .cancel, "\(name(c.person)) turns auto-renew \(on ? "back on" : "off") for \(c.productId)")
    }

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
        let spec: (OfferType, OfferSpec)? = switch offer {
        case .promotional(let o): (.promotional, o)
        case .offerCode(let o): (.offerCode, o)
        default: nil
        }
        if kind.isImmediate && !product(q).familyShareable {
            for m in c0.members { revokeMember(m, reason: .refundedForOtherReason, at: t, why: "sharing stopped") }
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
                sim.startPeriod(id, productId: q, offer: spec, inApp: !sim.chains[id]!.isMember, firstTxIsChainId: false)
                if spec != nil { sim.notify(id, .offerRedeemed, .upgrade) } else { sim.notify(id, .didChangeRenewalPref, .upgrade) }
            } else {
                sim.chains[id]!.autoRenewProductId = q
                // A pending offer belongs to the product it was redeemed for: a change of the renewal product drops
                // it, and an offer redeemed with the change takes its place (the purchaser's; members mirror them).
                sim.chains[id]!.nextOffer = nil
                if let (type, o) = spec, !sim.chains[id]!.isMember { sim.chains[id]!.nextOffer = SimChain.PendingOffer(type: type, spec: o, remaining: o.periods) }
                sim.signRenewal(id)
                if spec != nil { sim.notify(id, .offerRedeemed, .downgrade) } else { sim.notify(id, .didChangeRenewalPref, .downgrade) }
            }
        }
        let with = spec.map { " with offer \($0.1.id ?? "?")" } ?? ""
        log(c0.person, kind.family, "\(name(c0.person)) changes \(c0.productId) → \(q) (\(kind.isImmediate ? "now" : "at renewal"))\(with)",
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
        log(c.person, .promotionalOffer, "\(name(c.person)) redeems promotional offer \(offer.id ?? "?") for the next renewal")
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
        log(person, .extendRenewalForAll, "the extension of every \(productId) subscriber is done (\(ids.count) extended): RENEWAL_EXTENSION/SUMMARY")
    }

    /// An external purchase token (External Purchase API) that was not reported in time: an
    /// `EXTERNAL_PURCHASE_TOKEN`/`UNREPORTED` notification with `externalPurchaseToken` instead of `data`. It grants
    /// nothing; a validator must accept it (it is Apple's, for this app) and change nothing.
    public mutating func unreportedExternalPurchase(person: Int, at t: Millis) {
        advance(to: t)
        let id = newUUID()
        let token = ExternalPurchaseToken(
            externalPurchaseId: catalog.environment == .production ? id : "SANDBOX" + id, tokenCreationDate: t - Self.day,
            appAppleId: catalog.appAppleId, bundleId: catalog.bundleId)
        emit(.externalPurchaseToken, .unreported, person: person, externalPurchaseToken: token)
        log(person, .externalPurchaseToken, "an external purchase token from \(name(person))'s device goes unreported: EXTERNAL_PURCHASE_TOKEN/UNREPORTED")
    }

    /// The developer requests a test notification: a `TEST` notification whose `data` names the app and carries no
    /// transaction. A validator must accept it (it is Apple's, for this app) and change nothing.
    public mutating func requestTestNotification(at t: Millis) {
        advance(to: t)
        let data = NotificationData(appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                                    transactionInfo: nil, renewalInfo: nil, status: nil)
        let n = ResponseBodyV2DecodedPayload(notificationType: .test, subtype: nil, notificationUUID: newUUID(), signedDate: now, data: data,
                                             summary: nil, externalPurchaseToken: nil)
        notifications.append(EmittedNotification(payload: n, chainId: nil, person: 0))
        log(0, .testNotification, "the developer requests a test notification: TEST (no transaction)")
    }

    public mutating func priceIncrease(_ cid: String, consentRequired: Bool, at t: Millis) {
        advance(to: t)
        chains[cid]!.priceIncrease = consentRequired ? .customerHasNotResponded : .customerConsentedOrWasNotifiedWithoutNeedingConsent
        signRenewal(cid)
        notify(cid, .priceIncrease, consentRequired ? .pending : .accepted)
        let c = chains[cid]!
        log(c.person, .priceIncreaseConsent, "price increase for \(name(c.person))'s \(c.productId)\(consentRequired ? " needs consent" : " (notice only)")")
    }

    public mutating func consentToPriceIncrease(_ cid: String, at t: Millis) {
        advance(to: t)
        chains[cid]!.priceIncrease = .customerConsentedOrWasNotifiedWithoutNeedingConsent
        signRenewal(cid)
        notify(cid, .priceIncrease, .accepted)
        let c = chains[cid]!
        log(c.person, .priceIncreaseConsent, "\(name(c.person)) accepts the price increase")
    }

    // MARK: One-time purchases

    public mutating func buyOneTime(person: Int, productId: String, quantity: Int, at t: Millis, familyMates: [Int]) {
        advance(to: t)
        let p = product(productId)
        let cid = newChain(person: person, ownership: .purchased, productId: productId, token: persons[person].accountId)
        makeTransaction(chain: cid, productId: productId, purchase: t, expires: nil, reason: .purchase, offer: nil,
                        quantity: p.kind == .consumable ? quantity : 1, inApp: true, txId: cid)
        // ONE_TIME_CHARGE: in the sandbox since June 2024, in production since May 27, 2025.
        notify(cid, .oneTimeCharge)
        let family: ScenarioFamily = switch p.kind {
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
        log(c.person, .restore, "\(name(c.person)) restores \(tx.productId): transaction \(short(original)) is issued again as \(short(id))")
    }

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
            ledger.append(LedgerEntry(person: chains[cid]!.person, productId: tx.productId, time: t, delta: -refundedUnits(tx, prorated: prorated),
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
        log(c.person, .refund, "\(tx.productId) transaction \(short(txId)) of \(name(c.person)) is refunded\(isCurrent ? "" : " (an earlier period)")")
        if isCurrent || tx.type == .nonConsumable {
            for m in c.members { revokeMember(m, reason: reason, at: t, why: "purchaser refunded") }
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
        log(chains[cid]!.person, .refundRequested, "\(name(chains[cid]!.person)) asks for a refund of \(tx.productId) \(short(txId)) (\(reason.rawValue)): CONSUMPTION_REQUEST")
    }

    public mutating func declineRefund(_ txId: String, at t: Millis) {
        advance(to: t)
        let tx = latest(txId)!
        notify(tx.originalTransactionId, .refundDeclined, tx: txId)
        log(chains[tx.originalTransactionId]!.person, .refundDeclined, "refund request for \(tx.productId) \(short(txId)) is declined")
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
            for other in chains[r.originalTransactionId]!.txIds where other != refunded && (latest(other)?.purchaseDate ?? .max) < r.revocationDate! {
                voided.insert(other)
            }
        }
        // Restore what this refund cut, unless another refund (chain scope) still voids it.
        for cut in cuts where cut.end > t && !voided.contains(cut.tx) && (cutByRefund[cut.tx] == nil || cut.tx == txId) {
            var s = segments[cut.segment]
            s.start = max(s.start, t)  // a stacked non-renewing period may not have begun yet
            s.end = cut.end
            segments.append(s)
            if paidSegment[cut.tx] == cut.segment { paidSegment[cut.tx] = segments.count - 1 }
        }
        // The units this refund took back come back (the latest clawback entry of the transaction is its refund's,
        // possibly zero units under the `share` policy).
        if tx.type == .consumable, let taken = ledger.last(where: { $0.transactionId == txId && $0.clawback }), taken.delta != 0 {
            ledger.append(LedgerEntry(person: chains[cid]!.person, productId: tx.productId, time: t, delta: -taken.delta, transactionId: txId, clawback: true))
        }
        if chains[cid]!.currentTx == txId, case .revoked = chains[cid]!.phase {
            chains[cid]!.phase = (chains[cid]!.expires ?? 0) > t ? .active : .expired
            signRenewal(cid)
        }
        mark(cid)
        notify(cid, .refundReversed, tx: txId)
        log(chains[cid]!.person, .refundReversed, "the refund of \(tx.productId) \(short(txId)) is reversed")
    }

    mutating func revokeMember(_ mid: String, reason: RevocationReason, at t: Millis, why: String) {
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
        log(m.person, why.contains("leaves") ? .familyLeave : .familyStopSharing, "\(name(m.person)) loses family access to \(m.productId) (\(why))")
    }

    /// The purchaser stops sharing the purchase of chain `cid` with the family.
    public mutating func stopSharing(_ cid: String, at t: Millis) {
        advance(to: t)
        for m in chains[cid]!.members { revokeMember(m, reason: .refundedForOtherReason, at: t, why: "sharing stopped") }
        chains[cid]!.members = []
    }

    /// `person` leaves the family: loses what others shared and stops sharing their own purchases.
    public mutating func leaveFamily(person: Int, at t: Millis) {
        advance(to: t)
        for id in chainOrder {
            var c = chains[id]!
            if c.person == person, !c.members.isEmpty {
                for m in c.members { revokeMember(m, reason: .refundedForOtherReason, at: t, why: "\(name(person)) leaves the family") }
                c = chains[id]!
                c.members = []
                chains[id] = c
            }
            if let s = c.source, c.person == person, chains[s]!.members.contains(id) {
                revokeMember(id, reason: .refundedForOtherReason, at: t, why: "\(name(person)) leaves the family")
                chains[s]!.members.removeAll { $0 == id }
            }
        }
        leftFamily.insert(person)
    }

    func short(_ txId: String) -> String { "…" + String(txId.suffix(4)) }
}
