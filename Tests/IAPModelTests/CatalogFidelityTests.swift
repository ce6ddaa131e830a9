import Foundation
import IAPEncoding
import IAPModel
import IAPTesting
import Testing

/// What a catalog file says is what iapcheck uses, or the run says what it assumed; what App Store Connect would
/// refuse, iapcheck refuses, naming the key (docs/catalog.md).
@Suite struct CatalogFidelityTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/catalogs")

    static func write(_ text: String, as name: String) throws -> String {
        let path = Scratch.directory + "\(UUID().uuidString)-\(name)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aStoreKitFilesPassesAreListedUntilTheirDurationsAreGiven() throws {
        let path = Self.fixtures.appendingPathComponent("Passes.storekit").path
        let c = try CatalogLoader.load(path: path)
        #expect(c.defaultedDurations == ["com.example.lessons.week", "com.example.lessons.year"])
        #expect(c.notes.contains { $0.hasPrefix("\"com.example.lessons.year\" is a non-renewing subscription") })
        // The installment plan is left out, and said, not fatal.
        #expect(c.notes.contains { $0.contains("MONTHLY_INSTALLMENTS") })
        #expect(c.product("com.example.lessons.monthly")?.kind == .autoRenewable)
        // The entitlements file gives the durations: no assumption left.
        let extra = try Self.write(
            #"{"nonRenewing": {"com.example.lessons.year": "P1Y", "com.example.lessons.week": "P1W"}}"#,
            as: "durations.json")
        let given = try CatalogLoader.addingEntitlements(path: extra, to: c)
        #expect(given.product("com.example.lessons.year")?.period == Period(1, .year))
        #expect(given.product("com.example.lessons.week")?.period == Period(1, .week))
        #expect(given.defaultedDurations.isEmpty)
        #expect(given.entitlements == nil)
        // A duration for a product that is not a non-renewing subscription is refused with its key.
        let wrong = try Self.write(#"{"nonRenewing": {"com.example.lessons.monthly": "P1M"}}"#, as: "wrong.json")
        #expect {
            try CatalogLoader.addingEntitlements(path: wrong, to: c)
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.key == #"nonRenewing["com.example.lessons.monthly"]"# } == true
        }
    }

    /// What App Store Connect refuses: each refused with the key.
    @Test(arguments: [
        (#""productID" : "com.example.lessons.lifetime""#, #""productID" : """#, "products[0].productID"),
        (
            #""productID" : "com.example.lessons.lifetime""#, #""productID" : "com.example\u0000lessons""#,
            "products[0].productID"
        ),
        (
            #""type" : "RecurringSubscription""#, #""type" : "Consumable""#,
            "subscriptionGroups[0].subscriptions[0].type"
        ),
    ])
    func whatAppStoreConnectRefusesIsRefusedWithItsKey(_ from: String, _ to: String, _ key: String) throws {
        let original = try String(
            contentsOf: Self.fixtures.appendingPathComponent("Passes.storekit"), encoding: .utf8)
        let edited = original.replacingOccurrences(of: from, with: to)
        #expect(edited != original)
        let path = try Self.write(edited, as: "bad.storekit")
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.key == key } == true
        }
    }

    /// A file Xcode synced with App Store Connect names the app's Apple ID in its settings: the run's header says so
    /// and how to sign for it; the default stays (backends set up for it keep working after an upgrade).
    @Test func theAppsAppleIdOfASyncedFileIsNamed() throws {
        let path = Self.fixtures.appendingPathComponent("Passes.storekit").path
        let c = try CatalogLoader.load(path: path)
        #expect(c.appAppleId == Catalog.standard.appAppleId)
        #expect(
            c.notes.contains { $0.contains("the file names 6460000000") && $0.contains("--app-apple-id 6460000000") })
        let original = try String(contentsOfFile: path, encoding: .utf8)
        let unsynced = original.replacingOccurrences(of: #""_applicationInternalID" : "6460000000", "#, with: "")
        #expect(unsynced != original)
        let plain = try CatalogLoader.load(path: try Self.write(unsynced, as: "unsynced.storekit"))
        #expect(!plain.notes.contains { $0.hasPrefix("App Apple ID") })
    }

    @Test func familySharingOfAPassAnEmptyGroupAndAZeroPeriodAreRefused() throws {
        let original = try String(
            contentsOf: Self.fixtures.appendingPathComponent("Passes.storekit"), encoding: .utf8)
        let shared = original.replacingOccurrences(
            of: #""familyShareable" : false,\#n      "internalID" : "6460000010""#,
            with: #""familyShareable" : true,\#n      "internalID" : "6460000010""#)
        #expect(shared != original)
        #expect {
            try CatalogLoader.load(path: try Self.write(shared, as: "shared.storekit"))
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.key == "nonRenewingSubscriptions[0].familyShareable" } == true
        }
        let zero = original.replacingOccurrences(of: #""P1M""#, with: #""P0M""#)
        #expect {
            try CatalogLoader.load(path: try Self.write(zero, as: "zero.storekit"))
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.message.contains("zero length") } == true
        }
        let empty =
            #"{"subscriptionGroups": [{"id": "1", "name": "g", "subscriptions": []}], "products": [{"productID": "a", "type": "NonConsumable"}]}"#
        #expect {
            try CatalogLoader.load(path: try Self.write(empty, as: "empty.storekit"))
        } throws: { e in
            (e as? ConfigError)?.problems.contains { $0.key == "subscriptionGroups[0].subscriptions" } == true
        }
    }

    static let binary = BuiltIAPCheck.path

    /// The run's header says what was assumed: no silent default.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func aRunSaysWhatItAssumedBeforeItsFirstCase() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = [
            "check", "--catalog", Self.fixtures.appendingPathComponent("Passes.storekit").path, "--bundle-id",
            "com.example.lessons", "--cases", "3", "--no-corpus",
        ]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(
            text.contains("\"com.example.lessons.year\" is a non-renewing subscription without a duration"), "\(text)")
        #expect(text.contains("MONTHLY_INSTALLMENTS"), "\(text)")
    }
}
