import IAPModel

// What happens at the end of a period: renewals, billing retry and grace, expiry, auto-renew and price changes.

extension StoreSimulator {
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
            sim.makeTransaction(
                chain: id, productId: next, purchase: e, expires: end, reason: .renewal,
                offer: c.isMember ? nil : offer.map { ($0.type, $0.spec) }, inApp: false)
            sim.signRenewal(id)
            sim.notify(id, .didRenew)
        }
        let c = chains[cid]!
        log(
            c.person, .renew,
            "\(c.productId) renews for \(name(c.person)) until \(CivilTime.relative(c.expires! - (origin ?? 0)))")
    }

    /// The renewal charge fails: billing retry, with grace if the app has it and it applies. With `quirk`, the
    /// renewal info signed now is flawed as production payloads have been: grace given without the retry flag, or
    /// (when grace does not apply to this period) a `GRACE_PERIOD` subtype with no grace date. `grace: false`: the
    /// developer has turned the app's grace period off (App Store Connect allows it at any time), so none is given.
    public mutating func failBilling(_ cid: String, retryDays: Int, quirk: Bool = false, grace: Bool = true) {
        let c0 = chains[cid]!
        let e = c0.expires!
        advance(to: e)
        let product = product(c0.autoRenewProductId)
        var graceEnd: Millis?
        if grace, let g = catalog.gracePeriod, g.eligibility == .allRenewals || !c0.currentIsFreeTrial {
            graceEnd = e + Int64(g.days(forPeriod: product.period!)) * Self.day
        }
        let flaw: RenewalQuirk? =
            !quirk
            ? nil
            : graceEnd != nil ? .graceWithoutRetryFlag : catalog.gracePeriod != nil ? .gracePeriodWithoutDate : nil
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
                sim.segments.append(
                    TruthSegment(
                        person: c.person, productId: c.productId, chainId: id, start: e, end: graceEnd, kind: .grace,
                        ownership: c.ownership, promisedEnd: graceEnd))
            }
            sim.signRenewal(id)
            sim.notify(id, .didFailToRenew, graceEnd == nil && flaw == nil ? nil : .gracePeriod)
        }
        switch (graceEnd, flaw) {
        case (let g?, .graceWithoutRetryFlag?):
            log(
                c0.person, .graceWithoutRetryFlag,
                "billing fails for \(name(c0.person))'s \(c0.productId); grace until \(CivilTime.relative(g - (origin ?? 0))), but this renewal info says isInBillingRetryPeriod false"
            )
        case (let g?, _):
            log(
                c0.person, .billingFailureGrace,
                "billing fails for \(name(c0.person))'s \(c0.productId); grace until \(CivilTime.relative(g - (origin ?? 0)))"
            )
        case (nil, .gracePeriodWithoutDate?):
            log(
                c0.person, .gracePeriodWithoutDate,
                "billing fails for \(name(c0.person))'s \(c0.productId); no grace after a free trial, but the notification says GRACE_PERIOD (no grace date)"
            )
        case (nil, _):
            log(
                c0.person, .billingFailureNoGrace,
                "billing fails for \(name(c0.person))'s \(c0.productId); billing retry without grace")
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
            sim.makeTransaction(
                chain: id, productId: next, purchase: start, expires: end, reason: .renewal, offer: nil, inApp: false)
            sim.signRenewal(id)
            sim.notify(id, .didRenew, .billingRecovery)
        }
        let c = chains[cid]!
        log(
            c.person, inGrace ? .recoverInGrace : .recoverAfterGrace,
            "billing recovers \(inGrace ? "inside grace" : g == nil ? "in billing retry" : "after grace") for \(name(c.person))'s \(c.productId); paid until \(CivilTime.relative(c.expires! - (origin ?? 0)))"
        )
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
        log(
            c.person, .graceExpired,
            "grace period ends for \(name(c.person))'s \(c.productId); billing retry goes on (renewal info signed now says so)"
        )
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
        log(
            c0.person, priceIncrease ? .priceIncreaseNoConsent : quirk ? .expiredWithoutIntent : .expireVoluntary,
            "\(name(c0.person))'s \(c0.productId) expires (\(priceIncrease ? "price increase not accepted" : "auto-renew off"))\(quirk ? "; the renewal info has no expirationIntent" : "")"
        )
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
        log(
            c.person, on ? .reenable : .cancel,
            "\(name(c.person)) turns auto-renew \(on ? "back on" : "off") for \(c.productId)")
    }

    public mutating func priceIncrease(_ cid: String, consentRequired: Bool, at t: Millis) {
        advance(to: t)
        chains[cid]!.priceIncrease =
            consentRequired ? .customerHasNotResponded : .customerConsentedOrWasNotifiedWithoutNeedingConsent
        signRenewal(cid)
        notify(cid, .priceIncrease, consentRequired ? .pending : .accepted)
        let c = chains[cid]!
        log(
            c.person, .priceIncreaseConsent,
            "price increase for \(name(c.person))'s \(c.productId)\(consentRequired ? " needs consent" : " (notice only)")"
        )
    }

    public mutating func consentToPriceIncrease(_ cid: String, at t: Millis) {
        advance(to: t)
        chains[cid]!.priceIncrease = .customerConsentedOrWasNotifiedWithoutNeedingConsent
        signRenewal(cid)
        notify(cid, .priceIncrease, .accepted)
        let c = chains[cid]!
        log(c.person, .priceIncreaseConsent, "\(name(c.person)) accepts the price increase")
    }
}
