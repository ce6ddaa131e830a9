import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPReference
import IAPSimulator
import IAPSubprocess
import IAPTesting
import IAPValidatorAPI
import Testing

/// Entitlements in the catalog, declared profiles (answers and channels), and the reference and mutants checked
/// under a profile: issue 13's "checked as the validator answers" machinery end to end.
@Suite struct ProfileTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binary = BuiltIAPCheck.path
    static let entitlementsOnly = ValidatorProfile(
        answers: [.entitlementsActive, .entitlementsExpiresDate], channels: [.app, .notification])

    static func exampleCatalog() throws -> Catalog {
        try CatalogLoader.load(path: repo.appendingPathComponent("Examples/entitlements.json").path)
    }

    static func options(cases: Int, catalog: Catalog? = nil) -> CheckOptions {
        var o = CheckOptions()
        o.cases = cases
        o.seed = 13
        if let catalog { o.catalog = catalog } else { o.drawsCatalogs = true }
        return o
    }

    @Test func theExampleCatalogCarriesItsEntitlements() throws {
        let c = try Self.exampleCatalog()
        #expect(c.entitlementList.map(\.id) == ["pro", "plus", "storage"])
        #expect(c.entitlementList[0].products == ["pro.yearly", "pro.monthly", "lifetime.unlock"])
    }

    @Test func badEntitlementsAreRefusedNamingTheKey() throws {
        let dir = Scratch.url.appendingPathComponent("ent-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("bad.json").path
        try Data(
            #"""
            {"entitlements": [{"id": "pro", "products": ["pro.monthly", "nope"]},
                              {"id": "pro", "products": ["coins.100"]},
                              {"id": "x", "products": [], "extra": 1}]}
            """#.utf8
        ).write(to: URL(fileURLWithPath: file))
        do {
            _ = try CatalogLoader.addingEntitlements(path: file, to: .standard)
            Issue.record("accepted")
        } catch {
            let keys = error.problems.map(\.key)
            #expect(keys.contains("entitlements[0].products[1]"))
            #expect(keys.contains("entitlements[1].id"))
            #expect(keys.contains("entitlements[1].products[0]"))
            #expect(keys.contains("entitlements[2].products"))
            #expect(keys.contains("entitlements[2].extra"))
            #expect("\(error)".contains("bad.json"))
        }
    }

    @Test func anEntitlementIsTheBestOfItsProducts() {
        var c = Catalog.standard
        c.entitlements = [CatalogEntitlement(id: "pro", products: ["pro.monthly", "pro.yearly", "lifetime.unlock"])]
        let monthly = ProductEntitlement(
            productId: "pro.monthly", active: true, state: .grace, expiresDate: 500, ownership: .familyShared)
        let yearly = ProductEntitlement(
            productId: "pro.yearly", active: true, state: .active, expiresDate: 900, ownership: .purchased)
        let lifetime = ProductEntitlement(
            productId: "lifetime.unlock", active: false, state: .revoked, expiresDate: nil, ownership: nil)
        let both = c.entitlementGrants(from: [monthly, yearly, lifetime])
        #expect(
            both == [
                EntitlementGrant(
                    entitlementId: "pro", active: true, state: .active, expiresDate: 900, ownership: .purchased)
            ])
        #expect(
            c.entitlementGrants(from: [monthly]) == [
                EntitlementGrant(
                    entitlementId: "pro", active: true, state: .grace, expiresDate: 500, ownership: .familyShared)
            ])
        #expect(
            c.entitlementGrants(from: [lifetime]) == [
                EntitlementGrant(entitlementId: "pro", active: false, state: .revoked, expiresDate: nil, ownership: nil)
            ])
        var forever = lifetime
        forever.active = true
        forever.state = .active
        forever.ownership = .purchased
        #expect(c.entitlementGrants(from: [monthly, forever]).first?.expiresDate == nil)
        #expect(
            c.entitlementGrants(from: [
                ProductEntitlement(
                    productId: "storage.monthly", active: true, state: .active, expiresDate: 1, ownership: .purchased)
            ]).isEmpty)
    }

    @Test func declaredFieldsAreStrictAndTheOthersAreNotRead() throws {
        let d = JSONDecoder()
        d.userInfo[ValidatorProfile.codingKey] = Self.entitlementsOnly
        let a = try d.decode(
            EntitlementAnswer.self,
            from: Data(
                #"{"products": "garbage", "entitlements": [{"entitlementId": "pro", "active": true, "state": 7}]}"#.utf8
            ))
        #expect(a.products.isEmpty)
        #expect(a.entitlements.map(\.entitlementId) == ["pro"])
        #expect(throws: DecodingError.self) {
            try d.decode(EntitlementAnswer.self, from: Data(#"{"products": []}"#.utf8))
        }
        // A validator that declares nothing must send protocol v1's lists, and may send entitlements of any shape.
        let v1 = JSONDecoder()
        v1.userInfo[ValidatorProfile.codingKey] = ValidatorProfile.undeclared
        #expect(throws: DecodingError.self) {
            try v1.decode(EntitlementAnswer.self, from: Data(#"{"entitlements": []}"#.utf8))
        }
        let old = try v1.decode(
            EntitlementAnswer.self,
            from: Data(#"{"products": [], "groups": [], "consumables": [], "entitlements": 3}"#.utf8))
        #expect(old.entitlements.isEmpty)
    }

    @Test func unknownNamesInAProfileAreRefusedWithTheKnownOnes() {
        #expect(throws: ProfileError.self) {
            try ValidatorProfile.parse(answers: ["entitlements.aktive"], channels: nil, prefix: "hello.")
        }
        do {
            _ = try ValidatorProfile.parse(answers: nil, channels: ["webhook"], prefix: "hello.")
        } catch {
            #expect(error.message.hasPrefix("hello.channels: \"webhook\""))
            #expect(error.message.contains("app-transaction"))
        }
        #expect(throws: ProfileError.self) { try ValidatorProfile.parse(answers: [], channels: nil, prefix: "--") }
        #expect((try? ValidatorProfile.parse(answers: nil, channels: nil, prefix: "")) == .undeclared)
    }

    @Test func casesForAProfileUseOnlyItsChannelsAndCarryEntitlements() {
        let v = ReferenceValidator()
        v.profile = Self.entitlementsOnly
        let checker = Checker(options: Self.options(cases: 60), validator: v)
        var channels: Set<DeliveryChannel> = []
        for i in 0..<60 {
            let (c, _) = checker.generate(caseIndex: i)
            #expect(!(c.config.catalog.entitlements ?? []).isEmpty)
            for case .deliver(let d) in c.steps { channels.insert(d.delivery.channel) }
        }
        #expect(channels == [.app, .notification])
        // Undeclared (the reference by default): the catalog protocol v1 validators know. Every channel declared:
        // the same deliveries as undeclared, entitlements added only when answered.
        let undeclared = Checker(options: Self.options(cases: 60), validator: ReferenceValidator())
        let everything = ReferenceValidator()
        everything.profile = .everything
        let plain = Checker(options: Self.options(cases: 60), validator: everything)
        #expect(undeclared.generate(caseIndex: 3).0.config.catalog.entitlements == nil)
        #expect(plain.generate(caseIndex: 3).0.config.catalog.entitlements != nil)
        #expect(plain.generate(caseIndex: 3).0.steps == undeclared.generate(caseIndex: 3).0.steps)
    }

    @Test(.long) func theReferencePassesUnderAnEntitlementProfile() throws {
        for catalog in [nil, try Self.exampleCatalog()] {
            let v = ReferenceValidator()
            v.profile = Self.entitlementsOnly
            let report = Checker(options: Self.options(cases: 300, catalog: catalog), validator: v).run()
            #expect(
                report.failure == nil,
                "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        }
    }

    /// Merged shards of a validator that takes two channels say, as one run does, which forgery classes went
    /// unsent because they travel on channels it does not take.
    @Test func mergedShardsNameTheChannelsAValidatorDoesNotTake() throws {
        let inputs = try (0..<2).map { i in
            let v = ReferenceValidator()
            v.profile = Self.entitlementsOnly
            var o = Self.options(cases: 120)
            o.shard = Shard(index: i, count: 2)
            let summary = try CheckRun(validator: "reference", checker: Checker(options: o, validator: v)).run { _ in }
                .summary
            return ShardMerge.Input(path: "shard\(i).json", summary: summary)
        }
        let lines = try ShardMerge.merge(inputs).lines(given: 2, of: 2)
        #expect(
            lines.contains { $0.hasPrefix("forgeries:") && $0.contains("on channels it does not take") }, "\(lines)")
    }

    /// Mistakes that show in entitlements over the app and the webhook are caught, and the counterexample is told
    /// in entitlements.
    @Test(
        .long,
        arguments: [
            "ignore-revocation", "expiry-from-duration", "no-grace", "device-clock", "family-rejected",
            "arrival-order-wins", "ignore-revoke",
        ])
    func mutantsVisibleInTheProfileAreCaught(_ name: String) throws {
        let v = Mutants.named(name)!.make()
        v.profile = Self.entitlementsOnly
        var o = Self.options(cases: 400, catalog: try Self.exampleCatalog())
        o.seed = 1
        let report = Checker(options: o, validator: v).run()
        let d = try #require(report.failure?.discrepancy, "\(name) survived")
        if d.kind == .answer {
            #expect(!d.differences.isEmpty)
            #expect(d.differences.allSatisfy { $0.hasPrefix("entitlement ") }, "\(d.differences)")
        }
    }

    /// A certificate says what it certifies: the profile, and what it leaves unchecked, in the JSON and the HTML.
    @Test func certifyRecordsTheProfileAndWhatItLeavesUnchecked() throws {
        let v = ReferenceValidator()
        v.profile = ValidatorProfile(answers: [.entitlementsActive], channels: [.notification, .api])
        let report = CertifyRun(catalog: try Self.exampleCatalog(), scale: 0.05).run(v)
        #expect(report.passed, "\(report.divergences)")
        #expect(report.profile == v.profile)
        let skipped = report.notChecked ?? []
        #expect(skipped.contains { $0.kind == "field" && $0.name == "entitlements.expiresDate" })
        #expect(skipped.contains { $0.kind == "channel" && $0.name == "app-transaction" })
        // The probe sends most classes as an app submission, which this validator does not take.
        #expect(skipped.contains { $0.kind == "forgery" && $0.name == "tampered-payload" })
        #expect(!report.forgeries.contains { $0.name == "tampered-payload" })
        #expect(report.forgeries.contains { $0.name == "forged-nested-transaction" })
        let html = CertificationHTML.render(report)
        #expect(html.contains("Declared profile") && html.contains("entitlements.expiresDate"))
        let json = String(decoding: try JSONFormat.pretty().encode(report), as: UTF8.self)
        #expect(json.contains("\"notChecked\"") && json.contains("\"profile\""))
        // A validator that declares nothing gets neither.
        let plain = CertifyRun(catalog: try Self.exampleCatalog(), scale: 0.02).run(ReferenceValidator())
        #expect(plain.profile == nil && plain.notChecked == nil)
    }

    @Test(.long, .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func serveDeclaresTheProfileAndAnswersOnlyItsFields() throws {
        let v = SubprocessValidator(
            command:
                "\(Self.binary) serve --answers entitlements.active,entitlements.expiresDate --channels app-transaction,notification",
            timeout: 20)
        defer { v.shutdown() }
        try v.prepare()
        #expect(v.profile == Self.entitlementsOnly)
        let report = Checker(options: Self.options(cases: 40, catalog: try Self.exampleCatalog()), validator: v).run()
        #expect(report.failure == nil)
        #expect(report.passed == 40)
        // With jobs, each further process says its hello at its first reset: its profile holds from its first case.
        var o = Self.options(cases: 40, catalog: try Self.exampleCatalog())
        o.jobs = 2
        var jobs = Checker(options: o, validator: v)
        let command = v.command
        jobs.makeWorker = { SubprocessValidator(command: command, timeout: 20) }
        let parallel = jobs.run()
        #expect(parallel.failure == nil, "\(parallel.failure.map(\.explanation) ?? "")")
        #expect(parallel.passed == 40)

        let m = SubprocessValidator(
            command:
                "\(Self.binary) serve --validator mutant:ignore-revocation --answers entitlements.active,entitlements.expiresDate --channels app-transaction,notification",
            timeout: 20)
        defer { m.shutdown() }
        let caught = Checker(options: Self.options(cases: 200, catalog: try Self.exampleCatalog()), validator: m).run()
        let d = try #require(caught.failure?.discrepancy)
        #expect(d.differences.allSatisfy { $0.hasPrefix("entitlement ") })
        #expect(d.observedAnswer?.products.isEmpty == true, "serve sent fields it did not declare")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func aHelloWithAnUnknownFieldIsAProtocolViolation() throws {
        let script = Scratch.url.appendingPathComponent("hello-\(UUID().uuidString).sh")
        try Data(
            #"""
            read line
            id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
            echo '{"id":'"$id"',"type":"hello","name":"x","protocol":1,"answers":["entitlements.aktive"]}'
            cat > /dev/null
            """#.utf8
        ).write(to: script)
        let v = SubprocessValidator(command: "sh \(script.path)", timeout: 5)
        defer { v.shutdown() }
        do {
            try v.prepare()
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .protocolViolation)
            #expect(error.message.contains("hello.answers: \"entitlements.aktive\""))
        }
    }
}
