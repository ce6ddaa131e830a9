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
        // An iapcheck catalog under a .storekit name: every product would be refused for keys it does not use.
        if root.has("bundleId") && root.has("appAppleId") {
            throw ConfigError(
                file: file, key: "bundleId",
                "this is an iapcheck catalog (bundleId, appAppleId), not an Xcode StoreKit configuration: name it .json"
            )
        }
        var read = Reading(reader: r)
        for p in root.objects("products", required: false) ?? [] { read.product(p) }
        for p in root.objects("nonRenewingSubscriptions", required: false) ?? [] { read.nonRenewing(p) }
        for g in root.objects("subscriptionGroups", required: false) ?? [] { read.group(g) }
        if !root.has("products") && !root.has("subscriptionGroups") && !root.has("nonRenewingSubscriptions") {
            r.problem(
                "",
                "no products, nonRenewingSubscriptions or subscriptionGroups: is this a StoreKit configuration file?")
        } else {
            CatalogLoader.validate(products: read.products, paths: read.paths, reader: r)
        }
        let grace = xcodeGrace(root)
        try r.finish()
        var c = defaults
        // settings._billingGracePeriodEnabled: Xcode's switch for its test session's Billing Grace Period, off by
        // default (SKTestSession.billingGracePeriodIsEnabled). On, the team turned it on to test grace: the app has
        // it. Off says nothing of App Store Connect: cases draw it, and the notes say how to state it.
        switch grace {
        case false?: c.xcodeGraceOff = true
        case true?: _ = c.stateGrace("on")
        case nil: break
        }
        c.groups = read.groups
        c.products = read.products
        c.defaultedDurations = read.defaulted
        c.skipped = read.skipped
        // settings._applicationInternalID: the app's Apple ID, in a file Xcode synced with App Store Connect. Said,
        // not taken: backends set up for iapcheck's default id would refuse every artifact after an upgrade.
        if let id = appleId(root), id != c.appAppleId {
            c.skipped.append(
                "App Apple ID: the file names \(id) (settings._applicationInternalID, the app's Apple ID when Xcode synced it with App Store Connect); artifacts are signed for \(c.appAppleId) unless you give --app-apple-id \(id), as a backend configured like production expects"
            )
        }
        return c
    }

    /// `settings._applicationInternalID` as a positive number (Xcode writes it as a string of digits), or nil.
    static func appleId(_ root: StrictJSON.Object) -> Int64? {
        let value = root.object("settings", required: false)?.dict["_applicationInternalID"]
        let id = (value as? String).flatMap { Int64($0) } ?? (value as? NSNumber)?.int64Value
        return id.flatMap { $0 > 0 ? $0 : nil }
    }

    /// `settings._billingGracePeriodEnabled`, refused when it is not true or false (nil when absent).
    static func xcodeGrace(_ root: StrictJSON.Object) -> Bool? {
        guard let settings = root.object("settings", required: false), settings.has("_billingGracePeriodEnabled")
        else { return nil }
        return settings.bool("_billingGracePeriodEnabled")
    }

    /// What a file's products, groups and subscriptions add up to while they are read, each problem recorded with
    /// its key path.
    struct Reading {
        let reader: StrictJSON
        var products: [CatalogProduct] = []
        /// The key path of each product's id, for the catalog's own checks (duplicates, id shapes).
        var paths: [String] = []
        var groups: [SubscriptionGroup] = []
        /// Non-renewing subscriptions whose duration was assumed (the file gives none).
        var defaulted: Set<String> = []
        /// What the file holds that is not modelled, said to the user.
        var skipped: [String] = []

        /// A consumable or non-consumable of `products[]`.
        mutating func product(_ p: StrictJSON.Object) {
            let id = p.string("productID")
            let type = p.choice("type", ["Consumable", "NonConsumable"])
            let shareable = p.bool("familyShareable", required: false) ?? false
            guard let id, let type else { return }
            let kind: ProductKind = type == "Consumable" ? .consumable : .nonConsumable
            if shareable && kind == .consumable {
                reader.problem(p.keyPath("familyShareable"), "a consumable cannot be family-shareable")
            }
            paths.append(p.keyPath("productID"))
            products.append(CatalogProduct(id: id, kind: kind, familyShareable: shareable && kind == .nonConsumable))
        }

        /// A non-renewing subscription: Apple gives it no duration; the app decides it (docs/semantics.md#product-types).
        /// One month is assumed, and the run says so; an entitlements file's `nonRenewing` gives the real one.
        mutating func nonRenewing(_ p: StrictJSON.Object) {
            let id = p.string("productID")
            _ = p.choice("type", ["NonRenewingSubscription"], required: false)
            if p.bool("familyShareable", required: false) == true {
                reader.problem(
                    p.keyPath("familyShareable"),
                    "App Store Connect offers Family Sharing for auto-renewable subscriptions and non-consumables only")
            }
            guard let id else { return }
            paths.append(p.keyPath("productID"))
            products.append(CatalogProduct(id: id, kind: .nonRenewing, period: Period(1, .month)))
            defaulted.insert(id)
        }

        /// A subscription group and its subscriptions (at least one).
        mutating func group(_ g: StrictJSON.Object) {
            let gid = g.string("id")
            let name = g.string("name", required: false) ?? gid ?? "?"
            if let gid {
                if let why = CatalogLoader.idProblem(gid) { reader.problem(g.keyPath("id"), why) }
                groups.append(SubscriptionGroup(id: gid, name: name))
            }
            let subscriptions = g.objects("subscriptions") ?? []
            if g.has("subscriptions") && subscriptions.isEmpty {
                reader.problem(g.keyPath("subscriptions"), "a subscription group needs at least one subscription")
            }
            for s in subscriptions { subscription(s, group: gid) }
        }

        /// An auto-renewable subscription of group `gid`: its level, period, Family Sharing and offers.
        mutating func subscription(_ s: StrictJSON.Object, group gid: String?) {
            let id = s.string("productID")
            if let type = s.string("type", required: false), type != "RecurringSubscription" {
                reader.problem(
                    s.keyPath("type"),
                    "\"\(type)\" in a subscription group: only RecurringSubscription products belong there")
            }
            let level = s.int("groupNumber", range: 1...1000)
            let period = s.renewalPeriod("recurringSubscriptionPeriod")
            let shareable = s.bool("familyShareable", required: false) ?? false
            // Older files have one `introductoryOffer`; newer ones an `introductoryOffers` array (one per eligibility
            // rule). iapcheck models one introductory offer per product: the first.
            let intros = (s.objects("introductoryOffers", required: false) ?? []).compactMap { offer($0, idKey: nil) }
            let single = s.object("introductoryOffer", required: false).flatMap { offer($0, idKey: nil) }
            let intro = single ?? intros.first
            if single == nil && intros.count > 1 {
                skipped.append(
                    "\(id ?? "?"): introductoryOffers has \(intros.count) offers (one per eligibility rule or billing plan); the subscription is checked with the first"
                )
            }
            if let single, let first = intros.first, single != first {
                skipped.append(
                    "\(id ?? "?"): introductoryOffer and introductoryOffers[0] differ; the subscription is checked with introductoryOffer (\(single.discountType.rawValue) \(single.period.iso8601))"
                )
            }
            skipInstallmentPlans(s, id: id)
            let promos = (s.objects("adHocOffers", required: false) ?? []).compactMap { offer($0, idKey: "offerID") }
            let codes = (s.objects("codeOffers", required: false) ?? []).compactMap {
                offer($0, idKey: "referenceName")
            }
            let winBack = (s.objects("winbackOffers", required: false) ?? []).compactMap {
                offer($0, idKey: "offerID")
            }
            if let sg = s.string("subscriptionGroupID", required: false), let gid, sg != gid {
                reader.problem(
                    s.keyPath("subscriptionGroupID"), "\"\(sg)\" differs from the enclosing group id \"\(gid)\"")
            }
            guard let id, let level, let period, let gid else { return }
            paths.append(s.keyPath("productID"))
            products.append(
                CatalogProduct(
                    id: id, kind: .autoRenewable, groupId: gid, level: Int(level), period: period,
                    familyShareable: shareable, introductoryOffer: intro, promotionalOffers: promos,
                    offerCodes: codes, winBackOffers: winBack))
        }

        /// Xcode writes the ordinary plan (BILLED_UPFRONT) on every subscription; installment plans (a commitment
        /// billed monthly) are outside what iapcheck models: left out, and the run says so.
        mutating func skipInstallmentPlans(_ s: StrictJSON.Object, id: String?) {
            for (i, plan) in (s.objects("billingPlans", required: false) ?? []).enumerated() {
                if let type = plan.string("billingPlanType", required: false), type != "BILLED_UPFRONT" {
                    skipped.append(
                        "\(id ?? "?"): billingPlans[\(i)] (\(type), billed in installments) is not modelled; the subscription is checked as billed up front"
                    )
                }
            }
        }
    }

    static func offer(_ o: StrictJSON.Object, idKey: String?) -> OfferSpec? {
        let id = idKey.flatMap { o.string($0, required: false) } ?? o.string("internalID", required: false)
        let mode = o.choice("paymentMode", ["free", "payAsYouGo", "payUpFront"])
        let period = o.offerPeriod("subscriptionPeriod")
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
