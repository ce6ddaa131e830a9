extension Catalog {
    /// The built-in catalog: two subscription groups with several levels and durations (so every kind of product
    /// change happens), offers of every type, a consumable, a family-shareable non-consumable and a non-renewing
    /// subscription. Grace is on (16 days, all renewals); the generator varies it per case.
    public static let standard = Catalog(
        bundleId: "com.example.iapcheck",
        appAppleId: 1_234_567_890,
        environment: .production,
        gracePeriod: GracePeriodSetting(days: 16, eligibility: .allRenewals),
        groups: [
            SubscriptionGroup(id: "21000001", name: "Pro"),
            SubscriptionGroup(id: "21000002", name: "Storage"),
        ],
        products: [
            CatalogProduct(
                id: "pro.yearly", kind: .autoRenewable, groupId: "21000001", level: 1, period: Period(1, .year),
                familyShareable: true,
                introductoryOffer: OfferSpec(discountType: .freeTrial, period: Period(1, .month)),
                promotionalOffers: [
                    OfferSpec(id: "pro.yearly.promo", discountType: .payUpFront, period: Period(1, .year))
                ],
                offerCodes: [OfferSpec(id: "PRO-CODE", discountType: .freeTrial, period: Period(3, .month))],
                winBackOffers: [OfferSpec(id: "pro.winback", discountType: .payUpFront, period: Period(6, .month))]),
            CatalogProduct(
                id: "pro.monthly", kind: .autoRenewable, groupId: "21000001", level: 1, period: Period(1, .month),
                familyShareable: true,
                introductoryOffer: OfferSpec(discountType: .freeTrial, period: Period(1, .week)),
                promotionalOffers: [
                    OfferSpec(id: "pro.monthly.promo", discountType: .payAsYouGo, period: Period(1, .month), periods: 2)
                ],
                offerCodes: [OfferSpec(id: "PRO-MONTH-CODE", discountType: .payUpFront, period: Period(2, .month))]),
            CatalogProduct(
                id: "pro.monthly.alt", kind: .autoRenewable, groupId: "21000001", level: 1, period: Period(1, .month),
                familyShareable: true),
            CatalogProduct(
                id: "plus.monthly", kind: .autoRenewable, groupId: "21000001", level: 2, period: Period(1, .month),
                familyShareable: true,
                introductoryOffer: OfferSpec(discountType: .payAsYouGo, period: Period(1, .month), periods: 2)),
            // A yearly product below the top level: moving from it to a monthly one of a higher level is an
            // upgrade after which the upgraded-from transaction still has the later expiresDate.
            CatalogProduct(
                id: "plus.yearly", kind: .autoRenewable, groupId: "21000001", level: 2, period: Period(1, .year),
                familyShareable: true),
            CatalogProduct(
                id: "plus.weekly", kind: .autoRenewable, groupId: "21000001", level: 2, period: Period(1, .week),
                introductoryOffer: OfferSpec(discountType: .payUpFront, period: Period(1, .month))),
            CatalogProduct(
                id: "basic.monthly", kind: .autoRenewable, groupId: "21000001", level: 3, period: Period(1, .month)),
            CatalogProduct(
                id: "storage.monthly", kind: .autoRenewable, groupId: "21000002", level: 1, period: Period(1, .month),
                introductoryOffer: OfferSpec(discountType: .freeTrial, period: Period(3, .day))),
            CatalogProduct(
                id: "storage.yearly", kind: .autoRenewable, groupId: "21000002", level: 1, period: Period(1, .year)),
            CatalogProduct(id: "coins.100", kind: .consumable),
            CatalogProduct(id: "lifetime.unlock", kind: .nonConsumable, familyShareable: true),
            CatalogProduct(id: "season.pass", kind: .nonRenewing, period: Period(3, .month)),
        ])
}
