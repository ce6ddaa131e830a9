import Foundation
import IAPEncoding
import IAPModel
import IAPSupport
import IAPTesting
import Testing

@Suite struct PeriodTests {
    static func date(_ y: Int64, _ m: Int64, _ d: Int64) -> Millis {
        CivilTime.days(fromCivil: y, m, d) * CivilTime.msPerDay
    }

    @Test func monthsFollowTheAnniversaryClampedToTheMonthEnd() {
        #expect(Period(1, .month).added(to: Self.date(2026, 1, 31)) == Self.date(2026, 2, 28))
        #expect(Period(1, .month).added(to: Self.date(2028, 1, 31)) == Self.date(2028, 2, 29))
        #expect(Period(1, .year).added(to: Self.date(2028, 2, 29)) == Self.date(2029, 2, 28))
        #expect(Period(2, .week).added(to: Self.date(2026, 3, 1)) == Self.date(2026, 3, 15))
        #expect(Period(3, .month).added(to: Self.date(2026, 11, 30) + 5) == Self.date(2027, 2, 28) + 5)
    }

    @Test func parsesIso8601Periods() {
        #expect(Period(iso8601: "P1M") == Period(1, .month))
        #expect(Period(iso8601: "P14D") == Period(14, .day))
        #expect(Period(iso8601: "1M") == nil)
        #expect(Period(iso8601: "P0Y") == nil)
        #expect(Period(iso8601: "PXM") == nil)
    }

    @Test func formatsInstants() {
        #expect(CivilTime.iso8601(Self.date(2026, 3, 1) + 3_723_004) == "2026-03-01T01:02:03.004Z")
        #expect(CivilTime.relative(-1) == "-1ms")
        #expect(CivilTime.relative(2 * CivilTime.msPerDay + 5_000) == "+2d 00:00:05")
        // Offsets in a sentence made instants, for send's lines (each of which has an instant already).
        let origin = Self.date(2027, 1, 31) + 10 * CivilTime.msPerHour
        let grace = origin + 381 * CivilTime.msPerDay + 1
        #expect(
            CivilTime.absolute(in: "grace until \(CivilTime.relative(grace - origin)), then", from: origin)
                == "grace until \(CivilTime.iso8601(grace)), then")
        #expect(CivilTime.absolute(in: "back -01:00:00 and +0", from: origin) == "back 2027-01-31T09:00:00.000Z and +0")
    }
}

@Suite struct WireTypeTests {
    @Test func unknownEnumValuesSurviveDecoding() throws {
        let json =
            #"{"notificationType":"FAMILY_SHARED_MEMBER_JOINED","subtype":"NEW","notificationUUID":"u","version":"2.0","signedDate":1}"#
        let n = try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json.utf8))
        #expect(n.notificationType.rawValue == "FAMILY_SHARED_MEMBER_JOINED")
        #expect(!n.notificationType.isKnown)
        let again = try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: JSONEncoder().encode(n))
        #expect(again == n)
    }

    @Test func transactionsUseApplesFieldNamesAndRawValues() throws {
        var tx = JWSTransactionDecodedPayload(
            transactionId: "2", originalTransactionId: "1", bundleId: "b", productId: "p", purchaseDate: 10,
            type: .autoRenewable, signedDate: 11, environment: .production, transactionReason: .renewal)
        tx.offerType = .introductory
        tx.revocationReason = .refundedDueToIssue
        let obj = try JSONSerialization.jsonObject(with: JSONEncoder().encode(tx)) as! [String: Any]
        #expect(obj["type"] as? String == "Auto-Renewable Subscription")
        #expect(obj["inAppOwnershipType"] as? String == "PURCHASED")
        #expect(obj["transactionReason"] as? String == "RENEWAL")
        #expect(obj["offerType"] as? Int == 1)
        #expect(obj["revocationReason"] as? Int == 1)
        #expect(obj["expiresDate"] == nil)
    }
}

@Suite struct CatalogLoadingTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples")

    static func write(_ text: String, ext: String = "json") -> String {
        let path = Scratch.directory + "iapcheck-\(UUID().uuidString).\(ext)"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    @Test func importsAnXcodeStoreKitFile() throws {
        let c = try CatalogLoader.load(path: Self.examples.appendingPathComponent("Products.storekit").path)
        let yearly = try #require(c.product("com.example.maps.pro.yearly"))
        #expect(
            yearly.kind == .autoRenewable && yearly.level == 1 && yearly.period == Period(1, .year)
                && yearly.familyShareable)
        #expect(yearly.introductoryOffer == OfferSpec(discountType: .freeTrial, period: Period(2, .week)))
        #expect(yearly.promotionalOffers.map(\.id) == ["maps.pro.comeback"])
        #expect(yearly.offerCodes.first?.discountType == .freeTrial)
        let monthly = try #require(c.product("com.example.maps.pro.monthly"))
        #expect(monthly.introductoryOffer?.periods == 3)
        #expect(c.product("com.example.maps.lite.monthly")?.level == 2)
        #expect(c.product("com.example.maps.credits")?.kind == .consumable)
        #expect(c.product("com.example.maps.offline")?.familyShareable == true)
        #expect(c.product("com.example.maps.season")?.kind == .nonRenewing)
        #expect(c.groups.map(\.id) == ["21450001"])
    }

    @Test func aBadStoreKitFileNamesTheFileAndEveryKey() {
        let path = Self.write(
            #"""
            {"subscriptionGroups":[{"id":"g","subscriptions":[
              {"productID":"a","groupNumber":"one","recurringSubscriptionPeriod":"P1M"},
              {"productID":"b","groupNumber":1,"recurringSubscriptionPeriod":"monthly"},
              {"groupNumber":1,"recurringSubscriptionPeriod":"P1M","introductoryOffer":{"paymentMode":"gratis","subscriptionPeriod":"P1W"}}]}]}
            """#, ext: "storekit")
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { error in
            guard let e = error as? ConfigError else { return false }
            let keys = Set(e.problems.map(\.key))
            return e.file == path
                && keys.contains("subscriptionGroups[0].subscriptions[0].groupNumber")
                && keys.contains("subscriptionGroups[0].subscriptions[1].recurringSubscriptionPeriod")
                && keys.contains("subscriptionGroups[0].subscriptions[2].productID")
                && keys.contains("subscriptionGroups[0].subscriptions[2].introductoryOffer.paymentMode")
        }
    }

    @Test func theNativeCatalogRoundTripsAndIsStrict() throws {
        let data = try JSONEncoder().encode(Catalog.standard)
        let path = Self.write(String(decoding: data, as: UTF8.self))
        #expect(try CatalogLoader.load(path: path) == Catalog.standard)

        let bad = Self.write(
            #"{"bundleId":"b","appAppleId":-1,"environment":"Prod","groups":[],"products":[{"id":"x","kind":"auto-renewable","colour":"red"}]}"#
        )
        #expect {
            try CatalogLoader.load(path: bad)
        } throws: { error in
            let keys = Set((error as? ConfigError)?.problems.map(\.key) ?? [])
            return keys.isSuperset(of: [
                "appAppleId", "environment", "products[0].groupId", "products[0].level", "products[0].period",
                "products[0].colour",
            ])
        }
    }

    @Test(arguments: ["", "{", "[1,2]", "\u{FF}\u{FE}", "{\"products\": 5}", String(repeating: "[", count: 10000)])
    func malformedFilesGiveAClearError(_ text: String) {
        let path = Self.write(text)
        #expect(throws: ConfigError.self) { try CatalogLoader.load(path: path) }
    }

    @Test func aMissingFileIsAClearError() {
        #expect {
            try CatalogLoader.load(path: "/nonexistent/catalog.json")
        } throws: { error in
            (error as? ConfigError)?.description.contains("/nonexistent/catalog.json") == true
        }
    }

    @Test func policiesLoadWithDefaultsAndRejectUnknownKeys() throws {
        let p = try Policy.load(path: Self.write(#"{"refundScope":"chain","consumableClawback":false}"#))
        #expect(p.refundScope == .chain && !p.consumableClawback && p.introEligibility == .neverReceivedIntro)
        #expect(throws: ConfigError.self) { try Policy.load(path: Self.write(#"{"refundScope":"all"}"#)) }
        #expect(throws: ConfigError.self) { try Policy.load(path: Self.write(#"{"refundscope":"chain"}"#)) }
    }

    /// App Store Connect offers six durations for auto-renewable subscriptions; anything else would make the
    /// simulator invent renewals Apple never makes.
    @Test(arguments: ["P3D", "P1D", "P2W", "P10Y", "P5M"])
    func aRenewalPeriodAppleDoesNotOfferIsRefusedWithItsKey(_ period: String) {
        let native = Self.write(
            #"{"bundleId":"b","appAppleId":1,"environment":"Production","groups":[{"id":"g","name":"G"}],"products":[{"id":"s","kind":"auto-renewable","groupId":"g","level":1,"period":"\#(period)"}]}"#
        )
        let storekit = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"\#(period)"}]}]}"#,
            ext: "storekit")
        for (path, key) in [
            (native, "products[0].period"),
            (storekit, "subscriptionGroups[0].subscriptions[0].recurringSubscriptionPeriod"),
        ] {
            #expect {
                try CatalogLoader.load(path: path)
            } throws: { error in
                (error as? ConfigError)?.problems.contains { $0.key == key && $0.message.contains(period) } == true
            }
        }
    }

    /// An offer lasts one of the durations App Store Connect offers for offers (at most a year per period): a
    /// longer one would run histories past the test certificates, and a correct verifier would be failed on them.
    @Test(arguments: ["P2Y", "P13M", "P20Y", "P5D"])
    func anOfferPeriodAppleDoesNotOfferIsRefusedWithItsKey(_ period: String) {
        let native = Self.write(
            #"{"bundleId":"b","appAppleId":1,"environment":"Production","groups":[{"id":"g","name":"G"}],"products":[{"id":"s","kind":"auto-renewable","groupId":"g","level":1,"period":"P1Y","introductoryOffer":{"discountType":"FREE_TRIAL","period":"\#(period)"}}]}"#
        )
        let storekit = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"P1Y","introductoryOffer":{"paymentMode":"free","subscriptionPeriod":"\#(period)"}}]}]}"#,
            ext: "storekit")
        for (path, key) in [
            (native, "products[0].introductoryOffer.period"),
            (storekit, "subscriptionGroups[0].subscriptions[0].introductoryOffer.subscriptionPeriod"),
        ] {
            #expect {
                try CatalogLoader.load(path: path)
            } throws: { error in
                (error as? ConfigError)?.problems.contains {
                    $0.key == key && $0.message.contains("App Store Connect offers for a subscription offer")
                } == true
            }
        }
    }

    /// A period too long to read says so, not that it is no ISO 8601 period.
    @Test func aPeriodTooLongToReadSaysSo() {
        let storekit = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"P9999Y"}]}]}"#,
            ext: "storekit")
        #expect {
            try CatalogLoader.load(path: storekit)
        } throws: { error in
            (error as? ConfigError)?.problems.contains { $0.message.contains("longer than any App Store period") }
                == true
        }
    }

    @Test func newerStoreKitFilesReadThePluralIntroOfferAndSkipInstallmentPlans() throws {
        let path = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"P1M","introductoryOffers":[{"paymentMode":"free","subscriptionPeriod":"P1W"}]}]}]}"#,
            ext: "storekit")
        let c = try CatalogLoader.load(path: path)
        #expect(c.product("s")?.introductoryOffer == OfferSpec(discountType: .freeTrial, period: Period(1, .week)))
        #expect(!c.notes.contains { $0.contains("introductoryOffers has") })
        // An empty file (a blob some repositories hold) is said to be empty.
        #expect {
            try CatalogLoader.load(path: Self.write("", ext: "storekit"))
        } throws: { error in "\(error)".contains("the file is empty (0 bytes)") }
        // Several (one per eligibility rule or billing plan): the first, and the run says so.
        let two = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"#
                + #""recurringSubscriptionPeriod":"P1Y","introductoryOffers":[{"paymentMode":"free","#
                + #""subscriptionPeriod":"P1M"},{"paymentMode":"free","subscriptionPeriod":"P2M"}]}]}]}"#,
            ext: "storekit")
        let both = try CatalogLoader.load(path: two)
        #expect(both.product("s")?.introductoryOffer?.period == Period(1, .month))
        #expect(both.notes.contains { $0.contains("introductoryOffers has 2 offers") }, "\(both.notes)")
        // Both forms, disagreeing: the singular one, and the run says so.
        let disagree = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"#
                + #""recurringSubscriptionPeriod":"P1Y","introductoryOffer":{"paymentMode":"payUpFront","#
                + #""subscriptionPeriod":"P6M"},"introductoryOffers":[{"paymentMode":"free","subscriptionPeriod":"P3M"}]}]}]}"#,
            ext: "storekit")
        let singular = try CatalogLoader.load(path: disagree)
        #expect(singular.product("s")?.introductoryOffer?.period == Period(6, .month))
        #expect(singular.notes.contains { $0.contains("introductoryOffer and introductoryOffers[0] differ") })
        // Xcode's format 5 puts the ordinary plan on every subscription: read as usual.
        let upfront = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"P1Y","billingPlans":[{"billingPlanType":"BILLED_UPFRONT","displayPrice":"49.99"}]}]}]}"#,
            ext: "storekit")
        #expect(try CatalogLoader.load(path: upfront).product("s")?.period == Period(1, .year))
        let installments = Self.write(
            #"{"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"s","groupNumber":1,"recurringSubscriptionPeriod":"P1Y","billingPlans":[{"billingPlanType":"BILLED_UPFRONT"},{"billingPlanType":"MONTHLY_INSTALLMENTS","billingPeriod":"P1M"}]}]}]}"#,
            ext: "storekit")
        // An installment plan is left out, and the run says so: the rest of the file is checked.
        let skipped = try CatalogLoader.load(path: installments)
        #expect(skipped.product("s")?.period == Period(1, .year))
        #expect(skipped.notes.contains { $0.hasPrefix("s: billingPlans[1] (MONTHLY_INSTALLMENTS") })
    }

    @Test func aDuplicateProductIdIsReportedWhereItIs() {
        let path = Self.write(
            #"{"products":[{"productID":"x","type":"Consumable"}],"subscriptionGroups":[{"id":"g","subscriptions":[{"productID":"x","groupNumber":1,"recurringSubscriptionPeriod":"P1M"}]}]}"#,
            ext: "storekit")
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { error in
            (error as? ConfigError)?.problems.contains {
                $0.key == "subscriptionGroups[0].subscriptions[0].productID"
                    && $0.message.contains("products[0].productID")
            } == true
        }
    }

    @Test func invalidUTF8AndTruncationAreLocated() {
        let bytes = Data(#"{"bundleId":"b","#.utf8) + Data([0xC3, 0x28]) + Data(#""}"#.utf8)
        let path = Scratch.directory + "iapcheck-\(UUID().uuidString).json"
        FileManager.default.createFile(atPath: path, contents: bytes)
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { error in
            (error as? ConfigError)?.description.contains("byte 16 (line 1, column 17)") == true
        }
        let truncated = Self.write("{\n  \"bundleId\": \"b\",\n  \"products\": [")
        #expect {
            try CatalogLoader.load(path: truncated)
        } throws: { error in
            (error as? ConfigError)?.description.contains("line 3") == true
        }
    }

    @Test func aKeyWrittenTwiceInOneObjectIsReportedWithBothPlaces() {
        // Foundation keeps one of the two values silently: a pasted second product under the same key in
        // `nonRenewing`, or a second `bundleId`, must not quietly replace the first.
        let path = Self.write(
            "{\n  \"bundleId\": \"a\",\n  \"nonRenewing\": {\"com.x.pass\": \"P1M\", \"com.x.pass\": \"P1Y\"},\n"
                + "  \"products\": [{\"id\": \"p\", \"i\\u0064\": \"q\"}],\n  \"bundleId\": \"b\"\n}")
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { error in
            let problems = (error as? ConfigError)?.problems ?? []
            return problems.contains { $0.key == #"nonRenewing["com.x.pass"]"# && $0.message.contains("line 3") }
                && problems.contains { $0.key == "products[0].id" && $0.message.contains("written twice") }
                && problems.contains {
                    $0.key == "bundleId" && $0.message.contains("line 2, column 3")
                        && $0.message.contains("line 5, column 3")
                }
        }
        // The same key in two different objects, and a key inside a string value, are no repeat.
        let reader = StrictJSON(file: "inline.json")
        _ = try? reader.root(Data(#"{"a": {"k": 1}, "b": [{"k": 2}, {"k": "{\"a\": 1, \"a\": 2}"}], "c": "a"}"#.utf8))
        #expect(reader.problems.isEmpty)
    }

    /// The size is refused before a byte is read: a 3 GB (sparse) catalog took 4.7 GB of memory to be refused.
    @Test func aFileAboveTheLimitIsRefusedUnread() throws {
        let path = Scratch.directory + "iapcheck-\(UUID().uuidString).json"
        FileManager.default.createFile(atPath: path, contents: nil)
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.truncate(atOffset: UInt64(StrictJSON.maxFileBytes) + 1)
        try h.close()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try CatalogLoader.load(path: path)
        } throws: { error in
            (error as? ConfigError)?.description.contains(
                "more than the \(StrictJSON.maxFileBytes) allowed (refused unread)") == true
        }
        // What iapcheck wrote itself (a recording, a long load run) is read whatever its size.
        #expect(try StrictJSON.readFile(path, maxBytes: StrictJSON.ownOutput).count == StrictJSON.maxFileBytes + 1)
    }

    @Test func aDirectoryIsNamedAsSuch() {
        #expect {
            try CatalogLoader.load(path: Scratch.directory)
        } throws: { error in
            (error as? ConfigError)?.description.contains("is a directory") == true
        }
    }
}

@Suite struct AnswerComparisonTests {
    /// Every id of an answer, the effective product of a group too, is refused with a control character in it.
    @Test func anIdWithAControlCharacterIsAProblem() {
        let group = GroupEntitlement(groupId: "g", effectiveProductId: "x\nFORGED", introEligible: false)
        #expect(EntitlementAnswer(groups: [group]).problems.contains { $0.hasPrefix("groups[].effectiveProductId") })
        #expect(
            EntitlementAnswer(groups: [GroupEntitlement(groupId: "g", effectiveProductId: "x", introEligible: false)])
                .problems.isEmpty)
    }

    /// An answer of thousands of entries (a broken or hostile validator's) is compared by id as a short one is: the
    /// short path's linear searches made each comparison quadratic in it.
    @Test func aLongAnswerIsComparedAsAShortOneIs() {
        let pro = ProductEntitlement(
            productId: "pro", active: true, state: .active, expiresDate: 5, ownership: .purchased)
        let expected = EntitlementAnswer(products: [pro])
        var filler = (0..<5000).map {
            ProductEntitlement(
                productId: "unknown.\($0)", active: false, state: .expired, expiresDate: nil, ownership: nil)
        }
        let long = EntitlementAnswer(products: [pro] + filler)
        #expect(long.agrees(with: expected))
        #expect(long.answerDifferences(from: expected).isEmpty)
        filler[4321].active = true
        filler[4321].state = .active
        let wrong = EntitlementAnswer(products: [pro] + filler)
        #expect(!wrong.agrees(with: expected))
        #expect(wrong.differences(from: expected) == ["unknown.4321: not expected at all, validator says active"])
    }
}

@Suite struct MarkupTests {
    @Test func everyCharacterThatEndsTextOrAnAttributeIsEscaped() {
        #expect(
            Markup.escape(#"<a href="x" title='y'>&</a>"#)
                == "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;")
        #expect(Markup.escape("plain · ünïcode 🙂") == "plain · ünïcode 🙂")
        // XML 1.0 allows no C0 control but tab, line feed and carriage return, not even as a reference.
        #expect(Markup.escape("a\u{1B}[2J\u{0}b\tc\n") == "a\\u{1B}[2J\\u{0}b\tc\n")
    }
}

@Suite struct ForgeryContentTests {
    @Test func identityClassesChangeOnlyTheIdentityAndTheRestTempt() {
        var tx = Catalog.standard.probeTransaction(
            of: Catalog.standard.probeProduct!, at: 1_000_000, user: "a1b2c3d4-0000-4000-8000-000000000001")
        tx.revocationDate = 2_000_000
        tx.revocationReason = .refundedDueToIssue
        for f in ForgeryClass.allCases {
            let forged = f.content(tx)
            if f.isHardeningOnly {
                #expect(forged == tx, "\(f): a token refused for its size alone carries the genuine purchase")
            } else if f.isIdentityMismatch {
                #expect(forged.revocationDate == tx.revocationDate, "\(f)")
                #expect(forged.bundleId != tx.bundleId || forged.environment != tx.environment || f == .wrongAppAppleId)
                #expect(forged.transactionId != tx.transactionId, "\(f): another app's purchase has its own id")
            } else {
                #expect(forged.revocationDate == nil && forged.revocationReason == nil, "\(f)")
                #expect(forged.expiresDate == tx.expiresDate.map { $0 + ForgeryClass.temptingExtension }, "\(f)")
                // A purchase the store never made, in the same chain; a replay is about the genuine transaction.
                #expect(forged.originalTransactionId == tx.originalTransactionId, "\(f)")
                #expect((forged.transactionId == tx.transactionId) == f.mayBeAcknowledged, "\(f)")
                // Timelines show an id by its last four digits: a forged purchase must not read as the genuine one.
                #expect(
                    (forged.transactionId.suffix(4) == tx.transactionId.suffix(4)) == f.mayBeAcknowledged,
                    "\(f): \(forged.transactionId) beside \(tx.transactionId)")
                if !f.mayBeAcknowledged {
                    // Its own billing period, signed later: new to a backend whatever it keys purchases by.
                    #expect(forged.webOrderLineItemId != tx.webOrderLineItemId && forged.signedDate > tx.signedDate)
                }
            }
        }
    }
}
