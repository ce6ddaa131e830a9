import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// `iapcheck doctor` on broken targets: each problem is named, with the fix, and the target is not usable.
@Suite struct DoctorTests {
    static let iapcheck = BuiltIAPCheck.path

    /// A target for the example backend on `port`, with `edit` applied to its JSON text.
    static func target(port: Int, _ edit: (String) -> String = { $0 }) throws -> (String, HTTPValidator.Target) {
        let json = """
            {"baseURL": "http://127.0.0.1:\(port)", "clockHeader": "X-IAPCheck-Now",
             "channels": ["app-transaction", "notification"],
             "routes": {"reset": {"method": "POST", "path": "/iapcheck/reset"},
                        "appTransaction": {"method": "POST", "path": "/apple/app-transactions"},
                        "notification": {"method": "POST", "path": "/apple/notifications"},
                        "entitlements": {"method": "GET", "path": "/v1/subscribers/{userId}?at={at}"}},
             "answer": {"entitlements": {"each": "/subscriber/entitlements", "key": "@key",
                                         "expiresDate": {"pointer": "/expires_date", "format": "iso8601"}}}}
            """
        let path = Scratch.directory + "doctor-\(UUID().uuidString).json"
        // An edit may drop the answer mapping (`answerNot`): the backend then answers in iapcheck's own format.
        var text = edit(json)
        if let answer = text.range(of: #""answerNot""#), let comma = text[..<answer.lowerBound].lastIndex(of: ",") {
            text = String(text[..<comma]) + "}"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return (path, try HTTPValidator.Target.load(path: path))
    }

    static func run(_ target: HTTPValidator.Target) -> Doctor.Report {
        Doctor(
            validator: HTTPValidator(target: target, name: "http:doctor", timeout: 5), catalog: .standard,
            policy: .default
        )
        .run()
    }

    static func problem(_ r: Doctor.Report) -> Doctor.Item? { r.items.first { $0.status == .misconfigured } }

    @Test(.enabled(if: ExampleBackendTests.built != nil, ExampleBackendTests.notBuilt))
    func brokenTargetsAreNamedWithTheirFix() throws {
        let (p, started) = try ExampleBackendTests.start(slot: 16)
        defer { p.killAndWait() }
        let port = started.port

        let (_, good) = try Self.target(port: port)
        let fine = Self.run(good)
        #expect(fine.usable, "\(fine.text)")
        #expect(fine.items.contains { $0.name == "clock" && $0.status == .ok }, "\(fine.text)")

        // A wrong port: nothing answers there.
        let (file, wrongPort) = try Self.target(port: ExampleBackendTests.port(18))
        let unreachable = Self.run(wrongPort)
        #expect(!unreachable.usable)
        #expect(Self.problem(unreachable)?.fix?.contains("\"baseURL\" in \(file)") == true, "\(unreachable.text)")
        // Nothing answered: no latency to show.
        #expect(!unreachable.text.contains("latency"), "\(unreachable.text)")

        // A pointer that finds nothing in the backend's answer.
        let (_, pointer) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "/subscriber/entitlements", with: "/subscriber/entitlementz")
        }
        let badPointer = Self.run(pointer)
        #expect(Self.problem(badPointer)?.detail.contains("answer.entitlements.each") == true, "\(badPointer.text)")
        #expect(Self.problem(badPointer)?.fix?.contains("answer.entitlements.each") == true, "\(badPointer.text)")

        // The backend does not read the clock iapcheck sends (another header; no instant in the path), on a route
        // whose answer says what is active (a mapped expiry would let iapcheck tell that itself).
        let (_, clock) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "X-IAPCheck-Now", with: "X-Our-Now").replacingOccurrences(
                of: "/v1/subscribers/{userId}?at={at}", with: "/users/{userId}/entitlements"
            ).replacingOccurrences(of: #""answer": {"entitlements""#, with: #""answerNot": {"entitlements""#)
        }
        let ignored = Self.run(clock)
        #expect(Self.problem(ignored)?.name == "clock", "\(ignored.text)")
        #expect(Self.problem(ignored)?.fix?.contains("X-Our-Now") == true, "\(ignored.text)")
        #expect(Self.problem(ignored)?.fix?.contains("\"clock\": \"faketime\"") == true, "\(ignored.text)")

        // The same on a route whose expiry iapcheck reads and judges itself (no `active` in the mapping): the backend
        // answers on its own clock, so it lists the purchase even a minute before it was made (a file that says its
        // backend answers about any instant its clock header names).
        let (_, mappedClock) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "X-IAPCheck-Now", with: "X-Our-Now").replacingOccurrences(
                of: "?at={at}", with: ""
            ).replacingOccurrences(of: #"{"baseURL""#, with: #"{"questionsInHindsight": true, "baseURL""#)
        }
        let ignoredToo = Self.run(mappedClock)
        #expect(Self.problem(ignoredToo)?.name == "clock", "\(ignoredToo.text)")
        #expect(Self.problem(ignoredToo)?.detail.contains("a minute before the purchase") == true)
        // Without {at}, the backend is asked about its present only: a purchase listed before it was made is then
        // either the clock or a check it never needs, and the doctor says both without stopping check.
        let (_, present) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "X-IAPCheck-Now", with: "X-Our-Now").replacingOccurrences(
                of: "?at={at}", with: "")
        }
        let presentOnly = Self.run(present)
        let clockItem = presentOnly.items.first { $0.name == "clock" }
        #expect(clockItem?.status == .finding && clockItem?.fix?.contains("X-Our-Now") == true, "\(presentOnly.text)")

        // A route that is not there.
        let (_, route) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "/apple/app-transactions", with: "/apple/app-transaction")
        }
        let missing = Self.run(route)
        #expect(Self.problem(missing)?.detail.contains("POST /apple/app-transaction answered 404") == true)
        #expect(Self.problem(missing)?.fix?.contains("routes.appTransaction") == true, "\(missing.text)")

        // Dates in another format than the file says.
        let (_, format) = try Self.target(port: port) {
            $0.replacingOccurrences(of: "\"format\": \"iso8601\"", with: "\"format\": \"epoch-ms\"")
        }
        let wrongFormat = Self.run(format)
        #expect(Self.problem(wrongFormat)?.fix?.contains("\"format\" of answer.entitlements.expiresDate") == true)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: iapcheck), "iapcheck is not built"))
    func doctorExitsTwoWhenTheTargetCannotBeChecked() throws {
        let (file, _) = try Self.target(port: ExampleBackendTests.port(18))  // nothing listens there
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.iapcheck)
        p.arguments = ["doctor", "--validator", "http:" + file]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 2, "\(text)")
        #expect(text.contains("✗ isolation") || text.contains("✗ reset"), "\(text)")
        #expect(text.contains("not usable: fix the ✗ lines above"), "\(text)")
    }
}

/// A backend that refuses every artifact of a channel (here notifications, for an App Store id of another app) also
/// refuses that channel's forgeries: the doctor must not count those refusals as rejected forgeries.
@Suite struct DoctorForgeryCreditTests {
    /// The reference configured with another App Store id: app transactions pass, notifications are refused.
    final class OtherAppleId: ReferenceValidator, @unchecked Sendable {
        override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            var c = config
            c.catalog.appAppleId += 1
            try super.reset(c)
        }
    }

    @Test func aForgeryRefusedWhereTheGenuineArtifactIsRefusedTooGetsNoCredit() {
        let report = Doctor(validator: OtherAppleId(), catalog: .standard, policy: .default).run()
        let notification = report.items.first { $0.name == "forgery forged-nested-transaction" }
        #expect(notification?.status == .skipped, "\(report.text)")
        #expect(notification?.detail.contains("as the genuine notification") == true, "\(report.text)")
        // The app channel's genuine artifact was accepted: its forgery's refusal counts.
        let app = report.items.first { $0.name == "forgery foreign-key-signature" }
        #expect(app?.status == .ok, "\(report.text)")
        // With the right id, the notification's forgery counts again.
        let right = Doctor(validator: ReferenceValidator(), catalog: .standard, policy: .default).run()
        #expect(right.items.first { $0.name == "forgery forged-nested-transaction" }?.status == .ok, "\(right.text)")
    }
}

/// A catalog without subscriptions still gets its clock checked: on a non-consumable, a minute before and a minute
/// after the purchase. (It used to be skipped, so a backend ignoring the clock header passed the doctor.)
@Suite struct DoctorClockWithoutSubscriptionsTests {
    /// The reference answering every question as of one instant of its own, whatever instant it is asked about.
    final class OwnClock: ReferenceValidator, @unchecked Sendable {
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            let ownNow = CivilTime.days(fromCivil: 2026, 3, 2) * CivilTime.msPerDay
            return try super.entitlements(EntitlementQuery(userId: query.userId, at: ownNow))
        }
    }

    @Test func aNonConsumableShowsWhetherTheBackendReadsTheClock() throws {
        var catalog = Catalog.standard
        catalog.products = catalog.products.filter { $0.kind == .consumable || $0.kind == .nonConsumable }
        catalog.entitlements = nil
        try #require(catalog.products.contains { $0.kind == .nonConsumable })
        let right = Doctor(validator: ReferenceValidator(), catalog: catalog, policy: .default).run()
        let clock = right.items.first { $0.name == "clock" }
        #expect(clock?.status == .ok && clock?.detail.contains("a minute after it") == true, "\(right.text)")
        let own = Doctor(validator: OwnClock(), catalog: catalog, policy: .default).run()
        #expect(own.items.first { $0.name == "clock" }?.status == .misconfigured && !own.usable, "\(own.text)")
    }
}

/// A backend that fails on the simplest purchase (a 500 on every question, a hang on the webhook) cannot be checked:
/// `check` would stop at its first case. The doctor says so with a ✗ and a fix, not a `!` and "usable".
@Suite struct DoctorBlockingFailureTests {
    /// The reference whose questions fail as a backend's 500 does (a clock header it cannot parse).
    final class FailingAnswers: ReferenceValidator, @unchecked Sendable {
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            throw ValidatorFailure(.badAnswer, "entitlements answered HTTP 500: DateTimeParseException")
        }
    }

    /// The reference whose webhook hangs; forgeries on the app route crash it.
    final class HangingWebhook: ReferenceValidator, @unchecked Sendable {
        override func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            if case .notification = d { throw ValidatorFailure(.timedOut, "no complete HTTP response within 3.0 s") }
            return try super.deliver(d, now: now)
        }
    }

    @Test func aFailingAnswerIsAConfigurationProblemAndTheClockIsSaidNotChecked() {
        let report = Doctor(validator: FailingAnswers(), catalog: .standard, policy: .default).run()
        let answer = report.items.first { $0.name == "answer" }
        #expect(answer?.status == .misconfigured && !report.usable, "\(report.text)")
        #expect(answer?.fix?.contains("check would stop at its first case") == true, "\(report.text)")
        #expect(report.items.first { $0.name == "clock" }?.status == .skipped, "\(report.text)")
    }

    @Test func aHangingGenuineDeliveryIsAConfigurationProblem() {
        let report = Doctor(validator: HangingWebhook(), catalog: .standard, policy: .default).run()
        let webhook = report.items.first { $0.name == DeliveryChannel.notification.protocolName }
        #expect(webhook?.status == .misconfigured && !report.usable, "\(report.text)")
        #expect(webhook?.fix?.contains("longer --timeout") == true, "\(report.text)")
    }
}

/// A backend that reads the clock but counts a purchase before its purchaseDate: its answers change at the expiry, so
/// the clock is read; being active a minute before the purchase is a finding for check, not a ✗ that sends the user
/// to libfaketime or a clock header (a PyJWT backend's first run was stopped so). Asked about its present only, the
/// validator is never asked about that minute.
@Suite struct DoctorPurchaseDateTests {
    final class IgnoresPurchaseDate: ReferenceValidator, @unchecked Sendable {
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            var q = query
            q.at = max(query.at, DoctorScenario.start)
            return try super.entitlements(q)
        }
    }

    @Test func activeBeforeThePurchaseWithTheExpiryFollowedIsAFinding() {
        let report = Doctor(validator: IgnoresPurchaseDate(), catalog: .standard, policy: .default).run()
        let clock = report.items.first { $0.name == "clock" }
        #expect(clock?.status == .finding, "\(report.text)")
        #expect(clock?.detail.contains("before its purchaseDate") == true, "\(report.text)")
        #expect(report.usable, "\(report.text)")
    }
}

/// A verifier that judges certificates at its own clock (jwt-kit's default) refuses genuine tokens whose leaf has
/// since expired: a bug check shows case by case, not a setting to fix, so the doctor says what it is and lets check
/// run (it used to send the user to the bundle id and the root with a ✗).
@Suite struct DoctorCertificateDatesTests {
    final class WallClockDates: ReferenceValidator, @unchecked Sendable {
        override func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            .rejected(reason: "certificate 'Test Leaf' has expired: notValidAfter 2026-04-01 is before now")
        }
    }

    @Test func aRefusalForACertificatesDatesIsAFindingThatNamesSignedDate() {
        let report = Doctor(validator: WallClockDates(), catalog: .standard, policy: .default).run()
        let app = report.items.first { $0.name == DeliveryChannel.app.protocolName }
        #expect(app?.status == .finding, "\(report.text)")
        #expect(app?.fix?.contains("at the payload's signedDate") == true, "\(report.text)")
        #expect(!report.items.contains { $0.status == .misconfigured }, "\(report.text)")
    }
}

/// A backend whose requests take a third of the request timeout or more is told so before any case: among the
/// thousands of requests of a check, the slowest time out and read as the backend's failure.
@Suite struct DoctorSpeedTests {
    /// The reference taking 30 ms over every delivery.
    final class Slow: ReferenceValidator, @unchecked Sendable {
        override func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            usleep(30_000)
            return try super.deliver(delivery, now: now)
        }
    }

    @Test func aSlowRequestIsNamedWithTheTimeoutItNears() {
        var slow = Doctor(validator: Slow(), catalog: .standard, policy: .default)
        slow.hints.timeout = 0.06
        let report = slow.run()
        let speed = report.items.first { $0.name == Doctor.speedItem }
        #expect(speed?.status == .finding && report.usable, "\(report.text)")
        #expect(speed?.detail.contains("of the 0.06 s --timeout") == true, "\(report.text)")
        // The same requests well within a generous timeout, or without one, say nothing.
        var roomy = Doctor(validator: Slow(), catalog: .standard, policy: .default)
        roomy.hints.timeout = 5
        #expect(!roomy.run().items.contains { $0.name == Doctor.speedItem })
        #expect(
            !Doctor(validator: Slow(), catalog: .standard, policy: .default).run().items.contains {
                $0.name == Doctor.speedItem
            })
    }
}

/// What a Java verifier on PKIX met in the doctor (the trial of a validator nobody on the team wrote): a forgery it
/// accepted was asked about by the clock check, which then blamed the clock and stopped check; a refusal for a
/// revocation check or a DER-read signature was sent to the bundle id and the root; and with no genuine artifact
/// accepted the later checks were left out without a word.
@Suite struct DoctorForeignVerifierTests {
    @Test func anAcceptedForgeryDoesNotChangeWhatTheClockCheckReads() {
        // Verifies nothing nested in a notification: the forged purchase inside (it never ends) counts.
        let nested = Mutants.named("nested-jws-unverified")!.make()
        let report = Doctor(validator: nested, catalog: .standard, policy: .default).run()
        #expect(report.items.contains { $0.name.hasPrefix("forgery") && $0.status == .finding }, "\(report.text)")
        #expect(report.items.first { $0.name == "clock" }?.status == .ok, "\(report.text)")
        #expect(report.usable, "\(report.text)")
    }

    final class Refuses: ReferenceValidator, @unchecked Sendable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        override func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            .rejected(reason: reason)
        }
    }

    @Test(arguments: [
        (
            "java.security.cert.CertPathValidatorException: Could not determine revocation status",
            "setRevocationEnabled"
        ),
        ("java.security.SignatureException: Invalid encoding for signature", "64 bytes, r then s"),
        ("bundle id com.other.app is not this app's", "configure it for bundle id"),
        ("signature does not match the header", "configure it for bundle id"),
    ])
    func aRefusalNamingItsCauseGetsTheFixForIt(reason: String, fix: String) {
        let report = Doctor(validator: Refuses(reason), catalog: .standard, policy: .default).run()
        let app = report.items.first { $0.name == DeliveryChannel.app.protocolName }
        #expect(app?.status == .misconfigured && app?.fix?.contains(fix) == true, "\(report.text)")
        for probe in ["forgery", "clock", "answer"] {
            #expect(
                report.items.first { $0.name == probe }?.detail.contains("no genuine artifact was accepted") == true,
                "\(report.text)")
        }
    }
}

/// A response mapped as about one entry the file names (`"one": "premium"`) cannot answer for the catalog's other
/// entries: a ✗ before any request, naming them (the Go trial's flat tier answer was reported as the backend's bug).
@Suite struct DoctorOneEntryMappingTests {
    @Test func anAnswerAboutOneNamedEntryOfSeveralIsAConfigurationProblem() throws {
        let catalog = Catalog.standard.withEntitlements()
        let ids = try #require(catalog.entitlements?.map(\.id))
        try #require(ids.count > 1)
        func doctor(_ one: String) throws -> Doctor.Report {
            let target = try AnswerMappingTests.target(
                AnswerMappingTests.mapped(#"{"entitlements": {"each": "", "one": "\#(one)", "active": "/active"}}"#))
            let v = HTTPValidator(target: target, name: "http:one", timeout: 1)
            return Doctor(validator: v, catalog: catalog, policy: .default).run()
        }
        let report = try doctor(ids[0])
        let line = report.items.first { $0.name == "mapping" }
        #expect(line?.status == .misconfigured && line?.detail.contains(ids[1]) == true, "\(report.text)")
        #expect(!report.usable)
    }
}
