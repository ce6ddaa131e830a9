import Foundation
import IAPConformance
import IAPModel
import Testing

/// The app's catalog: one subscription group with two levels (premium above pro), each monthly and yearly, with free
/// trials and other offers, a lifetime unlock, Family Sharing, and a 16-day Billing Grace Period for paid renewals.
/// iapcheck generates histories of this catalog (purchases, renewals, upgrades, downgrades, billing failures, grace,
/// refunds, family sharing, restores, …) and asks the service about them at and around every boundary.
let catalog = Catalog(
    bundleId: "com.example.notes", appAppleId: 1_234_567_890, environment: .production,
    gracePeriod: GracePeriodSetting(days: 16, eligibility: .paidRenewalsOnly),
    groups: [SubscriptionGroup(id: "21000001", name: "Notes")],
    products: [
        CatalogProduct(
            id: "premium.yearly", kind: .autoRenewable, groupId: "21000001", level: 1, period: Period(1, .year),
            familyShareable: true,
            offerCodes: [OfferSpec(id: "PREMIUM-3M", discountType: .freeTrial, period: Period(3, .month))],
            winBackOffers: [OfferSpec(id: "premium.winback", discountType: .payUpFront, period: Period(6, .month))]),
        CatalogProduct(
            id: "premium.monthly", kind: .autoRenewable, groupId: "21000001", level: 1, period: Period(1, .month),
            familyShareable: true, introductoryOffer: OfferSpec(discountType: .freeTrial, period: Period(1, .week))),
        CatalogProduct(
            id: "pro.yearly", kind: .autoRenewable, groupId: "21000001", level: 2, period: Period(1, .year),
            introductoryOffer: OfferSpec(discountType: .freeTrial, period: Period(1, .month))),
        CatalogProduct(
            id: "pro.monthly", kind: .autoRenewable, groupId: "21000001", level: 2, period: Period(1, .month),
            familyShareable: true,
            promotionalOffers: [
                OfferSpec(id: "pro.promo", discountType: .payAsYouGo, period: Period(1, .month), periods: 2)
            ]),
        CatalogProduct(id: "lifetime", kind: .nonConsumable, familyShareable: true),
    ],
    entitlements: [
        CatalogEntitlement(
            id: "pro", products: ["pro.monthly", "pro.yearly", "premium.monthly", "premium.yearly", "lifetime"]),
        CatalogEntitlement(id: "premium", products: ["premium.monthly", "premium.yearly"]),
    ])

/// 300 cases by default; `IAPCHECK_CASES=5000 IAPCHECK_SEED=7 swift test` for a longer run or another seed.
func options() -> CheckOptions {
    var o = CheckOptions()
    let env = ProcessInfo.processInfo.environment
    o.cases = env["IAPCHECK_CASES"].flatMap(Int.init) ?? 300
    o.seed = env["IAPCHECK_SEED"].flatMap(UInt64.init) ?? 1
    o.signed = false  // decoded facts: the service's logic, without cryptography
    o.catalog = catalog
    return o
}

/// A failure as a person reads it: the case, what differed, and the shrunk history as a timeline.
func explain(_ f: FailureReport) -> Comment { Comment(rawValue: f.explanation) }

@Test func serviceAgreesWithTheOracle() {
    let report = Checker(options: options(), validator: ServiceAdapter()).run()
    if let failure = report.failure { Issue.record(explain(failure)) }
    #expect(report.passed == report.cases)
}

@Test func harnessCatchesAServiceThatIgnoresRefunds() throws {
    let report = Checker(options: options(), validator: ServiceAdapter(ignoresRevocation: true)).run()
    let failure = try #require(report.failure, "a service that keeps granting refunded purchases must fail")
    let discrepancy = try #require(failure.discrepancy, explain(failure))
    #expect(discrepancy.differences.contains { $0.hasPrefix("entitlement ") }, explain(failure))
}
