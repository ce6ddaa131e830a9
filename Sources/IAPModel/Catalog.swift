/// The app's products as the App Store knows them: what the simulator sells, what the oracle and validators
/// need to interpret transactions (types, groups, levels), and the app-level settings Apple applies.
public struct Catalog: Codable, Hashable, Sendable {
    public var bundleId: String
    public var appAppleId: Int64
    public var environment: Environment
    /// Billing Grace Period setting of the app; nil when grace is off.
    public var gracePeriod: GracePeriodSetting?
    public var groups: [SubscriptionGroup]
    public var products: [CatalogProduct]
    /// What the app grants, each unlocked by several products (``CatalogEntitlement``); nil when the catalog
    /// declares none (then it is not encoded, and validators see the catalog format of protocol v1).
    public var entitlements: [CatalogEntitlement]?
    /// Non-renewing products whose duration the file did not give (a `.storekit` file has none): iapcheck assumed
    /// one month. Not part of the catalog's identity: only for the notes a run prints.
    public var defaultedDurations: Set<String> = []
    /// What reading the file dropped or assumed, for the run's header and the certification report.
    public var notes: [String] {
        var out = defaultedDurations.sorted().map {
            "\($0.debugDescription) is a non-renewing subscription without a duration in the file: one month assumed (give it in the --entitlements file: {\"nonRenewing\": {\"\($0)\": \"P3M\"}})"
        }
        out += skipped
        // Grace applies to auto-renewable subscriptions only: a catalog without any has nothing to say of it.
        guard products.contains(where: { $0.kind == .autoRenewable }) else { return out }
        if graceChoice == .variesWhileOn {
            out.append(
                "Billing Grace Period is on, with no length given: each case draws 3, 16 or 28 days, for all renewals or paid ones only"
            )
        }
        if graceChoice == .declared && gracePeriod == nil {
            out.append("Billing Grace Period is off: no case has grace")
        }
        if graceChoice == .varies && xcodeGraceOff {
            out.append(
                "settings._billingGracePeriodEnabled is false, Xcode's default for its test session, which says nothing of App Store Connect: each case draws grace off or on; give --grace off if the app has no Billing Grace Period there, --grace on if it has one"
            )
        }
        return out
    }

    /// The `.storekit` file's `settings._billingGracePeriodEnabled` is false: Xcode's test-session default
    /// (`SKTestSession.billingGracePeriodIsEnabled`), not the app's setting in App Store Connect. Only for the notes.
    public var xcodeGraceOff = false

    /// `--grace`: the app's Billing Grace Period as the user states it (docs/catalog.md#billing-grace-period): `off`
    /// (no case has grace), `on` (each case draws a setting with grace), `drawn` (each case draws off or on).
    public mutating func stateGrace(_ word: String) -> Bool {
        xcodeGraceOff = false
        switch word {
        case "off": (gracePeriod, graceChoice) = (nil, .declared)
        case "on":
            gracePeriod = gracePeriod ?? GracePeriodSetting(days: 16, eligibility: .allRenewals)
            graceChoice = .variesWhileOn
        case "drawn":
            gracePeriod = gracePeriod ?? GracePeriodSetting(days: 16, eligibility: .allRenewals)
            graceChoice = .varies
        default: return false
        }
        return true
    }
    /// Items of the file that were left out, each with why.
    public var skipped: [String] = []
    /// How the cases of a run set the app's grace setting. Not part of the catalog's identity (a case's catalog
    /// carries the setting it drew); the run's identity names it.
    public var graceChoice: GraceChoice = .varies

    enum CodingKeys: String, CodingKey {
        case bundleId, appAppleId, environment, gracePeriod, groups, products, entitlements
    }

    public static func == (a: Catalog, b: Catalog) -> Bool {
        a.bundleId == b.bundleId && a.appAppleId == b.appAppleId && a.environment == b.environment
            && a.gracePeriod == b.gracePeriod && a.groups == b.groups && a.products == b.products
            && a.entitlements == b.entitlements
    }

    public func hash(into h: inout Hasher) {
        h.combine(bundleId)
        h.combine(appAppleId)
        h.combine(environment)
        h.combine(gracePeriod)
        h.combine(groups)
        h.combine(products)
        h.combine(entitlements)
    }

    public init(
        bundleId: String, appAppleId: Int64, environment: Environment, gracePeriod: GracePeriodSetting?,
        groups: [SubscriptionGroup], products: [CatalogProduct], entitlements: [CatalogEntitlement]? = nil
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.gracePeriod = gracePeriod
        self.groups = groups
        self.products = products
        self.entitlements = entitlements
    }

    public func product(_ id: String) -> CatalogProduct? { products.first { $0.id == id } }

    public func products(inGroup group: String) -> [CatalogProduct] {
        products.filter { $0.groupId == group }
    }
}

/// A subscription group: at most one active subscription per group and person.
public struct SubscriptionGroup: Codable, Hashable, Sendable {
    public var id: String
    public var name: String
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// Where a run's grace setting comes from. App Store Connect sets Billing Grace Period per app (on or off, 3, 16 or
/// 28 days, for all renewals or paid ones only); a renewal info names its end (`gracePeriodExpiresDate`) whatever the
/// setting, so a validator that reads the date is right under every one, and one that does not is wrong only
/// where the app has grace. A catalog that states the app's setting gets it; one that does not gets each case's own.
public enum GraceChoice: String, Sendable {
    /// Not stated: each case draws off, or one of the settings App Store Connect offers.
    case varies
    /// On, length not stated (a `.storekit` file's setting): each case draws one of the settings with grace.
    case variesWhileOn = "varies-while-on"
    /// Stated (the catalog's `gracePeriod`, or off): every case has it.
    case declared
}

/// The app's Billing Grace Period configuration (docs/semantics.md#grace-period).
public struct GracePeriodSetting: Codable, Hashable, Sendable {
    public enum Eligibility: String, Codable, Sendable, CaseIterable {
        /// "only existing paid renewals": not after a free offer converting to paid.
        case paidRenewalsOnly = "paid-renewals-only"
        /// "all subscription renewals", including free offers converting to paid.
        case allRenewals = "all-renewals"
    }
    /// 3, 16 or 28 (weekly subscriptions are capped at 6).
    public var days: Int
    public var eligibility: Eligibility
    public init(days: Int, eligibility: Eligibility) {
        self.days = days
        self.eligibility = eligibility
    }

    /// Grace length for a product of the given period; weekly subscriptions get at most 6 days.
    public func days(forPeriod period: Period) -> Int {
        period.approximateDays <= 7 ? min(days, 6) : days
    }
}

/// The kind of product, as a catalog names it (the transaction's `type` carries Apple's spelling).
public enum ProductKind: String, Codable, Hashable, Sendable, CaseIterable {
    case autoRenewable = "auto-renewable"
    case nonConsumable = "non-consumable"
    case consumable = "consumable"
    case nonRenewing = "non-renewing"

    public var wireType: ProductType {
        switch self {
        case .autoRenewable: .autoRenewable
        case .nonConsumable: .nonConsumable
        case .consumable: .consumable
        case .nonRenewing: .nonRenewing
        }
    }

    public init?(wireType: ProductType) {
        guard let k = Self.allCases.first(where: { $0.wireType == wireType }) else { return nil }
        self = k
    }
}

/// One product of the catalog.
public struct CatalogProduct: Codable, Hashable, Sendable {
    public var id: String
    public var kind: ProductKind
    /// Subscription group (auto-renewable only).
    public var groupId: String?
    /// Level of service in the group; 1 is the highest (auto-renewable only).
    public var level: Int?
    /// Renewal period (auto-renewable), or the developer-defined duration of a non-renewing subscription.
    public var period: Period?
    public var familyShareable: Bool
    public var introductoryOffer: OfferSpec?
    public var promotionalOffers: [OfferSpec]
    public var offerCodes: [OfferSpec]
    public var winBackOffers: [OfferSpec]

    public init(
        id: String, kind: ProductKind, groupId: String? = nil, level: Int? = nil, period: Period? = nil,
        familyShareable: Bool = false, introductoryOffer: OfferSpec? = nil, promotionalOffers: [OfferSpec] = [],
        offerCodes: [OfferSpec] = [], winBackOffers: [OfferSpec] = []
    ) {
        self.id = id
        self.kind = kind
        self.groupId = groupId
        self.level = level
        self.period = period
        self.familyShareable = familyShareable
        self.introductoryOffer = introductoryOffer
        self.promotionalOffers = promotionalOffers
        self.offerCodes = offerCodes
        self.winBackOffers = winBackOffers
    }
}

/// A subscription offer: its payment mode and the length of one discounted period.
public struct OfferSpec: Codable, Hashable, Sendable {
    /// Offer identifier (promotional offers, offer codes, win-back); nil for introductory offers.
    public var id: String?
    public var discountType: OfferDiscountType
    /// Length of one offer period. For a free trial this is the whole trial.
    public var period: Period
    /// Number of periods the offer lasts (pay-as-you-go can span several).
    public var periods: Int

    public init(id: String? = nil, discountType: OfferDiscountType, period: Period, periods: Int = 1) {
        self.id = id
        self.discountType = discountType
        self.period = period
        self.periods = periods
    }
}

extension Catalog {
    /// The product a one-purchase probe uses (the certify forgery probe, `pki sample`): an auto-renewable
    /// subscription when the catalog has one, else a non-renewing subscription, a non-consumable, a consumable.
    public var probeProduct: CatalogProduct? {
        for kind in [ProductKind.autoRenewable, .nonRenewing, .nonConsumable, .consumable] {
            if let p = products.first(where: { $0.kind == kind }) { return p }
        }
        return nil
    }

    /// A genuine first purchase of `product` at `t` by `user`, as Apple signs it: a subscription carries its group
    /// and (auto-renewable only) an `expiresDate`; one-time products carry neither.
    public func probeTransaction(of product: CatalogProduct, at t: Millis, user: String) -> JWSTransactionDecodedPayload
    {
        let renews = product.kind == .autoRenewable
        return JWSTransactionDecodedPayload(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001",
            webOrderLineItemId: renews ? "2000000000000002" : nil, bundleId: bundleId, productId: product.id,
            subscriptionGroupIdentifier: renews ? product.groupId : nil, purchaseDate: t, originalPurchaseDate: t,
            expiresDate: renews ? product.period?.added(to: t) : nil, quantity: 1, type: product.kind.wireType,
            appAccountToken: user, inAppOwnershipType: .purchased, signedDate: t, environment: environment,
            transactionReason: .purchase)
    }
}
