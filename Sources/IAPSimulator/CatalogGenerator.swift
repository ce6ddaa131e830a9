import IAPModel
import PropertyEngine

/// Draws an app's catalog for one case, so a run meets product shapes no fixed catalog has: one to three
/// subscription groups of one to four products each, with levels and durations drawn independently (so a product
/// change goes up, down or across in level while going shorter, the same or longer in duration, in every
/// combination), offers of every type on some products, some products family-shareable, and a few one-time
/// products and non-renewing subscriptions.
///
/// Choice 0 is the base catalog itself (the built-in one unless the user gave another as the base), so the
/// shrinker can bring a failure back to the catalog the documentation describes when the failure does not need a
/// drawn shape; within a drawn catalog, 0 means fewer groups, fewer products, level 1, monthly, no offers.
///
/// A drawn catalog keeps the base's app identity (bundle id, app Apple id, environment); the history generator
/// still varies the grace setting per case.
public struct CatalogGenerator: Sendable {
    public var base: Catalog
    /// Percentage of cases that get a drawn catalog instead of the base.
    public var drawnPercent: Int

    public init(base: Catalog, drawnPercent: Int = 50) {
        self.base = base
        self.drawnPercent = drawnPercent
    }

    /// The durations Apple offers for auto-renewable subscriptions, the simplest first.
    static let durations: [Period] = [
        Period(1, .month), Period(1, .year), Period(1, .week), Period(3, .month), Period(6, .month), Period(2, .month),
    ]
    /// Free-trial lengths App Store Connect offers.
    static let trialLengths: [Period] = [
        Period(1, .week), Period(1, .month), Period(3, .day), Period(2, .week), Period(3, .month), Period(6, .month),
        Period(1, .year), Period(2, .month),
    ]
    /// Pay-up-front lengths App Store Connect offers (months only).
    static let upFrontLengths: [Period] = [
        Period(1, .month), Period(3, .month), Period(2, .month), Period(6, .month), Period(1, .year),
    ]
    static let groupNames = ["alpha", "beta", "gamma"]
    /// The groups' display names (the names above, capitalized).
    static let groupDisplayNames = ["Alpha", "Beta", "Gamma"]

    public func draw(_ src: ChoiceSource) -> Catalog {
        src.span("catalog") {
            guard src.chance(drawnPercent) else { return base }
            var cat = base
            cat.groups = []
            cat.products = []
            let groupCount = 1 + src.int(below: 3)
            for g in 0..<groupCount {
                let group = SubscriptionGroup(id: String(22_000_001 + g), name: Self.groupDisplayNames[g])
                cat.groups.append(group)
                // Mostly groups with several products (product changes); a group of one now and then.
                let count = 1 + src.weighted([1, 3, 3, 2])
                for _ in 0..<count {
                    let level = 1 + src.int(below: min(count, 3))
                    let period = src.pick(Self.durations)
                    let id = unique("\(Self.groupNames[g]).l\(level).\(Self.tag(period))", in: cat)
                    cat.products.append(
                        CatalogProduct(
                            id: id, kind: .autoRenewable, groupId: group.id, level: level, period: period,
                            familyShareable: src.chance(60),
                            introductoryOffer: src.chance(60) ? offer(nil, for: period, src) : nil,
                            promotionalOffers: src.chance(40) ? [offer(id + ".promo", for: period, src)] : [],
                            offerCodes: src.chance(40)
                                ? [
                                    offer(
                                        String(id.uppercased().map { $0 == "." ? "-" : $0 }) + "-CODE", for: period,
                                        src)
                                ] : [],
                            winBackOffers: src.chance(20) ? [offer(id + ".winback", for: period, src)] : []))
                }
            }
            for i in 0..<src.int(below: 3) {
                cat.products.append(CatalogProduct(id: "coins.\(i + 1)", kind: .consumable))
            }
            for i in 0..<src.int(below: 3) {
                cat.products.append(
                    CatalogProduct(id: "unlock.\(i + 1)", kind: .nonConsumable, familyShareable: src.chance(50)))
            }
            if src.chance(50) {
                let period = src.pick([Period(3, .month), Period(1, .month), Period(1, .year)])
                cat.products.append(CatalogProduct(id: "pass.\(Self.tag(period))", kind: .nonRenewing, period: period))
            }
            return cat
        }
    }

    /// An offer of a drawn payment mode: a free trial or a pay-up-front price for one of Apple's lengths, or a
    /// pay-as-you-go price for one to three of the product's own periods (at most a year in all).
    func offer(_ id: String?, for period: Period, _ src: ChoiceSource) -> OfferSpec {
        switch src.int(below: 3) {
        case 1:
            OfferSpec(
                id: id, discountType: .payAsYouGo, period: period,
                periods: 1 + src.int(below: Self.maxPayAsYouGoPeriods(period)))
        case 2: OfferSpec(id: id, discountType: .payUpFront, period: src.pick(Self.upFrontLengths))
        default: OfferSpec(id: id, discountType: .freeTrial, period: src.pick(Self.trialLengths))
        }
    }

    /// Pay-as-you-go periods of `period` that fit in a year, at most three.
    static func maxPayAsYouGoPeriods(_ period: Period) -> Int { max(1, min(3, 365 / max(period.approximateDays, 1))) }

    func unique(_ id: String, in cat: Catalog) -> String {
        var candidate = id
        var n = 2
        while cat.product(candidate) != nil {
            candidate = "\(id).\(n)"
            n += 1
        }
        return candidate
    }

    static func tag(_ p: Period) -> String { "\(p.count)\(p.unit.rawValue.lowercased())" }
}
