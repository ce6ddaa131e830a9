import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import Testing

/// A catalog that states the app's Billing Grace Period gets it in every case; one that does not lets each case draw
/// a setting App Store Connect offers (docs/catalog.md). A backend of an app without grace is never shown grace.
@Suite struct CatalogGraceTests {
    static let passes = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/catalogs/Passes.storekit").path

    /// The grace settings of 60 generated cases.
    static func graces(_ catalog: Catalog) -> Set<GracePeriodSetting?> {
        var o = CheckOptions()
        o.catalog = catalog
        let checker = Checker(options: o, validator: ReferenceValidator())
        return Set((0..<60).map { checker.generate(caseIndex: $0).0.config.catalog.gracePeriod })
    }

    static func native(gracePeriod: String?) throws -> Catalog {
        let member = gracePeriod.map { "\"gracePeriod\": \($0)," } ?? ""
        let text = """
            {"bundleId": "com.example.app", "appAppleId": 1234567890, "environment": "Production", \(member)
             "groups": [{"id": "1", "name": "Pro"}],
             "products": [{"id": "pro.monthly", "kind": "auto-renewable", "groupId": "1", "level": 1, "period": "P1M"}]}
            """
        let path = Scratch.directory + "\(UUID().uuidString)-catalog.json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return try CatalogLoader.load(path: path)
    }

    @Test func anIapcheckCatalogStatesItsGraceOrLetsCasesDrawOne() throws {
        let stated = GracePeriodSetting(days: 3, eligibility: .paidRenewalsOnly)
        #expect(
            Self.graces(try Self.native(gracePeriod: #"{"days": 3, "eligibility": "paid-renewals-only"}"#)) == [stated])
        let off = try Self.native(gracePeriod: "null")
        #expect(Self.graces(off) == [nil])
        #expect(off.notes.contains { $0.contains("off") })
        let drawn = Self.graces(try Self.native(gracePeriod: nil))
        #expect(drawn.contains(nil) && drawn.count >= 3, "\(drawn)")
    }

    /// Xcode's switch is its test session's (off by default, `SKTestSession.billingGracePeriodIsEnabled`): on, the team
    /// turned it on to test grace, and every case has grace; off says nothing of App Store Connect, so cases draw it,
    /// and the note says how to state it (`--grace`, which wins over the file either way).
    @Test func aStoreKitFilesGraceSwitchIsRead() throws {
        var off = try CatalogLoader.load(path: Self.passes)
        #expect(off.graceChoice == .varies && off.xcodeGraceOff)
        let drawnWhenOff = Self.graces(off)
        #expect(drawnWhenOff.contains(nil) && drawnWhenOff.count >= 3, "\(drawnWhenOff)")
        #expect(off.notes.contains { $0.contains("Xcode's default") && $0.contains("--grace off") }, "\(off.notes)")
        let stated = off.stateGrace("off")
        #expect(stated)
        #expect(Self.graces(off) == [nil])
        #expect(!off.notes.contains { $0.contains("Xcode's default") })
        let text = try String(contentsOfFile: Self.passes, encoding: .utf8)
        let on = text.replacingOccurrences(
            of: #""_billingGracePeriodEnabled" : false"#, with: #""_billingGracePeriodEnabled" : true"#)
        let path = Scratch.directory + "\(UUID().uuidString)-Passes.storekit"
        try Data(on.utf8).write(to: URL(fileURLWithPath: path))
        let withGrace = try CatalogLoader.load(path: path)
        let drawn = Self.graces(withGrace)
        #expect(!drawn.contains(nil) && drawn.count >= 3, "\(drawn)")
        #expect(withGrace.notes.contains { $0.contains("Billing Grace Period is on") })
        // A grace bug fails on a case that drew grace, and the FAIL line says the draw was iapcheck's, not the app's.
        var o = CheckOptions()
        (o.cases, o.seed, o.catalog, o.shrinkBudget.maxAttempts) = (
            300, 1, try CatalogLoader.load(path: Self.passes), 50
        )
        var lines: [String] = []
        _ = try CheckRun(
            validator: "mutant:no-grace", checker: Checker(options: o, validator: Mutants.named("no-grace")!.make())
        ).run { lines.append($0) }
        #expect(
            lines.contains {
                $0.hasPrefix("FAIL") && $0.contains("does not state the app's setting") && $0.contains("--grace off")
            },
            "\(lines)")
        // Not true or false: refused with its key, not ignored.
        try Data(
            text.replacingOccurrences(
                of: #""_billingGracePeriodEnabled" : false"#, with: #""_billingGracePeriodEnabled" : "yes""#
            ).utf8
        ).write(to: URL(fileURLWithPath: path))
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.key == "settings._billingGracePeriodEnabled" } == true
        }
    }
}
