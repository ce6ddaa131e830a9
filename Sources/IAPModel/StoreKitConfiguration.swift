import Foundation
import IAPEncoding

/// Import of Xcode StoreKit configuration files (`.storekit`, JSON), so implementers check their validator against
/// their own products.
///
/// Read: `products[]` (`Consumable`, `NonConsumable`), `nonRenewingSubscriptions[]`, and
/// `subscriptionGroups[].subscriptions[]` with `groupNumber` as level, `recurringSubscriptionPeriod`,
/// `familyShareable`, `introductoryOffer`, `adHocOffers` (promotional), `codeOffers` and `winbackOffers`.
/// From `settings`, `_billingGracePeriodEnabled` (on or off; the file gives no length). Keys Xcode writes that iapcheck
/// does not need (localizations, prices, the other settings) are ignored.
public enum StoreKitConfiguration {
    public static func catalog(from data: Data, file: String, defaults: Catalog) throws(ConfigError) -> Catalog {
        let r = StrictJSON(file: file)
        let root = try r.root(data)
        var products: [CatalogProduct] = []
        var paths: [String] = []
        var groups: [SubscriptionGroup] = []
        var defaulted: Set<String> = []
        var skipped: [String] = []

        for p in root.objects("products", required: false) ?? [] {
            let id = p.string("productID")
            let type = p.choice("type", ["Consumable", "NonConsumable"])
            let shareable = p.bool("familyShareable", required: false) ?? false
            if let id, let type {
                let kind: ProductKind = type == "Consumable" ? .consumable : .nonConsumable
                if shareable && kind == .consumable {
                    r.problem(p.keyPath("familyShareable"), "a consumable cannot be family-shareable")
                }
                paths.append(p.keyPath("productID"))
                products.append(
                    CatalogProduct(id: id, kind: kind, familyShareable: shareable && kind == .nonConsumable))
            }
        }
        for p in root.objects("nonRenewingSubscriptions", required: false) ?? [] {
            let id = p.string("productID")
            _ = p.choice("type", ["NonRenewingSubscription"], required: false)
            if p.bool("familyShareable", required: false) == true {
                r.problem(
                    p.keyPath("familyShareable"),
                    "App Store Connect offers Family Sharing for auto-renewable subscriptions and non-consumables only")
            }
            // Apple gives non-renewing subscriptions no duration; the app decides it (docs/semantics.md#product-types).
            // One month is assumed, and the run says so; an entitlements file's `nonRenewing` gives the real one.
            if let id {
                paths.append(p.keyPath("productID"))
                products.append(CatalogProduct(id: id, kind: .nonRenewing, period: Period(1, .month)))
                defaulted.insert(id)
            }
        }
        for g in root.objects("subscriptionGroups", required: false) ?? [] {
            let gid = g.string("id")
            let name = g.string("name", required: false) ?? gid ?? "?"
            if let gid {
                if let why = CatalogLoader.idProblem(gid) { r.problem(g.keyPath("id"), why) }
                groups.append(SubscriptionGroup(id: gid, name: name))
            }
            let subscriptions = g.objects("subscriptions") ?? []
            if g.has("subscriptions") && subscriptions.isEmpty {
                r.problem(g.keyPath("subscriptions"), "a subscription group needs at least one subscription")
            }
            for s in subscriptions {
                let id = s.string("productID")
                if let type = s.string("type", required: false), type != "RecurringSubscription" {
                    r.problem(
                        s.keyPath("type"),
                        "\"\(type)\" in a subscription group: only RecurringSubscription products belong there")
                }
                let level = s.int("groupNumber", range: 1...1000)
                let period = s.renewalPeriod("recurringSubscriptionPeriod")
                let shareable = s.bool("familyShareable", required: false) ?? false
                // Older files have one `introductoryOffer`; newer ones an `introductoryOffers` array (one per
                // eligibility rule). iapcheck models one introductory offer per product: the first.
                let intro =
                    s.object("introductoryOffer", required: false).flatMap { offer($0, idKey: nil) }
                    ?? (s.objects("introductoryOffers", required: false) ?? []).compactMap { offer($0, idKey: nil) }
                    .first
                // Xcode writes the ordinary plan (BILLED_UPFRONT) on every subscription; installment plans (a
                // commitment billed monthly) are outside what iapcheck models: left out, and the run says so.
                for (i, plan) in (s.objects("billingPlans", required: false) ?? []).enumerated() {
                    if let type = plan.string("billingPlanType", required: false), type != "BILLED_UPFRONT" {
                        skipped.append(
                            "\(id ?? "?"): billingPlans[\(i)] (\(type), billed in installments) is not modelled; the subscription is checked as billed up front"
                        )
                    }
                }
                let promos = (s.objects("adHocOffers", required: false) ?? []).compactMap {
                    offer($0, idKey: "offerID")
                }
                let codes = (s.objects("codeOffers", required: false) ?? []).compactMap {
                    offer($0, idKey: "referenceName")
                }
                let winBack = (s.objects("winbackOffers", required: false) ?? []).compactMap {
                    offer($0, idKey: "offerID")
                }
                if let sg = s.string("subscriptionGroupID", required: false), let gid, sg != gid {
                    r.problem(
                        s.keyPath("subscriptionGroupID"), "\"\(sg)\" differs from the enclosing group id \"\(gid)\"")
                }
                if let id, let level, let period, let gid {
                    paths.append(s.keyPath("productID"))
                    products.append(
                        CatalogProduct(
                            id: id, kind: .autoRenewable, groupId: gid, level: Int(level), period: period,
                            familyShareable: shareable, introductoryOffer: intro, promotionalOffers: promos,
                            offerCodes: codes, winBackOffers: winBack))
                }
            }
        }
        if !root.has("products") && !root.has("subscriptionGroups") && !root.has("nonRenewingSubscriptions") {
            r.problem(
                "",
                "no products, nonRenewingSubscriptions or subscriptionGroups: is this a StoreKit configuration file?")
        } else {
            CatalogLoader.validate(products: products, paths: paths, reader: r)
        }
        try r.finish()
        var c = defaults
        // settings._billingGracePeriodEnabled: Xcode's switch for the app's Billing Grace Period, without a length.
        switch root.object("settings", required: false)?.dict["_billingGracePeriodEnabled"] as? Bool {
        case false?:
            c.gracePeriod = nil
            c.graceChoice = .declared
        case true?:
            c.gracePeriod = c.gracePeriod ?? GracePeriodSetting(days: 16, eligibility: .allRenewals)
            c.graceChoice = .variesWhileOn
        case nil: break
        }
        c.groups = groups
        c.products = products
        c.defaultedDurations = defaulted
        c.skipped = skipped
        return c
    }

    static func offer(_ o: StrictJSON.Object, idKey: String?) -> OfferSpec? {
        let id = idKey.flatMap { o.string($0, required: false) } ?? o.string("internalID", required: false)
        let mode = o.choice("paymentMode", ["free", "payAsYouGo", "payUpFront"])
        let period = o.period("subscriptionPeriod")
        let n = o.int("numberOfPeriods", required: false, range: 1...12) ?? 1
        guard let mode, let period else { return nil }
        let dt: OfferDiscountType =
            switch mode {
            case "free": .freeTrial
            case "payAsYouGo": .payAsYouGo
            default: .payUpFront
            }
        return OfferSpec(
            id: idKey == nil ? nil : id, discountType: dt, period: period, periods: mode == "payAsYouGo" ? Int(n) : 1)
    }
}
