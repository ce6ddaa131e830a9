import IAPModel

// Each send as the simulator's actions (docs/send.md#scenarios): the store first lives up to the step's instant
// (renewals, grace and retry ends, expiries on the way), then the step happens; a step the customer's state does
// not allow is refused, saying what would allow it.
extension ScriptStep {
    func apply(to sim: inout StoreSimulator) throws(ScriptError) {
        guard let scenario else {
            Self.settle(&sim, before: at + 1)
            if at > sim.now { sim.advance(to: at) }
            return
        }
        switch scenario {
        case .renew, .failBilling:
            let c = try subscription(sim, "active subscription", then: "send buy first") { $0.phase == .active }
            guard c.autoRenew else {
                throw ScriptError(
                    "auto-renew is off for \(c.productId) (turned off by the customer or by a refund): send auto-renew-on first, or expire"
                )
            }
            Self.settle(&sim, before: c.expires!)
            if scenario == .renew {
                sim.renew(c.id)
            } else {
                sim.failBilling(c.id, retryDays: 60, grace: !has("no-grace"))
            }
        case .expire: try expire(&sim)
        default:
            guard at > sim.now else {
                throw ScriptError(
                    "--at must be after the customer's last event (\(CivilTime.iso8601(sim.now))); two events of one history never share an instant"
                )
            }
            Self.settle(&sim, before: at)
            try happen(scenario, &sim)
        }
    }

    /// The scenarios that happen at the step's instant.
    func happen(_ scenario: SendScenario, _ sim: inout StoreSimulator) throws(ScriptError) {
        switch scenario {
        case .buy: try buy(&sim, offer: .none)
        case .offerCode, .winBack, .promotionalOffer: try offer(scenario, &sim)
        case .recover:
            let c = try subscription(
                sim, "subscription in billing retry", then: "send fail-billing first", Self.retrying)
            sim.recover(c.id, at: at)
        case .refund, .declineRefund, .consumptionRequest:
            let tx = try transaction(sim, Self.refundable(sim), "purchase to refund", else: Self.inRetry(sim))
            switch scenario {
            case .refund: sim.refund(tx, reason: .refundedDueToIssue, prorated: has("prorated"), at: at)
            case .declineRefund: sim.declineRefund(tx, at: at)
            default: sim.requestRefund(tx, reason: .unintendedPurchase, at: at)
            }
        case .reverseRefund:
            sim.reverseRefund(
                try transaction(sim, Self.reversible(sim), "refund to reverse (send refund first)"), at: at)
        case .upgrade, .downgrade, .crossgrade: try change(scenario, &sim)
        case .familyShare: try share(&sim)
        case .revoke:
            guard let c = Self.purchasers(sim).first(where: { !$0.members.isEmpty }) else {
                throw ScriptError("nothing is shared with the customer: send family-share first")
            }
            sim.stopSharing(c.id, at: at)
        case .extend:
            let c = try subscription(sim, "active subscription outside a free trial", then: "send buy first") {
                $0.phase == .active && !$0.currentIsFreeTrial
            }
            try Self.mayExtend(c, days: days ?? 30, at: at)
            sim.extendRenewal(c.id, days: days ?? 30, at: at)
        case .priceIncrease:
            let c = try subscription(sim, "active subscription", then: "send buy first") { $0.phase == .active }
            if has("accept") {
                guard c.priceIncrease == .customerHasNotResponded else {
                    throw ScriptError("no price increase awaits the customer's consent: send price-increase first")
                }
                sim.consentToPriceIncrease(c.id, at: at)
            } else {
                sim.priceIncrease(c.id, consentRequired: !has("no-consent-needed"), at: at)
            }
        case .autoRenewOff, .autoRenewOn:
            let on = scenario == .autoRenewOn
            let c = try subscription(
                sim, "active subscription with auto-renew \(on ? "off" : "on")",
                then: on ? "send auto-renew-off first" : "send buy first"
            ) {
                $0.phase == .active && $0.autoRenew != on
            }
            sim.setAutoRenew(c.id, on: on, at: at)
        case .test: sim.requestTestNotification(at: at)
        case .openApp: sim.advance(to: at)  // the app's submissions are the delivery planner's (SendRun)
        case .renew, .failBilling, .expire: preconditionFailure("at the period's end, above")
        }
    }

    /// At the period's end after auto-renew was turned off (turned off now when it is on), or when billing retry
    /// gives up.
    func expire(_ sim: inout StoreSimulator) throws(ScriptError) {
        let c = try subscription(sim, "subscription that is active or in billing retry", then: "send buy first") {
            $0.phase == .active || Self.retrying($0)
        }
        if case .retry(_, _, let retryEnd) = c.phase {
            Self.settle(&sim, before: retryEnd + 1)
            return
        }
        if c.autoRenew && c.priceIncrease != .customerHasNotResponded {
            guard at > sim.now, at < c.expires! else {
                throw ScriptError("auto-renew is on: --at must fall before the period's end to turn it off first")
            }
            Self.settle(&sim, before: at)
            sim.setAutoRenew(c.id, on: false, at: at)
        }
        Self.settle(&sim, before: c.expires!)
        sim.expire(c.id)
    }

    // MARK: Purchases

    func buy(_ sim: inout StoreSimulator, offer: PurchaseOffer, person: Int = CustomerScript.customer)
        throws(ScriptError)
    {
        let p = try Self.product(product ?? "auto-renewable", in: sim.catalog)
        switch p.kind {
        case .autoRenewable:
            if let c = sim.ownChain(person: person, group: p.groupId!), c.phase == .active || Self.retrying(c) {
                throw ScriptError(
                    "\(sim.persons[person].name) already subscribes to \(c.productId) in this group: send upgrade, downgrade or crossgrade to move, or expire first"
                )
            }
            sim.buySubscription(
                person: person, productId: p.id, offer: offer, at: at,
                familyMates: person == CustomerScript.organizer ? [CustomerScript.customer] : [])
        case .nonConsumable:
            let owned = sim.chains(of: person).contains { c in
                c.productId == p.id && c.ownership == .purchased && sim.latest(c.currentTx!)?.revocationDate == nil
            }
            if owned { throw ScriptError("\(sim.persons[person].name) already owns \(p.id)") }
            fallthrough
        default:
            sim.buyOneTime(
                person: person, productId: p.id, quantity: quantity ?? 1, at: at,
                familyMates: person == CustomerScript.organizer ? [CustomerScript.customer] : [])
        }
    }

    /// An offer code (a new subscription), a win-back offer (a lapsed subscriber), a promotional offer (for the next
    /// renewal of an active subscription, else a resubscription with it).
    func offer(_ scenario: SendScenario, _ sim: inout StoreSimulator) throws(ScriptError) {
        let p = try Self.product(product ?? "auto-renewable", in: sim.catalog)
        let existing = sim.ownChain(person: CustomerScript.customer, group: p.groupId ?? "")
        let specs: [OfferSpec] =
            switch scenario {
            case .offerCode: p.offerCodes
            case .winBack: p.winBackOffers
            default: p.promotionalOffers
            }
        guard let spec = specs.first else {
            throw ScriptError(
                "\(p.id) has no \(scenario.rawValue.replacingOccurrences(of: "-", with: " ")) in the catalog")
        }
        if scenario == .promotionalOffer, let c = existing, c.phase == .active {
            guard c.nextOffer == nil else { throw ScriptError("an offer already applies to \(c.productId)'s renewals") }
            sim.redeemPromotionalOffer(c.id, offer: spec, at: at)
            return
        }
        if scenario == .winBack && existing == nil {
            throw ScriptError("a win-back offer is for a lapsed subscriber: buy, then expire first")
        }
        switch scenario {
        case .offerCode: try buy(&sim, offer: .offerCode(spec))
        case .winBack: try buy(&sim, offer: .winBack(spec))
        default: try buy(&sim, offer: .promotional(spec))
        }
    }

    func share(_ sim: inout StoreSimulator) throws(ScriptError) {
        var step = self
        if step.product == nil {
            guard
                let p = sim.catalog.products.first(where: { $0.familyShareable && $0.kind == .autoRenewable })
                    ?? sim.catalog.products.first(where: { $0.familyShareable })
            else {
                throw ScriptError("no product of the catalog is family-shareable (\"familyShareable\": true)")
            }
            step.product = p.id
        }
        let p = try Self.product(step.product!, in: sim.catalog)
        guard p.familyShareable else { throw ScriptError("\(p.id) is not family-shareable in the catalog") }
        try step.buy(&sim, offer: .none, person: CustomerScript.organizer)
    }

    func change(_ scenario: SendScenario, _ sim: inout StoreSimulator) throws(ScriptError) {
        let c = try subscription(sim, "active subscription", then: "send buy first") { $0.phase == .active }
        let from = sim.catalog.product(c.productId)!
        let wanted: (ProductChange) -> Bool = { k in
            switch scenario {
            case .upgrade: k == .upgrade
            case .downgrade: k == .downgrade
            default: k == .crossgradeImmediate || k == .crossgradeDeferred
            }
        }
        let candidates = sim.catalog.products(inGroup: c.groupId!).filter {
            $0.id != c.productId && wanted(ProductChange.classify(from: from, to: $0))
        }
        let target = product.map { id in candidates.first { $0.id == id } } ?? candidates.first
        guard let q = target else {
            let levels = sim.catalog.products(inGroup: c.groupId!).map { "\($0.id) (level \($0.level ?? 1))" }
            let hint =
                scenario == .upgrade
                ? "buy a lower level first" : scenario == .downgrade ? "buy a higher level first" : "give --product"
            throw ScriptError(
                "no \(scenario.rawValue) from \(c.productId) (level \(from.level ?? 1))\(product.map { " to \($0)" } ?? ""): the group has \(levels.joined(separator: ", ")); \(hint) (--product ID; level 1 is the highest)"
            )
        }
        sim.changeProduct(c.id, to: q.id, at: at)
    }

    // MARK: What a step applies to

    /// The customer's own subscription the step applies to: of `--product`'s group, else the most recent one.
    func subscription(
        _ sim: StoreSimulator, _ what: String, then hint: String, _ matches: (SimChain) -> Bool
    ) throws(ScriptError) -> SimChain {
        let group = product.flatMap { sim.catalog.product($0)?.groupId }
        let found = Self.purchasers(sim).first { c in
            c.person == CustomerScript.customer && c.kind == .autoRenewable && (group == nil || c.groupId == group)
                && matches(c)
        }
        guard let found else {
            throw ScriptError(
                "\(sim.persons[CustomerScript.customer].name) has no \(what)\(product.map { " of \($0)'s group" } ?? ""): \(hint)"
            )
        }
        return found
    }

    /// The customer's most recent transaction among `ids` (of `--product`, when given); else an error naming `what`
    /// and, when one is known, `why` there is none.
    func transaction(_ sim: StoreSimulator, _ ids: [String], _ what: String, else why: String? = nil)
        throws(ScriptError) -> String
    {
        let found = ids.first { id in
            guard let tx = sim.latest(id), let c = sim.chains[tx.originalTransactionId] else { return false }
            return c.person == CustomerScript.customer && (product == nil || tx.productId == product)
        }
        guard let found else {
            throw ScriptError(
                "\(sim.persons[CustomerScript.customer].name) has no \(what)\(product.map { " of \($0)" } ?? "")"
                    + (why.map { ": \($0)" } ?? ""))
        }
        return found
    }

    /// Why a subscription in billing retry has nothing to refund: its last period is unpaid, and the simulator
    /// refunds what was paid for the period under way (nil when the customer has none in retry).
    static func inRetry(_ sim: StoreSimulator) -> String? {
        guard let first = sim.chains(of: CustomerScript.customer).filter(retrying).map(\.productId).sorted().first
        else { return nil }
        return
            "\(first) is in billing retry, so no period of it is paid for now; send recover first, or --advance until it expires"
    }

    /// A product of the catalog by id, or the first of a kind (`auto-renewable`, `non-renewing`, `non-consumable`,
    /// `consumable`).
    static func product(_ text: String, in catalog: Catalog) throws(ScriptError) -> CatalogProduct {
        if let p = catalog.product(text) { return p }
        if let kind = ProductKind(rawValue: text), let p = catalog.products.first(where: { $0.kind == kind }) {
            return p
        }
        throw ScriptError(
            "no product \"\(text)\" in the catalog; its products: \(catalog.products.map(\.id).joined(separator: ", ")), or a kind: \(ProductKind.allCases.map(\.rawValue).joined(separator: ", "))"
        )
    }

    static func purchasers(_ sim: StoreSimulator) -> [SimChain] {
        HistoryGenerator(catalog: sim.catalog, policy: sim.policy).purchasers(sim)
    }

    static func refundable(_ sim: StoreSimulator) -> [String] {
        HistoryGenerator(catalog: sim.catalog, policy: sim.policy).refundable(sim)
    }

    static func reversible(_ sim: StoreSimulator) -> [String] {
        HistoryGenerator(catalog: sim.catalog, policy: sim.policy).reversible(sim)
    }

    /// The store lives up to `t`: every period end, grace end and retry end before it happens as it would with
    /// nobody acting — a renewal while auto-renew is on (and no price increase awaits consent), else the expiry.
    static func settle(_ sim: inout StoreSimulator, before t: Millis) {
        let g = HistoryGenerator(catalog: sim.catalog, policy: sim.policy)
        while let b = g.nextBoundary(sim), b.time < t {
            let c = sim.chains[b.chain]!
            switch b.kind {
            case .graceEnd: sim.expireGrace(c.id)
            case .retryEnd: sim.exhaustRetry(c.id)
            case .periodEnd:
                if c.autoRenew && c.priceIncrease != .customerHasNotResponded {
                    sim.renew(c.id)
                } else {
                    sim.expire(c.id)
                }
            }
        }
    }

    /// Apple's limits on renewal date extensions: 1 to 90 days, at most twice per subscription in 365 days, before
    /// the subscription expires (docs/semantics.md#renewal-date-extension).
    static func mayExtend(_ c: SimChain, days: Int, at t: Millis) throws(ScriptError) {
        guard (1...90).contains(days) else { throw ScriptError("--days \(days): Apple extends by 1 to 90 days") }
        guard c.extensions.filter({ t - $0 < 365 * CivilTime.msPerDay }).count < 2 else {
            throw ScriptError("\(c.productId) was extended twice in the last 365 days, Apple's limit")
        }
    }

    static func retrying(_ c: SimChain) -> Bool { if case .retry = c.phase { true } else { false } }
}
