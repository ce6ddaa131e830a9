import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSimulator
import PropertyEngine
import Testing

/// Without `--catalog`, each case draws its own catalog: product shapes one fixed catalog lacks are generated, the
/// drawn catalogs are ones App Store Connect could hold, and a pinned catalog stays pinned.
@Suite struct DrawnCatalogTests {
    static let appleDurations: Set<Period> = [
        Period(1, .week), Period(1, .month), Period(2, .month), Period(3, .month), Period(6, .month), Period(1, .year),
    ]

    static func draws(_ n: Int, base: Catalog = .standard) -> [Catalog] {
        (0..<n).map { CatalogGenerator(base: base).draw(ChoiceSource(seed: SplitMix64.derive(77, UInt64($0)))) }
    }

    @Test func drawnCatalogsAreWellFormed() {
        for (i, cat) in Self.draws(400).enumerated() {
            #expect(Set(cat.products.map(\.id)).count == cat.products.count, "draw \(i): duplicate product ids")
            #expect(cat.bundleId == Catalog.standard.bundleId && cat.environment == Catalog.standard.environment)
            #expect(!cat.products.isEmpty)
            for p in cat.products where p.kind == .autoRenewable {
                #expect(cat.groups.contains { $0.id == p.groupId }, "draw \(i): \(p.id) has no group")
                #expect(p.level.map { $0 >= 1 } == true)
                #expect(
                    p.period.map { Self.appleDurations.contains($0) } == true,
                    "draw \(i): \(p.id) period \(String(describing: p.period))")
                let offers =
                    [p.introductoryOffer].compactMap { $0 } + p.promotionalOffers + p.offerCodes + p.winBackOffers
                for o in offers where o.discountType == .payAsYouGo {
                    #expect(
                        o.period == p.period,
                        "draw \(i): pay-as-you-go offer of \(p.id) is not in the product's periods")
                    #expect(
                        o.period.approximateDays * o.periods <= 366,
                        "draw \(i): pay-as-you-go offer of \(p.id) lasts over a year")
                }
                for o in offers where o.discountType == .payUpFront {
                    #expect(
                        [.month, .year].contains(o.period.unit),
                        "draw \(i): pay-up-front offer of \(p.id) lasts \(o.period)")
                }
            }
            for g in cat.groups { #expect(!cat.products(inGroup: g.id).isEmpty, "draw \(i): empty group \(g.id)") }
        }
    }

    /// The draws together allow a product change in each of the nine level × duration directions (the built-in
    /// catalog alone allows them too, so the test asks it of the drawn catalogs only), vary the shapes, and keep
    /// the built-in catalog as one of them.
    @Test func drawnCatalogsCoverEveryDirectionAndShape() {
        let all = Self.draws(400)
        let drawn = all.filter { $0 != .standard }
        let base = all.count - drawn.count
        #expect(base > 120 && base < 280, "built-in catalog drawn \(base) times of 400")
        var directions: Set<String> = []
        for cat in drawn {
            for g in cat.groups {
                let ps = cat.products(inGroup: g.id)
                for p in ps {
                    for q in ps where q.id != p.id {
                        if let d = ProductMove(from: p.id, to: q.id).direction(in: cat) { directions.insert(d) }
                    }
                }
            }
        }
        #expect(
            directions == Set(ProductMove.directions), "missing: \(Set(ProductMove.directions).subtracting(directions))"
        )
        #expect(Set(drawn.map(\.groups.count)) == [1, 2, 3])
        #expect(drawn.contains { $0.products.contains { $0.kind == .nonRenewing } })
        #expect(drawn.contains { !$0.products.contains { $0.kind == .consumable } })
        #expect(drawn.contains { $0.products.contains { !$0.winBackOffers.isEmpty } })
        #expect(drawn.contains { $0.products.contains { $0.kind == .autoRenewable && !$0.familyShareable } })
    }

    /// A catalog with one subscription and nothing else: pinned, no case has a product change; drawn, cases
    /// change products and the case carries the catalog it was generated with, the same on every regeneration.
    @Test func aRunDrawsCatalogsUnlessOneIsPinned() {
        let single = Catalog(
            bundleId: "com.example.single", appAppleId: 7, environment: .production, gracePeriod: nil,
            groups: [SubscriptionGroup(id: "1", name: "Only")],
            products: [
                CatalogProduct(
                    id: "only.monthly", kind: .autoRenewable, groupId: "1", level: 1, period: Period(1, .month))
            ])
        var o = CheckOptions()
        o.cases = 150
        o.signed = false
        o.catalog = single
        let pinned = Checker(options: o, validator: ReferenceValidator())
        // (the grace setting is drawn per case in either mode)
        #expect((0..<30).allSatisfy { pinned.generate(caseIndex: $0).0.config.catalog.products == single.products })
        #expect(pinned.run().coverage.productChanges.values.reduce(0, +) == 0)

        o.drawsCatalogs = true
        let drawing = Checker(options: o, validator: ReferenceValidator())
        let catalogs = (0..<30).map { drawing.generate(caseIndex: $0).0.config.catalog }
        #expect(Set(catalogs.map { $0.products.map(\.id) }).count > 5)
        #expect(catalogs.allSatisfy { $0.bundleId == "com.example.single" })
        #expect(drawing.generate(caseIndex: 11).0.config.catalog == catalogs[11])
        let report = drawing.run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(report.coverage.productChanges.values.reduce(0, +) > 0)
    }
}
