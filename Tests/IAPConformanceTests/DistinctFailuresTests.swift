import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// `--keep-going` and certify find every distinct bug in one run, each shrunk once, repeats counted into it.
@Suite struct DistinctFailuresTests {
    /// Two independent mistakes: grace periods ignored (docs/mistakes.md J5) and every delivery of a consumable
    /// credited (J9).
    final class TwoBugs: ReferenceValidator, @unchecked Sendable {
        var deliveries = 0
        override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload)
            -> Millis?
        { nil }
        override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            try super.reset(config)
            deliveries = 0
        }
        override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
            deliveries += 1
            var copy = tx
            copy.transactionId += "#\(deliveries)"
            super.creditConsumable(copy, via: channel)
        }
    }

    static func isGrace(_ s: FailureSignature) -> Bool {
        s.productKind == "auto-renewable" && ["active", "state", "expiresDate"].contains(s.field ?? "")
    }
    static func isDoubleCredit(_ s: FailureSignature) -> Bool { s.field == "balance" && s.productKind == "consumable" }

    func options(keepGoing: Int) -> CheckOptions {
        var o = CheckOptions()
        o.cases = 200
        o.seed = 7
        o.keepGoing = keepGoing
        o.shrinkBudget.maxAttempts = 300
        return o
    }

    @Test(.long) func keepGoingReportsBothBugsEachOnce() {
        let report = Checker(options: options(keepGoing: 5), validator: TwoBugs()).run()
        let signatures = report.failures.map(\.signature)
        #expect(signatures.contains(where: Self.isGrace), "\(signatures)")
        #expect(signatures.contains(where: Self.isDoubleCredit), "\(signatures)")
        #expect(Set(signatures).count == signatures.count, "a signature listed twice: \(signatures)")
        // Repeats are counted into the failure they match, not shrunk again.
        #expect(
            report.failures.map(\.occurrences).reduce(0, +) + report.unshrunkFailures == report.cases - report.passed)
        #expect(report.failures.map(\.occurrences).reduce(0, +) > report.failures.count)
    }

    /// Answers as if it had hung: every delivery "times out".
    final class TimesOut: Validator {
        let inner = ReferenceValidator()
        var name: String { "times-out" }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
        func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            throw ValidatorFailure(.timedOut, "no reply within 0 s")
        }
        func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            try inner.entitlements(query)
        }
    }

    /// A hang ends the run at once, `--keep-going` or not, on one job or several: no case waits on it again.
    @Test(arguments: [1, 2])
    func aHangEndsAKeepGoingRun(jobs: Int) {
        var o = options(keepGoing: 5)
        o.cases = 60
        o.jobs = jobs
        var checker = Checker(options: o, validator: TimesOut())
        checker.makeWorker = { TimesOut() }
        let report = checker.run()
        #expect(report.failures.count == 1 && report.failure?.validatorFailure?.kind == .timedOut)
        #expect(report.cases == report.passed + 1, "\(report.cases - report.passed - 1) cases run after a hang")
    }

    /// A missing chain check is one bug per channel, whatever product and event the forged token came with; a
    /// signature written with them (an older baseline) is read without them and still matches.
    @Test func aForgeryAcceptedIsOneFailurePerClassAndChannel() throws {
        var o = options(keepGoing: 8)
        o.cases = 120
        o.shrinkBudget.maxAttempts = 60
        let report = Checker(options: o, validator: Mutants.named("skip-chain")!.make()).run()
        let forged = report.failures.map(\.signature).filter(\.acceptsWhatMustBeRefused)
        #expect(!forged.isEmpty, "\(report.failures.map(\.signature))")
        #expect(forged.allSatisfy { $0.productKind == nil && $0.event == nil && $0.channel != nil }, "\(forged)")
        #expect(Set(forged.map { "\($0.difference) \($0.channel ?? "")" }).count == forged.count, "\(forged)")

        let old =
            #"{"difference":"accepted a forged artifact (untrusted-root)","productKind":"consumable","#
            + #""channel":"app","event":"app transaction PURCHASE"}"#
        let read = try JSONDecoder().decode(FailureSignature.self, from: Data(old.utf8))
        #expect(read.productKind == nil && read.event == nil && read.channel == "app")
        #expect(read.description == "accepted a forged artifact (untrusted-root), channel app")
        // Two entries an older iapcheck wrote apart are one now, with both reasons.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("b-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let entry = { (kind: String, reason: String) in
            #"{"signature": {"difference": "accepted a forged artifact (untrusted-root)", "productKind": "\#(kind)", "channel": "app", "event": "app transaction PURCHASE"}, "reason": "\#(reason)"}"#
        }
        try Data(#"{"version": 1, "entries": [\#(entry("consumable", "a")), \#(entry("auto-renewable", "b"))]}"#.utf8)
            .write(to: file)
        let baseline = try Baseline.load(path: file.path)
        #expect(baseline.entries.map(\.reason) == ["a; b"])
        let answer = #"{"difference":"entitlement disagreement","field":"active","productKind":"consumable"}"#
        #expect(try JSONDecoder().decode(FailureSignature.self, from: Data(answer.utf8)).productKind == "consumable")
    }

    @Test func withoutKeepGoingTheFirstFailureEndsTheRun() {
        let report = Checker(options: options(keepGoing: 1), validator: TwoBugs()).run()
        #expect(report.failures.count == 1)
        #expect(report.cases == report.passed + 1)
    }

    /// With `--jobs`, failures are picked in index order and shrunk side by side on every validator.
    @Test(.long) func jobsFindTheSameFailures() {
        var o = options(keepGoing: 3)
        o.jobs = 2
        var checker = Checker(options: o, validator: TwoBugs())
        checker.makeWorker = { TwoBugs() }
        let parallel = checker.run()
        let single = Checker(options: options(keepGoing: 3), validator: TwoBugs()).run()
        #expect(parallel.failures.map(\.caseIndex) == single.failures.map(\.caseIndex))
        #expect(parallel.failures.map(\.signature) == single.failures.map(\.signature))
        #expect(parallel.failures.map(\.occurrences) == single.failures.map(\.occurrences))
        // Shrunk side by side on both validators: the same counterexample in the same number of attempts.
        #expect(parallel.failures.map(\.shrunk) == single.failures.map(\.shrunk))
        #expect(parallel.failures.map(\.shrinkAttempts) == single.failures.map(\.shrinkAttempts))
        #expect(parallel.cases == single.cases && parallel.passed == single.passed)
    }

    @Test(.long) func certifyGroupsEachBugOnceWithThePropertiesItWasSeenUnder() {
        let r = CertifyRun(scale: 0.2).run(TwoBugs())
        let divergences = r.divergences.filter { $0.kind == .property }
        #expect(Set(divergences.compactMap(\.signature)).count == divergences.count, "\(divergences)")
        let grace = divergences.filter { $0.signature?.contains("auto-renewable") == true }
        let credit = divergences.filter { $0.signature?.contains("field balance, consumable") == true }
        #expect(!grace.isEmpty && !credit.isEmpty, "\(divergences.map { $0.signature ?? "" })")
        // The grace bug shows under several properties: one row lists them all.
        #expect(grace.contains { ($0.seenUnder?.count ?? 0) > 1 }, "\(grace.map { $0.seenUnder ?? [] })")
        let failedProperties = r.properties.filter { !$0.passed }.count
        #expect(divergences.count < failedProperties + r.properties.compactMap(\.moreFailures).joined().count)
    }

    static let binary = BuiltIAPCheck.path

    /// `--keep-going` with no value, with a value after `=` and after a space; each JSON failure names its signature.
    @Test(
        .long,
        .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"),
        arguments: [(["--keep-going"], 5), (["--keep-going=2"], 2), (["--keep-going", "2"], 2), ([], 1)])
    func theCommandLineTakesKeepGoingWithOrWithoutAValue(arguments: [String], limit: Int) throws {
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("kg-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: json) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments =
            [
                "check", "--validator", "mutant:ignore-revocation", "--no-corpus", "--cases", "80", "--quiet", "--json",
                json,
            ]
            + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 1)
        let summary = try JSONDecoder().decode(
            Reports.CheckSummary.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        let found = summary.discrepancies.filter { $0.caseIndex != nil }
        // This mutant shows in more than five ways within 80 cases (docs/check.md#distinct-failures).
        #expect(found.count == limit, "\(found.map { $0.signature ?? "-" })")
        #expect(found.allSatisfy { limit == 1 ? $0.signature == nil : $0.signature != nil })
    }
}
