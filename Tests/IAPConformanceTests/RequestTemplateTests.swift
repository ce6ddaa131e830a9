import Foundation
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPTesting
import IAPValidatorAPI
import Testing

/// Target files' request side: each operation's route as the backend takes it (docs/http-target.md#requests).
@Suite struct RequestTemplateTests {
    static func load(_ json: String) throws -> HTTPValidator.Target {
        let path = Scratch.directory + "template-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    /// The problems a target file has, as `key: message`.
    static func problems(_ json: String) -> [String] {
        do {
            _ = try load(json)
            return []
        } catch let e as ConfigError {
            return e.problems.map { "\($0.key): \($0.message)" }
        } catch {
            return ["\(error)"]
        }
    }

    static let purchase = #"""
        {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"],
         "routes": {
           "appTransaction": {"method": "POST", "path": "/v1/users/{userId}/purchases",
                              "query": {"source": "ios app", "at": "{now:s}"},
                              "headers": {"Authorization": "Bearer test-{job}", "Content-Type": "application/vnd.acme+json"},
                              "body": {"json": {"app_user_id": "{userId}", "fetch_token": "{signedTransaction}",
                                                "device": {"time": "{deviceTime}", "iso": "{deviceTime:iso}"},
                                                "note": "bought at {now} by {userId}", "sandbox": false, "n": 2.5}},
                              "accepted": [200, 201], "refused": ["4xx"], "reason": "/error/detail"},
           "entitlements": {"method": "GET", "path": "/v1/subscribers/{userId}"}}}
        """#

    @Test func aJSONBodyTemplateKeepsEachValuesTypeAndFillsTextAroundPlaceholders() throws {
        let t = try Self.load(Self.purchase)
        let route = try #require(t.routes["appTransaction"])
        var values = RequestValues([
            .userId: .string("a1b2 c3/d4"), .signedTransaction: .string("eyJ.x.y"), .now: .time(1_772_323_262_500),
            .deviceTime: .time(1_772_323_200_000), .job: .string("0"),
        ])
        let (body, type) = try #require(route.renderedBody(values))
        #expect(type == "application/json")
        let o = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(o["app_user_id"] as? String == "a1b2 c3/d4")
        #expect(o["fetch_token"] as? String == "eyJ.x.y")
        let device = try #require(o["device"] as? [String: Any])
        #expect((device["time"] as? NSNumber)?.int64Value == 1_772_323_200_000)
        #expect(device["iso"] as? String == "2026-03-01T00:00:00.000Z")
        #expect(o["note"] as? String == "bought at 1772323262500 by a1b2 c3/d4")
        #expect((o["sandbox"] as? NSNumber).map(StrictJSON.isBool) == true)
        #expect((o["n"] as? NSNumber)?.doubleValue == 2.5)
        // A device that claimed no time: null, not a string.
        values[.deviceTime] = .null
        let (again, _) = try #require(route.renderedBody(values))
        let device2 = try #require(
            (try JSONSerialization.jsonObject(with: again) as? [String: Any])?["device"] as? [String: Any])
        #expect(device2["time"] is NSNull)
        // The path and the query percent-encode what they carry; headers are filled in as they are.
        #expect(route.target(values) == "/v1/users/a1b2%20c3%2Fd4/purchases?at=1772323262.5&source=ios%20app")
        #expect(route.renderedHeaders(values).contains { $0 == ("Authorization", "Bearer test-0") })
    }

    @Test func aFormBodyIsURLEncoded() throws {
        let t = try Self.load(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["notification"],
             "routes": {"notification": {"method": "POST", "path": "/hooks/apple",
                                          "body": {"form": {"payload": "{signedPayload}", "kind": "apple v2"}}},
                        "entitlements": {"method": "GET", "path": "/u/{userId}?t={at:iso}"}}}
            """#)
        let route = try #require(t.routes["notification"])
        let (body, type) = try #require(route.renderedBody(RequestValues([.signedPayload: .string("a+b/c=d")])))
        #expect(type == "application/x-www-form-urlencoded")
        #expect(String(decoding: body, as: UTF8.self) == "kind=apple+v2&payload=a%2Bb%2Fc%3Dd")
        let q = try #require(t.routes["entitlements"])
        #expect(
            q.target(RequestValues([.userId: .string("u1"), .at: .time(0)])) == "/u/u1?t=1970-01-01T00%3A00%3A00.000Z")
    }

    @Test func aRoutesStatusesAndReasonPointerDecideTheVerdict() throws {
        let route = try #require(try Self.load(Self.purchase).routes["appTransaction"])
        #expect(route.verdict(status: 201, body: Data()) == .accepted)
        #expect(route.verdict(status: 202, body: Data()) == nil)  // neither listed: a validator failure
        #expect(
            route.verdict(status: 409, body: Data(#"{"error":{"detail":"seen before"}}"#.utf8))
                == .rejected(reason: "seen before"))
        #expect(route.verdict(status: 422, body: Data("<html>".utf8)) == .rejected(reason: "HTTP 422"))
        #expect(route.verdict(status: 500, body: Data()) == nil)
        // Without statuses: 2xx and 4xx, the reason at /reason.
        let plain = HTTPValidator.Route(method: "POST", path: "/x")
        #expect(plain.verdict(status: 204, body: Data()) == .accepted)
        #expect(plain.verdict(status: 400, body: Data(#"{"reason":"no"}"#.utf8)) == .rejected(reason: "no"))
        #expect(plain.verdict(status: 302, body: Data()) == nil)
    }

    @Test func templatesNamingWhatAnOperationDoesNotHaveAreRefusedWithTheirKey() {
        let problems = Self.problems(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"],
             "routes": {"appTransaction": {"method": "POST", "path": "/p/{signedPayload}",
                                            "headers": {"X-A": "{nope}", "Host": "x"},
                                            "body": {"json": {"t": "{at:days}", "u": "{userId"}, "xml": 1},
                                            "accepted": [200, "7xx"], "refused": [200]},
                        "entitlements": {"method": "GET", "path": "/e/{userId}", "reason": "/r"}}}
            """#)
        let text = problems.joined(separator: "\n")
        #expect(
            text.contains("routes.appTransaction.path: {signedPayload} is not filled in for appTransaction"), "\(text)")
        #expect(text.contains(#"routes.appTransaction.headers["X-A"]: {nope} is not a placeholder"#), "\(text)")
        #expect(text.contains("Host is set by iapcheck"), "\(text)")
        #expect(text.contains("routes.appTransaction.body: one of"), "\(text)")
        #expect(text.contains("routes.appTransaction.accepted[1]"), "\(text)")
        #expect(text.contains("200 is both accepted and refused"), "\(text)")
        #expect(text.contains("routes.entitlements.reason: only a delivery's reply is a verdict"), "\(text)")
    }

    @Test func aTargetWithoutResetRunsEachCaseInIdsOfItsOwnAndAFaketimeClockNeedsAStart() throws {
        let t = try Self.load(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"], "reset": null,
             "routes": {"reset": null, "appTransaction": {"method": "POST", "path": "/p"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}"}}}
            """#.replacingOccurrences(of: #""reset": null,"#, with: ""))
        #expect(!t.resets)
        #expect(HTTPValidator(target: t, name: "t").isolation == .namespace)
        let problems = Self.problems(
            #"""
            {"baseURL": "http://127.0.0.1:9", "clock": "faketime", "clockHeader": "X-Now",
             "routes": {"appTransaction": {"method": "POST", "path": "/p"}, "notification": {"method": "POST", "path": "/n"},
                        "apiSnapshot": {"method": "POST", "path": "/a"}, "legacyReceipt": {"method": "POST", "path": "/l"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}"}}}
            """#)
        #expect(problems.contains { $0.hasPrefix("clock: ") && $0.contains("\"start\"") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("clockHeader: ") }, "\(problems)")
    }

    @Test func aDatesPrecisionIsDeclaredInTheMappingAndCarriedByTheProfile() throws {
        let t = try Self.load(
            #"""
            {"baseURL": "http://127.0.0.1:9", "channels": ["app-transaction"],
             "routes": {"appTransaction": {"method": "POST", "path": "/p"}, "entitlements": {"method": "GET", "path": "/e/{userId}"}},
             "answer": {"entitlements": {"each": "/e", "expiresDate": {"pointer": "/until", "format": "iso8601", "precision": "s"}}}}
            """#)
        #expect(t.profile.datePrecision == 1000)
        #expect(t.profile.description.contains("; dates to the second"))
        #expect(
            Self.problems(
                #"""
                {"baseURL": "http://127.0.0.1:9", "routes": {},
                 "answer": {"entitlements": {"each": "/e", "expiresDate": {"pointer": "/u", "precision": "minutes"}}}}
                """#
            ).contains { $0.hasPrefix("answer.entitlements.expiresDate.precision") })
    }

    @Test func epochSecondsKeepTheMillisecondsOfAnInstant() {
        #expect(RequestValues.seconds(1_772_323_262_000) == "1772323262")
        #expect(RequestValues.seconds(1_772_323_262_500) == "1772323262.5")
        #expect(RequestValues.seconds(1_772_323_262_007) == "1772323262.007")
        #expect(RequestValues.seconds(-1) == "-0.001")
    }
}
