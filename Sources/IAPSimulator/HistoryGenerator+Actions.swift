import IAPModel
import PropertyEngine

// Actions that draw their details (products, offers, quantities, family members) from the choice source.
extension HistoryGenerator {
    func familyMates(_ sim: StoreSimulator, _ person: Int) -> [Int] {
        guard !sim.leftFamily.contains(person) else { return [] }
        return sim.familyMates(of: person).filter { !sim.leftFamily.contains($0) }
    }

    func purchase(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let person = src.int(below: sim.persons.count)
        let options = sim.catalog.products.filter { p in
            switch p.kind {
            case .consumable, .nonRenewing: return true
            case .nonConsumable:
                return !sim.chains(of: person).contains { c in
                    c.productId == p.id && c.ownership == .purchased && sim.latest(c.currentTx!)?.revocationDate == nil
                }
            case .autoRenewable:
                guard let c = sim.ownChain(person: person, group: p.groupId!) else { return true }
                switch c.phase {
                case .expired, .revoked: return true
                default: return false
                }
            }
        }
        guard !options.isEmpty else { return }
        let p = options[src.int(below: options.count)]
        let mates = familyMates(sim, person)
        switch p.kind {
        case .autoRenewable:
            let existing = sim.ownChain(person: person, group: p.groupId!)
            var offers: [PurchaseOffer] = [.none]
            if existing == nil {
                if p.introductoryOffer != nil && !usedIntro(sim, person: person, group: p.groupId!) {
                    offers.append(.introductory)
                }
                offers += p.offerCodes.map { .offerCode($0) }
            } else {
                offers += p.promotionalOffers.map { .promotional($0) }
                offers += p.winBackOffers.map { .winBack($0) }
                offers += p.offerCodes.map { .offerCode($0) }
            }
            let offer = offers[src.weighted(offers.indices.map { $0 == 0 ? 3 : 2 })]
            // Apple's pages have reported such a purchase in two forms over time; both are generated.
            let redeemed: Bool =
                switch offer {
                case .promotional, .offerCode: src.chance(50)
                case .none, .introductory, .winBack: false
                }
            sim.buySubscription(
                person: person, productId: p.id, offer: offer, at: t, familyMates: mates,
                reportedAsOfferRedeemed: redeemed)
        default:
            sim.buyOneTime(person: person, productId: p.id, quantity: 1 + src.int(below: 5), at: t, familyMates: mates)
        }
    }

    /// Apple's rule for selling an introductory offer: never received one in the group (docs/semantics.md#offers-and-intro-eligibility).
    func usedIntro(_ sim: StoreSimulator, person: Int, group: String) -> Bool {
        sim.chains(of: person).contains { c in
            c.groupId == group && c.txIds.contains { sim.latest($0)?.offerType == .introductory }
        }
    }

    func advance(
        _ sim: inout StoreSimulator, _ src: ChoiceSource, boundary b: (time: Millis, chain: String, kind: BoundaryKind)
    ) {
        let c = sim.chains[b.chain]!
        switch b.kind {
        case .graceEnd: sim.expireGrace(c.id)
        case .retryEnd: sim.exhaustRetry(c.id)
        case .periodEnd:
            // A draw of 1 in 5 gives the renewal info signed now a flaw seen in production payloads. It comes
            // first, whatever happens at the period's end, so that it keeps its meaning when the shrinker's
            // deletion of an earlier action makes this advance reach another chain.
            // A free trial that grace does not cover fails to convert more often, and more often with the flaw
            // (the case behind the GRACE_PERIOD-without-date reports, rare otherwise).
            let roll = src.int(below: 100)
            let trialWithoutGrace = c.currentIsFreeTrial && sim.catalog.gracePeriod?.eligibility == .paidRenewalsOnly
            if !c.autoRenew || c.priceIncrease == .customerHasNotResponded {
                sim.expire(c.id, quirk: roll < 20)
            } else if src.weighted(trialWithoutGrace ? [1, 1] : [7, 3]) == 0 {
                sim.renew(c.id)
            } else {
                sim.failBilling(c.id, retryDays: src.int(in: 1...60), quirk: roll < (trialWithoutGrace ? 60 : 20))
            }
        }
    }

    func productChange(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let c = src.pick(changeable(sim))
        var targets = sim.catalog.products(inGroup: c.groupId!).map(\.id).filter {
            $0 != c.productId && $0 != c.autoRenewProductId
        }
        let canRevert = c.autoRenewProductId != c.productId
        if canRevert { targets.append(c.productId) }
        guard !targets.isEmpty else { return }
        let q = targets[src.int(below: targets.count)]
        if canRevert && q == c.productId {
            sim.revertChange(c.id, at: t)
        } else {
            // Now and then the change comes with an offer of the new product (Apple: OFFER_REDEEMED/UPGRADE with a
            // promotional offer or an offer code, /DOWNGRADE with a promotional offer).
            let p = sim.catalog.product(q)!
            let immediate = ProductChange.classify(from: sim.catalog.product(c.productId)!, to: p).isImmediate
            let offers =
                p.promotionalOffers.map { PurchaseOffer.promotional($0) }
                + (immediate ? p.offerCodes.map { PurchaseOffer.offerCode($0) } : [])
            let offer = !offers.isEmpty && src.chance(30) ? src.pick(offers) : .none
            sim.changeProduct(c.id, to: q, at: t, offer: offer)
        }
    }

    func refund(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let refundable = refundable(sim), reversible = reversible(sim)
        let kind = src.weighted([refundable.isEmpty ? 0 : 6, refundable.isEmpty ? 0 : 2, reversible.isEmpty ? 0 : 3])
        switch kind {
        case 0, 1:
            let tx = src.pick(refundable)
            // Consumables and auto-renewable subscriptions: Apple first asks for consumption data, up to 12 hours
            // before it decides (never before the store's last event).
            if let type = sim.latest(tx)?.type, type == .consumable || type == .autoRenewable, src.chance(60) {
                let ahead = Millis(1 + src.int(below: 12 * 60)) * CivilTime.msPerMinute
                sim.requestRefund(tx, reason: src.pick(ConsumptionRequestReason.known), at: max(sim.now, t - ahead))
            }
            if kind == 0 {
                sim.refund(
                    tx, reason: src.chance(50) ? .refundedDueToIssue : .refundedForOtherReason,
                    prorated: src.chance(20), at: t)
            } else {
                sim.declineRefund(tx, at: t)
            }
        default: sim.reverseRefund(src.pick(reversible), at: t)
        }
    }

    func familyChange(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let sharing = sharing(sim), leavers = leavers(sim)
        if !sharing.isEmpty && (leavers.isEmpty || src.chance(50)) {
            sim.stopSharing(src.pick(sharing).id, at: t)
        } else if !leavers.isEmpty {
            sim.leaveFamily(person: src.pick(leavers), at: t)
        }
    }

    /// A renewal date extension: of one subscription, or now and then of every eligible subscriber of its product
    /// through the mass endpoint (docs/semantics.md#renewal-date-extension).
    func extend(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let c = src.pick(extendable(sim, at: t))
        let days = src.int(in: 1...90)
        if src.chance(30) {
            let all = extendable(sim, at: t).filter { $0.productId == c.productId }.map(\.id)
            sim.extendRenewalForAll(productId: c.productId, chains: all, days: days, at: t)
        } else {
            sim.extendRenewal(c.id, days: days, at: t)
        }
    }

    /// A price increase on a subscription not yet told of one, or the customer's consent to one pending
    /// (docs/semantics.md#price-increase).
    func priceIncrease(_ sim: inout StoreSimulator, _ src: ChoiceSource, at t: Millis) {
        let c = src.pick(
            activeSubscriptions(sim).filter {
                $0.priceIncrease != .customerConsentedOrWasNotifiedWithoutNeedingConsent
            })
        if c.priceIncrease == .customerHasNotResponded {
            sim.consentToPriceIncrease(c.id, at: t)
        } else {
            sim.priceIncrease(c.id, consentRequired: !src.chance(30), at: t)
        }
    }

    /// Every boundary in turn, each period renewing (no billing failure): the long-lived subscriber. Not past six
    /// years after the history's start, so later actions stay within the test certificates' validity.
    func timePasses(_ sim: inout StoreSimulator, _ src: ChoiceSource) {
        for _ in 0..<(1 + src.int(below: size)) {
            guard let b = nextBoundary(sim), b.time < min(sim.start + 6 * 365 * CivilTime.msPerDay, Self.horizon)
            else { break }
            let c = sim.chains[b.chain]!
            if b.kind == .periodEnd && c.autoRenew && c.priceIncrease != .customerHasNotResponded {
                sim.renew(c.id)
            } else {
                advance(&sim, src, boundary: b)
            }
        }
    }

    /// A run of consumable purchases by one person, hours apart, until the next boundary.
    func spree(_ sim: inout StoreSimulator, _ src: ChoiceSource, at start: Millis) {
        let person = src.int(below: sim.persons.count)
        let products = sim.catalog.products.filter { $0.kind == .consumable }
        var t = start
        for _ in 0..<(1 + src.int(below: size)) {
            if let b = nextBoundary(sim)?.time, t >= b { break }
            sim.buyOneTime(
                person: person, productId: src.pick(products).id, quantity: 1 + src.int(below: 3), at: t,
                familyMates: [])
            t += Millis(1 + src.int(below: 48)) * CivilTime.msPerHour
        }
    }
}
