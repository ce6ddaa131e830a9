import IAPConformance
import IAPModel
import IAPReference
import IAPSimulator
import IAPTesting
import PropertyEngine
import Testing

/// Histories stay inside the test certificates' validity: their artifacts are signed by the test PKI, and one signed
/// after it would be refused by any correct verifier while the oracle calls it genuine (a false failure).
@Suite struct HorizonTests {
    /// Offers far longer than App Store Connect sells (a catalog file with them is refused, but a catalog made in code
    /// is not): no delivery after the generator's horizon, and the reference passes. Without the horizon, renewals
    /// after a twenty-year trial were signed in 2049, past the test intermediate.
    @Test func offersOfDecadesKeepEveryHistoryInsideTheTestCertificates() {
        var catalog = Catalog.standard
        for i in catalog.products.indices where catalog.products[i].kind == .autoRenewable {
            catalog.products[i].introductoryOffer =
                i % 2 == 0
                ? OfferSpec(discountType: .payAsYouGo, period: Period(10, .year), periods: 3)
                : OfferSpec(discountType: .freeTrial, period: Period(20, .year))
        }
        var latest: Millis = 0
        for seed in UInt64(1)...400 {
            let (c, _) = Fixtures.generator(catalog: catalog).generate(.entitlementAgreement, .init(seed: seed))
            for case .deliver(let d) in c.steps { latest = max(latest, d.now) }
        }
        #expect(latest > HistoryGenerator.horizon - 3 * 365 * CivilTime.msPerDay, "the offers reach the horizon")
        #expect(latest <= HistoryGenerator.horizon + 90 * CivilTime.msPerDay, "\(CivilTime.iso8601(latest))")
        var o = CheckOptions()
        (o.cases, o.seed, o.catalog) = (300, 1, catalog)
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(report.failure == nil, "\(report.failure?.explanation ?? "")")
    }
}
