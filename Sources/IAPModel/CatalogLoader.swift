import Foundation
import IAPEncoding

/// Reads a catalog from disk: iapcheck's own catalog JSON, or an Xcode StoreKit configuration file (`.storekit`).
///
/// Both are decoded strictly; every problem is reported with the file and the key. A `.storekit` file has no
/// bundle id, App Apple ID or grace setting, so those come from `defaults` (the command line can override them).
public enum CatalogLoader {
    public static func load(path: String, defaults: Catalog = .standard) throws(ConfigError) -> Catalog {
        let data = try StrictJSON.readFile(path)
        let isStoreKit = path.hasSuffix(".storekit") || looksLikeStoreKit(data)
        return isStoreKit
            ? try StoreKitConfiguration.catalog(from: data, file: path, defaults: defaults)
            : try decodeNative(data, file: path)
    }

    /// Whether the file at `path` is read as an Xcode StoreKit configuration.
    public static func isStoreKit(path: String) -> Bool {
        path.hasSuffix(".storekit")
            || ((try? StrictJSON.readFile(path)).map(looksLikeStoreKit) ?? false)
    }

    static func looksLikeStoreKit(_ data: Data) -> Bool {
        guard let keys = StrictJSON.topLevelKeys(data) else { return false }
        return keys.contains("subscriptionGroups") && !keys.contains("bundleId")
    }

    /// iapcheck's catalog format: the JSON encoding of ``Catalog`` (see `docs/catalog.md`).
    public static func decodeNative(_ data: Data, file: String) throws(ConfigError) -> Catalog {
        let r = StrictJSON(file: file)
        let root = try r.root(data)
        let bundleId = root.string("bundleId")
        if let b = bundleId, let why = bundleIdProblem(b) { r.problem("bundleId", why) }
        let appAppleId = root.int("appAppleId", range: 1...Int64.max)
        let env = root.choice("environment", Environment.known.map(\.rawValue))
        var grace: GracePeriodSetting?
        // Present (null for an app without grace) states the app's setting; absent lets each case draw one.
        let graceStated = root.dict["gracePeriod"] != nil
        if let g = root.object("gracePeriod", required: false) {
            let days = g.int("days", range: 1...28)
            let elig = g.choice("eligibility", GracePeriodSetting.Eligibility.allCases.map(\.rawValue))
            g.rejectUnknownKeys()
            if let days, let elig { grace = GracePeriodSetting(days: Int(days), eligibility: .init(rawValue: elig)!) }
        }
        var groups: [SubscriptionGroup] = []
        for g in root.objects("groups") ?? [] {
            let id = g.string("id"), name = g.string("name")
            g.rejectUnknownKeys()
            if let id, let name { groups.append(SubscriptionGroup(id: id, name: name)) }
        }
        var products: [CatalogProduct] = []
        var paths: [String] = []
        for p in root.objects("products") ?? [] {
            let id = p.string("id")
            let kind = p.choice("kind", ProductKind.allCases.map(\.rawValue)).flatMap(ProductKind.init(rawValue:))
            let groupId = p.string("groupId", required: kind == .autoRenewable)
            let level = p.int("level", required: kind == .autoRenewable, range: 1...1000)
            let period =
                kind == .autoRenewable ? p.renewalPeriod("period") : p.period("period", required: kind == .nonRenewing)
            let shareable = p.bool("familyShareable", required: false) ?? false
            let intro = p.object("introductoryOffer", required: false).flatMap { offer($0, needsId: false) }
            let promos = (p.objects("promotionalOffers", required: false) ?? []).compactMap { offer($0, needsId: true) }
            let codes = (p.objects("offerCodes", required: false) ?? []).compactMap { offer($0, needsId: true) }
            let winBack = (p.objects("winBackOffers", required: false) ?? []).compactMap { offer($0, needsId: true) }
            p.rejectUnknownKeys()
            if let groupId, !groups.contains(where: { $0.id == groupId }) {
                r.problem(p.keyPath("groupId"), "no group with id \"\(groupId)\" in groups")
            }
            if shareable, kind == .consumable || kind == .nonRenewing {
                r.problem(
                    p.keyPath("familyShareable"),
                    "Family Sharing applies only to non-consumables and auto-renewable subscriptions")
            }
            if let id, let kind {
                paths.append(p.keyPath("id"))
                products.append(
                    CatalogProduct(
                        id: id, kind: kind, groupId: kind == .autoRenewable ? groupId : nil,
                        level: kind == .autoRenewable ? level.map(Int.init) : nil, period: period,
                        familyShareable: shareable, introductoryOffer: intro, promotionalOffers: promos,
                        offerCodes: codes,
                        winBackOffers: winBack))
            }
        }
        let entitlements = root.has("entitlements") ? self.entitlements(root, products: products) : nil
        root.rejectUnknownKeys()
        validate(products: products, paths: paths, reader: r)
        try r.finish()
        var c = Catalog(
            bundleId: bundleId!, appAppleId: appAppleId!, environment: Environment(rawValue: env!), gracePeriod: grace,
            groups: groups, products: products, entitlements: entitlements)
        c.graceChoice = graceStated ? .declared : .varies
        return c
    }

    /// `catalog` with the entitlements of an entitlements file (`{"entitlements": [...]}`, the same key as in
    /// iapcheck's catalog format): how a `.storekit` catalog, which has no such notion, gets them (`--entitlements`).
    public static func addingEntitlements(path: String, to catalog: Catalog) throws(ConfigError) -> Catalog {
        let r = StrictJSON(file: path)
        let root = try r.root(try StrictJSON.readFile(path))
        var out = catalog
        if root.has("entitlements") || !root.has("nonRenewing") {
            out.entitlements = entitlements(root, products: catalog.products)
        }
        addingDurations(root, to: &out)
        root.rejectUnknownKeys()
        try r.finish()
        return out
    }

    /// The `entitlements` key: a list of `{"id", "products"}`, each id once, each product a non-consumable or a
    /// subscription of the catalog, listed once.
    static func entitlements(_ root: StrictJSON.Object, products: [CatalogProduct]) -> [CatalogEntitlement] {
        var out: [CatalogEntitlement] = []
        var seen: [String: String] = [:]
        for e in root.objects("entitlements") ?? [] {
            let id = e.string("id"), ids = e.strings("products")
            e.rejectUnknownKeys()
            guard let id, let ids else { continue }
            if id.isEmpty { e.reader.problem(e.keyPath("id"), "an entitlement id cannot be empty") }
            if let earlier = seen[id] {
                e.reader.problem(
                    e.keyPath("id"), "entitlement id \"\(id)\" appears more than once (first at \(earlier))")
            }
            seen[id] = seen[id] ?? e.keyPath("id")
            if ids.isEmpty { e.reader.problem(e.keyPath("products"), "an entitlement needs at least one product") }
            var listed: Set<String> = []
            for (i, pid) in ids.enumerated() {
                let at = "\(e.keyPath("products"))[\(i)]"
                if !listed.insert(pid).inserted { e.reader.problem(at, "product \"\(pid)\" is listed twice") }
                guard let p = products.first(where: { $0.id == pid }) else {
                    e.reader.problem(at, "no product with id \"\(pid)\" in the catalog")
                    continue
                }
                if p.kind == .consumable {
                    e.reader.problem(at, "\"\(pid)\" is a consumable: it is spent, it unlocks no entitlement")
                }
            }
            out.append(CatalogEntitlement(id: id, products: ids))
        }
        return out
    }

    static func offer(_ o: StrictJSON.Object, needsId: Bool) -> OfferSpec? {
        let id = o.string("id", required: needsId)
        let dt = o.choice("discountType", ["FREE_TRIAL", "PAY_AS_YOU_GO", "PAY_UP_FRONT"])
        let period = o.offerPeriod("period")
        let periods = o.int("periods", required: false, range: 1...12) ?? 1
        o.rejectUnknownKeys()
        guard let dt, let period else { return nil }
        return OfferSpec(id: id, discountType: OfferDiscountType(rawValue: dt), period: period, periods: Int(periods))
    }

    /// Checks that apply to every catalog source: ids App Store Connect would take, each once; at least one product.
    /// Checks the catalog as a whole; `paths[i]` is where product `i`'s id was read (for the problem's key).
    static func validate(products: [CatalogProduct], paths: [String], reader r: StrictJSON) {
        var first: [String: String] = [:]
        for (i, p) in products.enumerated() {
            let path = i < paths.count ? paths[i] : "products"
            if let why = idProblem(p.id) { r.problem(path, why) }
            if let earlier = first[p.id] {
                r.problem(path, "product id \"\(p.id)\" appears more than once (first at \(earlier))")
            } else {
                first[p.id] = path
            }
        }
        // Products listed but each refused already says why: "no products" on top would read as an empty file.
        if products.isEmpty && r.problems.isEmpty { r.problem("products", "the catalog has no products") }
    }

    /// Why App Store Connect would refuse `id` as a product or group id: empty, or holding a control character (a
    /// NUL, a newline); nil when it would take it.
    /// Why `id` cannot be an app's bundle id (empty, blank, or holding white space or a control character: App Store
    /// Connect takes letters, digits, hyphens and periods), or nil.
    public static func bundleIdProblem(_ id: String) -> String? {
        if id.trimmingCharacters(in: .whitespaces).isEmpty { return "a bundle id cannot be empty" }
        if id.unicodeScalars.contains(where: { CharacterSet.whitespacesAndNewlines.contains($0) }) {
            return "\(id.debugDescription) holds white space: a bundle id is letters, digits, hyphens and periods"
        }
        return idProblem(id)
    }

    static func idProblem(_ id: String) -> String? {
        if id.isEmpty { return "an id cannot be empty" }
        if id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "\(id.debugDescription) holds a control character"
        }
        return nil
    }

    /// `catalog` with the non-renewing durations of a `nonRenewing` key (`{"product id": "P3M"}`): a `.storekit` file
    /// has no duration for a non-renewing subscription (the app decides it), so an entitlements file gives them.
    static func addingDurations(_ root: StrictJSON.Object, to catalog: inout Catalog) {
        guard let o = root.object("nonRenewing", required: false) else { return }
        for id in o.dict.keys.sorted() {
            guard let period = o.period(id) else { continue }
            guard let i = catalog.products.firstIndex(where: { $0.id == id }) else {
                o.problem(o.keyPath(id), "no product with id \"\(id)\" in the catalog")
                continue
            }
            guard catalog.products[i].kind == .nonRenewing else {
                o.problem(o.keyPath(id), "\"\(id)\" is not a non-renewing subscription")
                continue
            }
            catalog.products[i].period = period
            catalog.defaultedDurations.remove(id)
        }
    }
}
