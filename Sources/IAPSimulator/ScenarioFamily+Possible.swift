import IAPModel

/// Which scenario families the history generator can make for a catalog, so that a run's "not exercised" line lists
/// only blind spots more cases could reach, not families the app's products rule out (a catalog without a
/// non-renewing subscription never buys one). Each rule mirrors the generator's own precondition for the action
/// that records the family; where a rule is unsure it says possible, since hiding a reachable blind spot misleads
/// more than listing an unreachable one.
extension ScenarioFamily {
    /// The families cases of `catalog` can make; with `drawsCatalogs`, also those of every catalog
    /// ``CatalogGenerator`` draws from it (any products and offers; the base's environment and grace setting).
    public static func possible(in catalog: Catalog, drawsCatalogs: Bool = false) -> Set<ScenarioFamily> {
        var out = possible(products: catalog.products, grace: GraceReach(catalog))
        if drawsCatalogs { out.formUnion(possible(products: nil, grace: GraceReach(catalog))) }
        if [.production, .sandbox].contains(catalog.environment) {
            // Available whatever the products (HistoryGenerator's `.externalPurchase`, `.testNotification`).
            out.formUnion([.externalPurchaseToken, .testNotification])
        }
        return out
    }

    /// The grace settings the generator can give a case of a catalog (`HistoryGenerator.generate`): a stated setting
    /// is kept; an unstated one varies over off and those App Store Connect offers; a `.storekit` file's "on" varies
    /// over the settings with grace.
    struct GraceReach {
        var off: Bool, on: Bool, paidRenewalsOnly: Bool
        init(_ catalog: Catalog) {
            switch catalog.graceChoice {
            case .declared:
                let g = catalog.gracePeriod
                (off, on, paidRenewalsOnly) = (g == nil, g != nil, g?.eligibility == .paidRenewalsOnly)
            case .varies: (off, on, paidRenewalsOnly) = (true, true, true)
            case .variesWhileOn: (off, on, paidRenewalsOnly) = (false, true, true)
            }
        }
    }

    /// The families `products` allow (nil: any products a drawn catalog may have).
    static func possible(products: [CatalogProduct]?, grace: GraceReach) -> Set<ScenarioFamily> {
        let any = products == nil
        let ps = products ?? []
        func has(_ k: ProductKind) -> Bool { any || ps.contains { $0.kind == k } }
        let renewables = ps.filter { $0.kind == .autoRenewable }
        func offering(_ offers: (CatalogProduct) -> [OfferSpec]) -> Bool {
            any || renewables.contains { !offers($0).isEmpty }
        }
        var out: Set<ScenarioFamily> = []
        // Any purchase can be refunded, the refund declined, and a refund reversed.
        if any || !ps.isEmpty { out.formUnion([.refund, .refundDeclined, .refundReversed]) }
        if has(.consumable) { out.insert(.buyConsumable) }
        if has(.nonConsumable) { out.insert(.buyNonConsumable) }
        if has(.nonRenewing) { out.insert(.buyNonRenewing) }
        if has(.consumable) || has(.autoRenewable) { out.insert(.refundRequested) }
        if has(.nonConsumable) || has(.autoRenewable) { out.insert(.restore) }
        // Only auto-renewables and non-consumables are shared (the loaders refuse other shareable kinds).
        if any || ps.contains(where: { $0.familyShareable && [.autoRenewable, .nonConsumable].contains($0.kind) }) {
            out.formUnion([.familyShare, .familyStopSharing, .familyLeave])
        }
        guard has(.autoRenewable) else { return out }
        out.formUnion([
            .buySubscription, .resubscribe, .renew, .recoverAfterGrace, .retryExhausted, .cancel, .reenable,
            .expireVoluntary, .expiredWithoutIntent, .extendRenewal, .extendRenewalForAll, .priceIncreaseConsent,
            .priceIncreaseNoConsent,
        ])
        if any || renewables.contains(where: { $0.introductoryOffer != nil }) { out.insert(.introOffer) }
        if offering(\.promotionalOffers) { out.insert(.promotionalOffer) }
        if offering(\.offerCodes) { out.insert(.offerCode) }
        if offering(\.winBackOffers) { out.insert(.winBackOffer) }
        out.formUnion(graceFamilies(grace, freeTrial: any || renewables.contains(where: offersAFreeTrial)))
        out.formUnion(any ? changeFamilies : productChanges(renewables))
        return out
    }

    /// A billing failure gets grace when the setting is on, except after a free trial under "paid renewals only"
    /// (`StoreSimulator.failBilling`); only then can the notification say `GRACE_PERIOD` without a grace date.
    static func graceFamilies(_ grace: GraceReach, freeTrial: Bool) -> Set<ScenarioFamily> {
        var out: Set<ScenarioFamily> = []
        if grace.on { out.formUnion([.billingFailureGrace, .graceWithoutRetryFlag, .recoverInGrace, .graceExpired]) }
        let trialWithoutGrace = grace.paidRenewalsOnly && freeTrial
        if trialWithoutGrace { out.insert(.gracePeriodWithoutDate) }
        if grace.off || trialWithoutGrace { out.insert(.billingFailureNoGrace) }
        return out
    }

    static func offersAFreeTrial(_ p: CatalogProduct) -> Bool {
        ([p.introductoryOffer].compactMap { $0 } + p.promotionalOffers + p.offerCodes + p.winBackOffers)
            .contains { $0.discountType == .freeTrial }
    }

    static let changeFamilies: Set<ScenarioFamily> = [
        .upgrade, .downgrade, .crossgradeImmediate, .crossgradeDeferred, .revertDowngrade,
    ]

    /// Each ordered pair of auto-renewables of one group, classified as the generator classifies a change
    /// (``ProductChange/classify(from:to:)``, on the catalog's first product of each id); a change that waits for the
    /// renewal can be reverted.
    static func productChanges(_ renewables: [CatalogProduct]) -> Set<ScenarioFamily> {
        var first: [String: CatalogProduct] = [:]
        for p in renewables where first[p.id] == nil { first[p.id] = p }
        var out: Set<ScenarioFamily> = []
        for p in first.values {
            for q in first.values where q.id != p.id && q.groupId == p.groupId {
                let change = ProductChange.classify(from: p, to: q)
                out.insert(change.family)
                if !change.isImmediate { out.insert(.revertDowngrade) }
            }
        }
        return out
    }
}
