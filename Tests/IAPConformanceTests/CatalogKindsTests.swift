import Foundation
import IAPConformance
import IAPModel
import IAPReference
import Testing

/// `certify` and `pki sample` work on every catalog `check` accepts, including catalogs without any
/// auto-renewable subscription (3 of 32 real .storekit files are like that).
@Suite struct CatalogKindsTests {
    static func catalog(_ kind: ProductKind) -> Catalog {
        Catalog(
            bundleId: "com.example.only", appAppleId: 42, environment: .production, gracePeriod: nil, groups: [],
            products: [
                CatalogProduct(
                    id: "only.\(kind.rawValue)", kind: kind, period: kind == .nonRenewing ? Period(1, .month) : nil)
            ])
    }

    @Test(arguments: [ProductKind.nonConsumable, .consumable, .nonRenewing])
    func theForgeryProbeRunsOnACatalogWithoutSubscriptions(_ kind: ProductKind) {
        let results = CertificationSuite.probeForgeries(
            ReferenceValidator(), catalog: Self.catalog(kind), policy: .default)
        #expect(results.count == ForgeryClass.allCases.count)
        let failed = results.filter { !$0.holds }.map { "\($0.name): \($0.reason ?? "")" }
        #expect(failed.isEmpty, "\(failed)")
    }

    /// A probe that could not be made counts against the validator only as "not probed", never as a crash.
    @Test func anEmptyCatalogIsNotProbed() {
        var c = Self.catalog(.consumable)
        c.products = []
        let results = CertificationSuite.probeForgeries(ReferenceValidator(), catalog: c, policy: .default)
        #expect(results.allSatisfy { $0.reason?.contains("not probed") == true })
    }
}
