import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSimulator
import IAPTesting
import Testing

/// A run's "not exercised" line lists only the scenario families its catalog allows: a catalog without a
/// non-renewing subscription is not told to run more cases to buy one. The rule must never call impossible a family
/// that cases of the catalog make (that would hide a blind spot), which the sweep below checks over catalogs of
/// many shapes.
@Suite struct PossibleFamiliesTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func native(_ products: String, grace: String? = nil, environment: String = "Production") throws -> Catalog {
        let member = grace.map { "\"gracePeriod\": \($0)," } ?? ""
        let text = """
            {"bundleId": "com.example.app", "appAppleId": 1234567890, "environment": "\(environment)", \(member)
             "groups": [{"id": "1", "name": "Pro"}], "products": [\(products)]}
            """
        let path = Scratch.directory + "\(UUID().uuidString)-catalog.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return try CatalogLoader.load(path: path)
    }

    static let coins = #"{"id": "coins", "kind": "consumable"}"#
    static let monthly = #"{"id": "pro.monthly", "kind": "auto-renewable", "groupId": "1", "level": 1, "period": "P1M""#
    static let trial = #""introductoryOffer": {"discountType": "FREE_TRIAL", "period": "P1W"}"#

    /// The catalogs of the sweep, by name: loaded ones and small ones that rule out most families.
    static func catalogs() throws -> [(String, Catalog, drawn: Bool)] {
        let allRenewals = #"{"days": 16, "eligibility": "all-renewals"}"#
        let paidOnly = #"{"days": 16, "eligibility": "paid-renewals-only"}"#
        return [
            ("one consumable", try native(coins), false),
            ("one consumable, drawn catalogs", try native(coins), true),
            ("a subscription, grace for all renewals", try native(monthly + "}, " + coins, grace: allRenewals), false),
            ("a trial, grace for paid renewals only", try native(monthly + ", " + trial + "}", grace: paidOnly), false),
            ("a subscription, grace off, Xcode", try native(monthly + "}", grace: "null", environment: "Xcode"), false),
            (
                "two levels, a shared unlock, a season",
                try native(
                    monthly + "}, "
                        + #"{"id": "pro.yearly", "kind": "auto-renewable", "groupId": "1", "level": 2, "#
                        + #""period": "P1Y"}, "#
                        + #"{"id": "unlock", "kind": "non-consumable", "familyShareable": true}, "#
                        + #"{"id": "season", "kind": "non-renewing", "period": "P3M"}"#), false
            ),
            (
                "Products.storekit",
                try CatalogLoader.load(path: repo.appendingPathComponent("Examples/Products.storekit").path), false
            ),
            (
                "Passes.storekit",
                try CatalogLoader.load(
                    path: repo.appendingPathComponent("Tests/Fixtures/catalogs/Passes.storekit").path),
                false
            ),
            (
                "the notes backend's catalog",
                try CatalogLoader.load(
                    path: repo.appendingPathComponent("Examples/notes-backend/iapcheck-catalog.json").path),
                false
            ),
            ("the built-in catalog", .standard, false),
        ]
    }

    /// The families `cases` generated cases of `catalog` make.
    static func made(_ catalog: Catalog, drawn: Bool, cases: Int) -> Set<String> {
        var o = CheckOptions()
        (o.catalog, o.drawsCatalogs, o.seed) = (catalog, drawn, 7)
        let checker = Checker(options: o, validator: ReferenceValidator())
        return Set((0..<cases).flatMap { checker.generate(caseIndex: $0).0.families.map(\.rawValue) })
    }

    /// Sound at every level: no family a case makes is called impossible. With the full sweep (1,600 cases a
    /// catalog), exact as well: every family called possible is made, so the line names no family these cases miss.
    @Test func theFamiliesCalledPossibleAreThoseCasesMake() throws {
        let cases = Sweep.count(1600)
        for (name, catalog, drawn) in try Self.catalogs() {
            let possible = Set(ScenarioFamily.possible(in: catalog, drawsCatalogs: drawn).map(\.rawValue))
            let made = Self.made(catalog, drawn: drawn, cases: cases)
            #expect(
                made.subtracting(possible).isEmpty,
                "\(name): made, called impossible: \(made.subtracting(possible).sorted())")
            if Sweep.current != .quick {
                #expect(
                    possible.subtracting(made).isEmpty, "\(name): never made: \(possible.subtracting(made).sorted())")
            }
        }
    }

    @Test func aCatalogOfOneConsumableAllowsOnlyWhatAConsumableCanDo() throws {
        let possible = ScenarioFamily.possible(in: try Self.native(Self.coins))
        #expect(
            possible == [
                .buyConsumable, .refund, .refundDeclined, .refundRequested, .refundReversed, .externalPurchaseToken,
                .testNotification,
            ])
        #expect(ScenarioFamily.possible(in: try Self.native(Self.coins, environment: "Xcode")).count == 5)
        #expect(
            ScenarioFamily.possible(in: try Self.native(Self.coins), drawsCatalogs: true).count
                == ScenarioFamily.allCases.count)
    }

    /// Grace the app states for every renewal never fails billing without grace; a trial under grace for paid
    /// renewals only can.
    @Test func graceRulesFollowTheAppsSetting() throws {
        let all = try Self.native(Self.monthly + "}", grace: #"{"days": 16, "eligibility": "all-renewals"}"#)
        #expect(!ScenarioFamily.possible(in: all).contains(.billingFailureNoGrace))
        #expect(ScenarioFamily.possible(in: all).contains(.graceExpired))
        let paidOnly = try Self.native(
            Self.monthly + ", " + Self.trial + "}", grace: #"{"days": 16, "eligibility": "paid-renewals-only"}"#)
        #expect(
            ScenarioFamily.possible(in: paidOnly).isSuperset(of: [.billingFailureNoGrace, .gracePeriodWithoutDate]))
        let off = try Self.native(Self.monthly + "}", grace: "null")
        #expect(
            ScenarioFamily.possible(in: off).isDisjoint(with: [.graceExpired, .recoverInGrace, .gracePeriodWithoutDate])
        )
    }

    @Test func theBuiltInCatalogAllowsEveryFamily() {
        #expect(ScenarioFamily.possible(in: .standard) == Set(ScenarioFamily.allCases))
    }

    /// The line itself, from a run: a one-consumable app's run names no family of subscriptions.
    @Test func aRunOfAConsumableAppListsOnlyItsOwnBlindSpots() throws {
        var o = CheckOptions()
        (o.catalog, o.cases) = (try Self.native(Self.coins), 20)
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        let allowed = ScenarioFamily.possible(in: o.catalog).map(\.rawValue)
        #expect(
            report.coverage.missingFamilies.allSatisfy { allowed.contains($0) }, "\(report.coverage.missingFamilies)")
        #expect(report.coverage.families.keys.allSatisfy { allowed.contains($0) })
    }
}
