import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPTesting
import IAPValidatorAPI
import Testing

/// An HTTP target's own entitlements response read through the target file's `answer` mapping.
@Suite struct AnswerMappingTests {
    static func target(_ json: String) throws(ConfigError) -> HTTPValidator.Target {
        let path = Scratch.directory + "mapped-\(UUID().uuidString).json"
        try? Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    static func mapped(_ answer: String, extra: String = "") -> String {
        """
        {"baseURL": "http://127.0.0.1:9", \(extra)
         "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                    "notification": {"method": "POST", "path": "/n"}, "apiSnapshot": {"method": "POST", "path": "/s"},
                    "legacyReceipt": {"method": "POST", "path": "/l"}, "entitlements": {"method": "GET", "path": "/e"}},
         "answer": \(answer)}
        """
    }

    @Test func aResponseAboutOneEntitlementReadsThroughOne() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "", "one": "premium", "active": "/premium", "expiresDate": {"pointer": "/premium_until", "format": "epoch-s"}}}"#
            ))
        let at = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay
        let a = try t.mapping!.answer(from: Data(#"{"premium": true, "premium_until": 1803859200}"#.utf8), at: at)
        #expect(a.entitlements.map(\.entitlementId) == ["premium"])
        #expect(a.entitlements.first?.active == true)
        #expect(a.entitlements.first?.expiresDate == 1_803_859_200_000)
        // Without "one", the flat response's members are read as entries, and the error says how to map it.
        let flat = try Self.target(
            Self.mapped(#"{"entitlements": {"each": "", "active": "/premium"}}"#))
        #expect {
            try flat.mapping!.answer(from: Data(#"{"premium": true, "premium_until": 1803859200}"#.utf8), at: at)
        } throws: { error in
            (error as? AnswerMapping.Mismatch)?.fix?.contains("name it with \"one\"") == true
        }
    }

    /// A backend's own words for ownership or state: without `"values"` the answer is a mapping to complete (not a
    /// wrong answer of the backend), and the fix says how; with them the words read as iapcheck's values.
    @Test func aBackendsOwnWordsForOwnershipAreMappedOrRefused() throws {
        let body = Data(#"{"products": [{"sku": "pro.monthly", "active": true, "source": "family"}]}"#.utf8)
        let plain = try Self.target(
            Self.mapped(
                #"{"products": {"each": "/products", "key": "/sku", "active": "/active", "ownership": "/source"}}"#))
        #expect {
            try plain.mapping!.answer(from: body, at: 0)
        } throws: { error in
            let m = error as? AnswerMapping.Mismatch
            return m?.message.contains("\"family\" in entry \"pro.monthly\" is not PURCHASED or FAMILY_SHARED") == true
                && m?.fix?.contains("\"values\": {\"family\": …}") == true
        }
        let worded = try Self.target(
            Self.mapped(
                #"{"products": {"each": "/products", "key": "/sku", "active": "/active", "ownership": {"pointer": "/source", "values": {"purchase": "PURCHASED", "family": "FAMILY_SHARED"}}}}"#
            ))
        let a = try worded.mapping!.answer(from: body, at: 0)
        #expect(a.products.first?.ownership == .familyShared)
        // Words must map to iapcheck's values.
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(
                    #"{"products": {"each": "/products", "key": "/sku", "ownership": {"pointer": "/source", "values": {"family": "SHARED"}}}}"#
                ))
        }
    }

    /// What a mapped date means (`"meaning"`): the profile carries it, the run's policy takes it, and a policy or a
    /// second list saying another meaning is refused.
    @Test func aDeclaredMeaningOfTheDateBecomesThePolicys() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"products": {"each": "/products", "key": "/sku", "expiresDate": {"pointer": "/until", "meaning": "paid-first"}}}"#
            ))
        #expect(t.profile.expiresMeaning == .paidFirst)
        #expect(try Policy.default.adopting(t.profile, file: "t.json").expiresMeaning == .paidFirst)
        var accessEnd = Policy.default
        accessEnd.expiresMeaning = .accessEnd
        #expect(throws: ConfigError.self) { try accessEnd.adopting(t.profile, file: "t.json") }
        // Undeclared: the policy stays as it is.
        let plain = try Self.target(
            Self.mapped(#"{"products": {"each": "/products", "key": "/sku", "expiresDate": "/until"}}"#))
        #expect(plain.profile.expiresMeaning == nil)
        #expect(try accessEnd.adopting(plain.profile, file: "t.json").expiresMeaning == .accessEnd)
        // One meaning for both lists, and only the meanings the oracle computes ("either" is no declaration).
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(
                    #"{"products": {"each": "/p", "expiresDate": {"pointer": "/u", "meaning": "paid-first"}}, "entitlements": {"each": "/e", "expiresDate": {"pointer": "/u", "meaning": "access-end"}}}"#
                ))
        }
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(#"{"products": {"each": "/p", "expiresDate": {"pointer": "/u", "meaning": "either"}}}"#))
        }
        // A paid-through date needs `active` beside it (in grace the date has passed while access goes on).
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(
                    #"{"products": {"each": "/p", "expiresDate": {"pointer": "/u", "meaning": "paid-through"}}}"#))
        }
        let paidThrough = try Self.target(
            Self.mapped(
                #"{"products": {"each": "/p", "active": "/a", "expiresDate": {"pointer": "/u", "meaning": "paid-through"}}}"#
            ))
        #expect(paidThrough.profile.expiresMeaning == .paidThrough)
    }

    @Test func aRevenueCatStyleRecordReadsAsEntitlements() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "/subscriber/entitlements", "key": "@key", "expiresDate": {"pointer": "/expires_date", "format": "iso8601"}}}"#
            ))
        #expect(t.profile.answers == [.entitlementsActive, .entitlementsExpiresDate])
        let body = #"""
            {"subscriber": {"entitlements": {
               "pro": {"expires_date": "2026-04-01T00:00:00Z"},
               "old": {"expires_date": "2026-02-01T10:00:00.5+01:00"},
               "lifetime": {"expires_date": null}}}}
            """#
        let at = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay
        let a = try t.mapping!.answer(from: Data(body.utf8), at: at)
        #expect(a.entitlements.map(\.entitlementId) == ["lifetime", "old", "pro"])
        #expect(a.entitlements.map(\.active) == [true, false, true])
        #expect(a.entitlements[2].expiresDate == CivilTime.days(fromCivil: 2026, 4, 1) * CivilTime.msPerDay)
        #expect(a.entitlements[0].expiresDate == nil)
        #expect(a.entitlements[1].expiresDate == nil)  // not active: no expiry in the answer
    }

    @Test func arraysBooleansAndEpochsRead() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "/data", "key": "/id", "active": "/is_active", "expiresDate": {"pointer": "/until", "format": "epoch-s"}}}"#
            ))
        let a = try t.mapping!.answer(
            from: Data(
                #"{"data": [{"id": "pro", "is_active": "true", "until": 1800000000}, {"id": "x", "is_active": 0, "until": null}]}"#
                    .utf8), at: 0)
        #expect(a.entitlements.map(\.entitlementId) == ["pro", "x"])
        #expect(a.entitlements[0].active && a.entitlements[0].expiresDate == 1_800_000_000_000)
        #expect(!a.entitlements[1].active)
        // A value of the wrong kind names the key and the entry.
        #expect(throws: AnswerMapping.Mismatch.self) {
            try t.mapping!.answer(
                from: Data(#"{"data": [{"id": "pro", "is_active": "maybe", "until": 1}]}"#.utf8), at: 0)
        }
        do {
            _ = try t.mapping!.answer(from: Data(#"{"data": [{"id": "pro", "until": 1}]}"#.utf8), at: 0)
        } catch {
            #expect(error.message.contains("answer.entitlements.active"))
            #expect(error.message.contains("\"pro\""))
        }
    }

    /// A backend that says whether an entry is active in its own words (a status, a plan in a flat answer) maps them
    /// to true and false; a word it did not map names itself and the fix.
    @Test func activeInTheBackendsOwnWords() throws {
        let status = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "", "one": "pro", "active": {"pointer": "/status", "values": {"grace": "true", "lapsed": "false"}}}}"#
            ))
        func active(_ body: String) throws -> Bool? {
            try status.mapping!.answer(from: Data(body.utf8), at: 0).entitlements.first?.active
        }
        #expect(try active(#"{"status": "grace"}"#) == true)
        #expect(try active(#"{"status": "lapsed"}"#) == false)
        #expect(try active(#"{"status": true}"#) == true)
        #expect {
            try active(#"{"status": "paused"}"#)
        } throws: { error in
            (error as? AnswerMapping.Mismatch)?.fix?.contains(#""paused""#) == true
        }
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(
                    #"{"entitlements": {"each": "", "one": "pro", "active": {"pointer": "/s", "values": {"on": "yes"}}}}"#
                ))
        }
    }

    /// A response about the user's one plan names the plan itself (`"one": {"pointer": "/plan"}`), none when null;
    /// without an `active` of its own, a mapped state says whether the entry is active (a null expiry is "never",
    /// and "expired" beside it read as active once).
    @Test func aResponseAboutOnePlanNamesItAndItsStateSaysWhetherItIsActive() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"products": {"each": "", "one": {"pointer": "/plan"}, "expiresDate": {"pointer": "/renewsAt", "format": "epoch-s"}, "state": {"pointer": "/status", "values": {"lapsed": "expired"}}}}"#
            ))
        let a = try t.mapping!.answer(
            from: Data(#"{"status": "active", "plan": "p.annual", "renewsAt": 1800000000}"#.utf8), at: 0)
        #expect(a.products.map(\.productId) == ["p.annual"] && a.products[0].active)
        #expect(a.products[0].expiresDate == 1_800_000_000_000)
        let lapsed = try t.mapping!.answer(
            from: Data(#"{"status": "lapsed", "plan": "p.annual", "renewsAt": null}"#.utf8), at: 0)
        #expect(lapsed.products.first?.active == false && lapsed.products.first?.state == .expired)
        let none = try t.mapping!.answer(from: Data(#"{"status": "lapsed", "plan": null}"#.utf8), at: 0)
        #expect(none.products.isEmpty)
    }

    /// A backend word for several states (`"lapsed": ["expired", "revoked", "billing-retry"]`) reads as the first and
    /// counts as any of them: the profile tells the comparison so, and a revoked product answered "lapsed" agrees
    /// (such a backend had to leave `state` out). A group mixing entitled and lapsed states is refused.
    @Test func aWordForSeveralStatesCountsAsAnyOfThem() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"products": {"each": "/p", "key": "/id", "state": {"pointer": "/s", "values": {"on": "active", "lapsed": ["expired", "revoked", "billing-retry"]}}}}"#
            ))
        #expect(t.profile.stateGroups == [[.expired, .revoked, .billingRetry]])
        let a = try t.mapping!.answer(from: Data(#"{"p": [{"id": "pro", "s": "lapsed"}]}"#.utf8), at: 0)
        #expect(a.products.first?.state == .expired && a.products.first?.active == false)
        var expected = a
        expected.products[0].state = .revoked
        #expect(a.snapping(to: expected, profile: t.profile).answerDifferences(from: expected).isEmpty)
        var plain = t.profile
        plain.stateGroups = []
        #expect(!a.snapping(to: expected, profile: plain).answerDifferences(from: expected).isEmpty)
        #expect(throws: ConfigError.self) {
            try Self.target(
                Self.mapped(
                    #"{"products": {"each": "/p", "key": "/id", "state": {"pointer": "/s", "values": {"x": ["active", "expired"]}}}}"#
                ))
        }
    }

    /// An entry the backend says is not active may leave out its end and its owner, which are compared only while
    /// active (the Ruby trial's `{"status": "billing_issue"}` stopped send and the doctor's clock line with a
    /// mapping error); an active entry, or one whose activity is read off the end, still needs them.
    @Test func anInactiveEntryMayLeaveOutItsEndAndItsOwner() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "/entitlements", "key": "@key", "state": {"pointer": "/status", "values": {"billing_issue": "billing-retry", "on": "active"}}, "expiresDate": {"pointer": "/until", "format": "iso8601"}, "ownership": {"pointer": "/source", "values": {"purchase": "PURCHASED"}}}}"#
            ))
        let lapsed = try t.mapping!.answer(
            from: Data(#"{"entitlements": {"pro": {"status": "billing_issue"}}}"#.utf8), at: 0)
        #expect(lapsed.entitlements.first?.active == false && lapsed.entitlements.first?.state == .billingRetry)
        #expect(throws: AnswerMapping.Mismatch.self) {
            try t.mapping!.answer(from: Data(#"{"entitlements": {"pro": {"status": "on"}}}"#.utf8), at: 0)
        }
        let offTheEnd = try Self.target(
            Self.mapped(#"{"entitlements": {"each": "/entitlements", "key": "@key", "expiresDate": "/until"}}"#))
        #expect(throws: AnswerMapping.Mismatch.self) {
            try offTheEnd.mapping!.answer(from: Data(#"{"entitlements": {"pro": {}}}"#.utf8), at: 0)
        }
    }

    /// An ISO date the calendar does not have is no date (it was moved to the next day: a backend's `2027-02-30`
    /// read as March 2nd, and `send --at 2027-02-29T…` bought on March 1st).
    @Test(arguments: [
        ("2028-02-29T10:00:00Z", true), ("2027-02-29T10:00:00Z", false), ("2027-04-31T00:00:00Z", false),
        ("2027-01-31T24:00:00Z", false), ("2027-01-31T23:59:60Z", false), ("2027-01-31T10:00:00.5+02:00", true),
        // The offsets other languages write (PHP's DATE_ISO8601, strftime's %z), a space for the T (RFC 3339).
        ("2027-12-05T10:00:00+0530", true), ("2027-12-05T10:00:00-05", true), ("2027-12-05 10:00:00Z", true),
        ("2027-12-05T10:00:00+25:00", false), ("2027-12-05T10:00:00+05:99", false), ("2027-12-05T10:00:00+053", false),
    ])
    func anInstantTheCalendarDoesNotHaveIsRefused(text: String, isInstant: Bool) {
        #expect((AnswerMapping.iso8601(text) != nil) == isInstant)
        if text.hasSuffix("+0530") {
            #expect(AnswerMapping.iso8601(text) == AnswerMapping.iso8601("2027-12-05T04:30:00Z"))
        }
    }

    /// What the backend wrote, however wrong, is the backend's fault: an epoch in seconds past Int64 once made
    /// milliseconds (it trapped), a string of such digits, and a body that is not JSON at all are wrong answers, not a
    /// target file to fix.
    @Test func anAbsurdOrUnreadableAnswerIsTheBackendsFault() throws {
        let t = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "/data", "key": "/id", "active": "/on", "expiresDate": {"pointer": "/until", "format": "epoch-s"}}}"#
            ))
        for until in ["9.5e15", "-9.5e15", #""9500000000000000""#, "1e300"] {
            #expect {
                try t.mapping!.answer(
                    from: Data(#"{"data": [{"id": "pro", "on": true, "until": \#(until)}]}"#.utf8), at: 0)
            } throws: { error in
                let m = error as? AnswerMapping.Mismatch
                return m?.message.contains("answer.entitlements.expiresDate") == true && m?.isWrongAnswer == true
            }
        }
        for body in ["<html><body>500 Internal Server Error</body></html>", #"{"data": ["#, "NaN"] {
            #expect {
                try t.mapping!.answer(from: Data(body.utf8), at: 0)
            } throws: { error in
                (error as? AnswerMapping.Mismatch)?.isWrongAnswer == true
            }
        }
    }

    /// An entitlements route without {at} can only be asked about the backend's present: no questions in hindsight,
    /// unless the file says the backend answers for any instant its clock header names.
    @Test func aRouteWithoutAtIsAskedAboutItsPresentOnly() throws {
        let body = Self.mapped(#"{"entitlements": {"each": "", "one": "p", "active": "/a"}}"#)
        let plain = try Self.target(body)
        #expect(!plain.profile.questionsInHindsight)
        #expect(plain.profile.description.contains("present only"))
        let at = try Self.target(body.replacingOccurrences(of: #""path": "/e""#, with: #""path": "/e?t={at:iso}""#))
        #expect(at.profile.questionsInHindsight)
        // A time in a header is the backend's clock, its "now": still a backend of the present.
        let clock = try Self.target(
            body.replacingOccurrences(
                of: #""path": "/e""#, with: #""path": "/e", "headers": {"X-Test-Now": "{at:iso}"}"#))
        #expect(!clock.profile.questionsInHindsight)
        let said = try Self.target(
            Self.mapped(
                #"{"entitlements": {"each": "", "one": "p", "active": "/a"}}"#, extra: #""questionsInHindsight": true,"#
            ))
        #expect(said.profile.questionsInHindsight)
    }

    /// `http://[::1]:PORT` is the IPv6 loopback as URLs write it; any other address stays refused.
    @Test func aTargetMayNameTheIPv6Loopback() throws {
        let body = Self.mapped(#"{"entitlements": {"each": "", "one": "p", "active": "/a"}}"#)
        let t = try Self.target(body.replacingOccurrences(of: "http://127.0.0.1:9", with: "http://[::1]:8123"))
        #expect(t.host == "::1" && t.port == 8123)
        #expect(throws: ConfigError.self) {
            try Self.target(body.replacingOccurrences(of: "http://127.0.0.1:9", with: "http://[::2]:8123"))
        }
    }

    @Test func badMappingsAreRefusedNamingTheKey() {
        do {
            _ = try Self.target(
                Self.mapped(
                    #"{"entitlements": {"each": "subscriber", "key": "@key", "expiresDate": {"pointer": "/e", "format": "rfc2822"}, "colour": 1}}"#,
                    extra: #""answers": ["entitlements.active", "entitlements.state"], "#))
            Issue.record("accepted")
        } catch {
            let keys = error.problems.map(\.key)
            #expect(keys.contains("answer.entitlements.each"))
            #expect(keys.contains("answer.entitlements.expiresDate.format"))
            #expect(keys.contains("answer.entitlements.colour"))
            #expect(keys.contains("answers"))  // entitlements.state is declared but not mapped
        }
        #expect(throws: ConfigError.self) { try Self.target(Self.mapped(#"{"entitlements": {"each": "/a~2b"}}"#)) }
        // One mistake, one problem: a mapping written as an array maps nothing, and neither "the list is empty" nor
        // the routes of channels the file did not declare are added to it.
        do {
            _ = try Self.target(
                Self.mapped(#"[{"each": "", "one": "p", "active": "/a"}]"#, extra: #""channels": ["app-transaction"],"#)
            )
            Issue.record("accepted")
        } catch {
            #expect(error.problems.map(\.key) == ["answer"], "\(error)")
        }
    }

    @Test func aTargetWithoutSomeChannelsNeedsNoRouteForThem() throws {
        let t = try Self.target(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction", "notification"],
             "answers": ["entitlements.active"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "notification": {"method": "POST", "path": "/n"}, "entitlements": {"method": "GET", "path": "/e"}}}
            """#)
        #expect(t.profile.channels == [.app, .notification])
        #expect(t.mapping == nil)
    }

    /// The example backend's subscriber-record route, checked through the mapping; a wrong pointer is a
    /// configuration error naming the key, not a validator failure.
    @Test(
        .long,
        .enabled(
            if: ExampleBackendTests.built != nil, ExampleBackendTests.notBuilt))
    func theExampleBackendPassesThroughItsMappedRoute() throws {
        let (p, plain) = try ExampleBackendTests.start(slot: 8)
        defer { p.killAndWait() }
        func mappedTarget(_ each: String) throws -> HTTPValidator.Target {
            try Self.target(
                #"""
                {"baseURL": "http://127.0.0.1:\#(plain.port)", "channels": ["app-transaction", "notification", "api-snapshot"],
                 "routes": {"reset": {"method": "POST", "path": "/iapcheck/reset"},
                            "appTransaction": {"method": "POST", "path": "/apple/app-transactions"},
                            "notification": {"method": "POST", "path": "/apple/notifications"},
                            "apiSnapshot": {"method": "POST", "path": "/apple/api-snapshots"},
                            "entitlements": {"method": "GET", "path": "/v1/subscribers/{userId}?at={at}"}},
                 "answer": {"entitlements": {"each": "\#(each)", "key": "@key",
                            "expiresDate": {"pointer": "/expires_date", "format": "iso8601"}}}}
                """#)
        }
        var o = CheckOptions()
        o.cases = 60
        o.drawsCatalogs = true
        let good = HTTPValidator(target: try mappedTarget("/subscriber/entitlements"), name: "http:mapped", timeout: 10)
        let report = Checker(options: o, validator: good).run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        let broken = HTTPValidator(
            target: try mappedTarget("/subscriber/entitlementz"), name: "http:broken", timeout: 10)
        let failed = Checker(options: o, validator: broken).run()
        let f = try #require(failed.failure?.validatorFailure)
        #expect(f.kind == .misconfigured)
        #expect(f.message.contains("answer.entitlements.each"))
    }
}

/// A backend that answers 404 for an account it never saw (a common REST convention) is not a failure when the
/// target says so: `"nothing": [404]` on the entitlements route reads it as an empty answer (the Go trial's backend
/// failed its first run with `bad-answer` for a user who held nothing). Other routes cannot take the key, and a 2xx
/// cannot be in it.
@Suite struct NothingStatusTests {
    static func target(
        port: Int, entitlements: String, app: String = #"{"method": "POST", "path": "/a"}"#
    ) throws(ConfigError) -> HTTPValidator.Target {
        try AnswerMappingTests.target(
            """
            {"baseURL": "http://127.0.0.1:\(port)", "channels": ["app-transaction"],
             "routes": {"appTransaction": \(app),
                        "entitlements": \(entitlements)},
             "answer": {"entitlements": {"each": "/features", "key": "/name", "active": "/active"}}}
            """)
    }

    @Test func aStatusThatMeansNothingIsAnEmptyAnswer() throws {
        let server = try LoopbackHTTPServer(port: 0) { _ in
            .init(status: 404, text: #"{"error": {"code": "unknown_account"}}"# + "\n")
        }
        server.start()
        defer { server.stop() }
        let declared = try Self.target(
            port: server.port, entitlements: #"{"method": "GET", "path": "/u/{userId}", "nothing": [404]}"#)
        let v = HTTPValidator(target: declared, name: "http:nothing", timeout: 5)
        let answer = try v.entitlements(EntitlementQuery(userId: "u2", at: 0))
        #expect(answer == EntitlementAnswer())
        let plain = try Self.target(port: server.port, entitlements: #"{"method": "GET", "path": "/u/{userId}"}"#)
        #expect {
            try HTTPValidator(target: plain, name: "http:plain", timeout: 5).entitlements(
                EntitlementQuery(userId: "u2", at: 0))
        } throws: {
            // The body is quoted without its line end (shown escaped, it read as part of the answer).
            ($0 as? ValidatorFailure)?.kind == .badAnswer && ($0 as? ValidatorFailure)?.message.hasSuffix("}}") == true
                && ($0 as? ValidatorFailure)?.fix?.contains(#""nothing": [404]"#) == true
        }
        // A crash (5xx) or a redirect read as "nothing" would pass where the user holds nothing; 204 may say it.
        for statuses in [#"["2xx"]"#, "[200, 404]", "[500]", #"["5xx"]"#, "[301]"] {
            let route = #"{"method": "GET", "path": "/u/{userId}", "nothing": \#(statuses)}"#
            #expect(throws: ConfigError.self, "\(statuses)") { try Self.target(port: 9, entitlements: route) }
        }
        _ = try Self.target(
            port: 9, entitlements: #"{"method": "GET", "path": "/u/{userId}", "nothing": [204, "4xx"]}"#)
        #expect(throws: ConfigError.self) {
            try AnswerMappingTests.target(
                """
                {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"],
                 "routes": {"appTransaction": {"method": "POST", "path": "/a", "nothing": [404]},
                            "entitlements": {"method": "GET", "path": "/u/{userId}"}}}
                """)
        }
    }
}

/// A mistyped entitlements route answers 404: without "nothing" the doctor names the route (it printed
/// `Optional(404)`), with it the doctor's "never in the answer" says what it read as holding nothing.
@Suite struct NothingInTheDoctorTests {
    @Test func theDoctorSaysWhichStatusItReadAsNothing() throws {
        let server = try LoopbackHTTPServer(port: 0) { r in
            r.path.hasPrefix("/u/") ? .init(status: 404, text: "no such route") : .init(status: 200, text: "{}")
        }
        server.start()
        defer { server.stop() }
        func doctor(_ entitlements: String) throws -> Doctor.Report {
            let target = try NothingStatusTests.target(port: server.port, entitlements: entitlements)
            let v = HTTPValidator(target: target, name: "http:typo", timeout: 5)
            return Doctor(validator: v, catalog: Catalog.standard.withEntitlements(), policy: .default).run()
        }
        let plain = try doctor(#"{"method": "GET", "path": "/u/{userId}"}"#)
        #expect(plain.text.contains("answered 404") && !plain.text.contains("Optional"), "\(plain.text)")
        let nothing = try doctor(#"{"method": "GET", "path": "/u/{userId}", "nothing": [404]}"#)
        #expect(nothing.text.contains("read as holding nothing"), "\(nothing.text)")
    }
}

/// An app that posts the transaction id alone, for a backend that asks Apple's API: `{transactionId}` and
/// `{originalTransactionId}` fill an app route's template from the token (the API trial could not describe it).
@Suite struct TransactionIdPlaceholderTests {
    @Test func anAppRouteMaySendTheIdsAlone() throws {
        let bodies = Locked<[String]>([])
        let server = try LoopbackHTTPServer(port: 0) { r in
            bodies.withLock { $0.append(String(decoding: r.body, as: UTF8.self)) }
            return .init(status: 200, text: "{}")
        }
        server.start()
        defer { server.stop() }
        let target = try NothingStatusTests.target(
            port: server.port, entitlements: #"{"method": "GET", "path": "/u/{userId}"}"#,
            app:
                #"{"method": "POST", "path": "/a", "body": {"json": {"id": "{transactionId}", "chain": "{originalTransactionId}"}}}"#
        )
        let v = HTTPValidator(target: target, name: "http:ids", timeout: 5)
        let tx = Build.transaction("2000000000000007", chain: "2000000000000001")
        let signed = ArtifactRenderer(pki: TestPKI.harness, appAppleId: Catalog.standard.appAppleId).render(
            .appTransaction(AppTransactionSubmission(userId: "u1", transaction: tx, deviceTime: nil)))
        _ = try v.deliver(signed, now: Build.t0)
        #expect(bodies.value == [#"{"chain":"2000000000000001","id":"2000000000000007"}"#], "\(bodies.value)")
    }
}
