import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPSimulator
import IAPSubprocess
import IAPSupport
import IAPSweeps
import IAPTesting
import IAPValidatorAPI
import PropertyEngine
import Testing

@Suite struct CheckerTests {
    @Test(.long) func theReferenceValidatorPassesEveryProperty() {
        var o = CheckOptions()
        o.cases = 600
        o.seed = 2026
        o.drawsCatalogs = true
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(report.passed == 600)
        #expect(Set(report.coverage.properties.keys) == Set(PropertyName.standard.map(\.rawValue)))
        #expect(report.questions > 600)
    }

    /// Every policy, a share of the cases (`iapcheck-sweeps` runs them whole: Sources/IAPSweeps).
    @Test(arguments: Sweeps.policies)
    func theReferenceValidatorFollowsEveryPolicy(_ policy: Policy) {
        let failures = Sweeps.referenceFollows(policy, cases: Sweep.programmed.count(Sweeps.referenceCases))
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// `--jobs`: the report and the shrunk counterexample do not depend on how many validators ran the cases.
    @Test(.long, arguments: ["entitlement-agreement-mutant", "passing-reference"])
    func jobsDoNotChangeTheReport(_ which: String) throws {
        func report(jobs: Int) -> CheckReport {
            var o = CheckOptions()
            o.cases = 300
            o.seed = 77
            o.jobs = jobs
            let make: () -> any Validator =
                which == "passing-reference"
                ? { CountingReference() } : { Mutants.named("old-period-refund-kills-current")!.make() }
            var checker = Checker(options: o, validator: make())
            checker.makeWorker = make
            return checker.run()
        }
        let one = report(jobs: 1)
        CountingReference.busy.withLock { $0.removeAll() }
        let four = report(jobs: 4)
        if which == "passing-reference" {
            let busy = CountingReference.busy.value.count
            #expect(busy >= 2, "the cases ran on \(busy) validator(s)")
        }
        #expect(one.cases == four.cases && one.passed == four.passed && one.questions == four.questions)
        #expect(one.coverage == four.coverage)
        #expect(one.forgeries == four.forgeries)
        #expect(one.failure?.caseIndex == four.failure?.caseIndex)
        #expect(one.failure?.shrunk == four.failure?.shrunk)
        #expect((one.failure != nil) == (which != "passing-reference"))
        if which != "passing-reference" { #expect(one.cases < 300, "the mutant should fail before the end") }
    }

    /// Every forgery class travels on every channel it applies to — app, notification, API answers, legacy
    /// receipts — and the summary counts it per channel; the reference rejects them all, a validator that trusts
    /// API answers does not.
    @Test(.long) func forgeriesTravelEveryChannelTheyApplyTo() throws {
        var o = CheckOptions()
        o.cases = 300
        o.properties = [.forgeryRejected]
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(report.failure == nil)
        for s in Reports.ForgerySummary.all(report.forgeries) {
            let f = try #require(ForgeryClass(rawValue: s.name))
            let channels = try #require(s.channels)
            #expect(Set(channels.keys) == Set(f.channels.map(\.rawValue)))
            for (channel, count) in channels {
                #expect(count.sent > 0, "\(s.name) was never sent on \(channel)")
                #expect(count.rejected == count.sent, "\(s.name) on \(channel)")
            }
        }
        let trusting = Checker(options: o, validator: Mutants.named("api-answers-unverified")!.make()).run()
        #expect(trusting.failure?.discrepancy?.kind == .verdict)
    }

    @Test func aMutantIsCaughtShrunkAndReplayableFromTheCorpus() throws {
        var o = CheckOptions()
        o.cases = 500
        let mutant = Mutants.named("ignore-revocation")!.make()
        let report = Checker(options: o, validator: mutant).run()
        let f = try #require(report.failure)
        let d = try #require(f.discrepancy)
        #expect(f.shrunk.actionCount <= f.originalActions)
        // What sets a revocationDate: a refund, or the end of a family share (REVOKE).
        let revoking: Set<ScenarioFamily> = [.refund, .familyStopSharing, .familyLeave]
        #expect(f.shrunk.events.contains { revoking.contains($0.family) })

        let dir = Scratch.directory + "iapcheck-corpus-\(UUID().uuidString)"
        let path = try Corpus.save(
            CorpusCase(foundWith: mutant.name, seed: o.seed, caseIndex: f.caseIndex, failure: d, testCase: f.shrunk),
            in: dir)
        let loaded = try Corpus.load(path: path)
        #expect(loaded.testCase == f.shrunk)
        #expect(!CaseRunner.run(loaded.testCase, against: Mutants.named("ignore-revocation")!.make()).isPass)
        #expect(CaseRunner.run(loaded.testCase, against: ReferenceValidator()).isPass)

        let timeline = Timeline.render(f.shrunk, failingStep: f.failingStep)
        #expect(timeline.contains("refunded") || timeline.contains("loses family access"), "\(timeline)")
        #expect(timeline.contains("ask: what may"))
    }

    /// A notification lost for good is shown in the timeline where Apple sent it, so a reader knows what the
    /// validator could not know; one that arrived is not.
    @Test func theTimelineShowsLostNotifications() throws {
        let generator = CaseGenerator(catalog: .standard, policy: .default)
        var shown = 0
        for seed in UInt64(1)...200 {
            let (c, sim) = generator.generate(.orderInsensitivity, ChoiceSource(seed: seed))
            let lost = try #require(c.lost)
            let timeline = Timeline.render(c, failingStep: nil)
            #expect(timeline.components(separatedBy: "✕ lost: notification").count - 1 == lost.count, "\(timeline)")
            var arrived: Set<String> = []
            for case .deliver(let d) in c.steps {
                if case .notification(let n) = d.delivery { arrived.insert(n.notificationUUID) }
            }
            #expect(
                sim.notifications.count == lost.count
                    + sim.notifications.filter { arrived.contains($0.payload.notificationUUID) }.count)
            shown += lost.count
        }
        #expect(shown > 0, "no notification was lost in 200 order-insensitivity cases")
    }

    /// The same seed gives the same run: the same questions, coverage and forgeries when it passes, and when it
    /// fails the same case shrunk to the same bytes in the same number of attempts (shrinking counts attempts, not
    /// seconds).
    @Test(.long) func theSameSeedReproducesTheSameRun() throws {
        var o = CheckOptions()
        o.cases = 60
        let a = Checker(options: o, validator: ReferenceValidator()).run()
        let b = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(a.questions == b.questions && a.coverage == b.coverage && a.forgeries == b.forgeries)
        o.cases = 300
        let m = Mutants.named("old-period-refund-kills-current")!
        let x = try #require(Checker(options: o, validator: m.make()).run().failure)
        let y = try #require(Checker(options: o, validator: m.make()).run().failure)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(x.caseIndex == y.caseIndex && x.shrinkAttempts == y.shrinkAttempts)
        #expect(try encoder.encode(x.shrunk) == encoder.encode(y.shrunk))
    }

    @Test(arguments: [
        "", "{}", #"{"schema":"iapcheck.corpus/99"}"#, #"{"schema":"iapcheck.corpus/1","case":{"property":"nope"}}"#,
        "\u{0}\u{1}",
    ])
    func aCorruptCorpusFileIsReportedByName(_ text: String) {
        let path = Scratch.directory + "corrupt-\(UUID().uuidString).json"
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        #expect {
            try Corpus.load(path: path)
        } throws: { error in
            (error as? ConfigError)?.file == path
        }
    }

    @Test func junitNamesEveryPropertyAndTheFailure() {
        let s = Reports.CheckSummary(
            validator: "mutant:x", seed: 1, cases: 3, passed: 2, questions: 10, seconds: 0.1,
            corpus: .init(replayed: 0, failed: []),
            discrepancies: [
                .init(
                    property: "clock-skew", shrunkEvents: 1, expected: "a", observed: "b", differences: ["d"],
                    timeline: "t", replay: "r")
            ],
            validatorFailures: [],
            coverage: {
                var c = Coverage(); c.properties = ["entitlement-agreement": 2, "clock-skew": 1]; return c
            }())
        let xml = Reports.junit(s)
        #expect(xml.contains("name=\"entitlement-agreement\"/>"))
        #expect(xml.contains("name=\"clock-skew\"><failure"))
        #expect(xml.contains("failures=\"1\" errors=\"0\""))
        // A validator that broke, and a run that did not check every case, are errors, not failures.
        var broken = s
        broken.discrepancies = []
        broken.validatorFailures = [.init(kind: .crashed, message: "exit 139", transcript: [])]
        broken.interrupted = true
        #expect(Reports.junit(broken).contains("failures=\"0\" errors=\"2\""))
    }
}

@Suite struct CertificationTests {
    @Test(.long) func theReferenceIsCertifiedAndAVerificationMutantIsNot() {
        let good = CertifyRun(scale: 0.1).run(ReferenceValidator())
        #expect(good.passed)
        #expect(good.forgeries.count == ForgeryClass.allCases.count)
        let html = CertificationHTML.render(good)
        #expect(
            html.contains("Certified") && html.contains("entitlement-agreement") && html.contains("oversized-token"))

        #expect(good.catalog == .builtIn(.standard))

        // The report names the catalog it certifies, and its replay commands select that catalog again.
        let record = CertificationSuite.CatalogRecord(
            file: "app.storekit", sha256: "0123abcd", catalog: .standard,
            arguments: " --catalog app.storekit --bundle-id com.example.iapcheck")
        var withRecord = CertifyRun(scale: 0.1)
        withRecord.catalogRecord = record
        let bad = withRecord.run(Mutants.named("skip-signature")!.make())
        #expect(!bad.passed)
        #expect(bad.forgeries.contains { $0.name == ForgeryClass.foreignKeySignature.rawValue && !$0.rejected })
        #expect(bad.catalog == record)
        let replays = bad.properties.compactMap(\.counterexample?.replay)
        #expect(!replays.isEmpty && replays.allSatisfy { $0.hasSuffix(record.arguments) }, "\(replays)")
        #expect(CertificationHTML.render(bad).contains("0123abcd"))
    }

    /// A validator that ignores the size limit its app declares (policy tokenSizeLimit) is certified with that
    /// divergence declared, and not without the declaration; without the policy there is nothing to declare.
    @Test(.long) func declaredDivergencesAreListedAndOnlyThoseAreForgiven() {
        let limited = Policy(tokenSizeLimit: 262_144)
        #expect(CertifyRun(scale: 0.1).run(Mutants.named("no-size-limit")!.make()).passed)
        var run = CertifyRun(policy: limited, scale: 0.1)
        run.knownDivergences = ["oversized-token"]
        let declared = run.run(Mutants.named("no-size-limit")!.make())
        #expect(!declared.passed)
        #expect(declared.passedWithDeclaredDivergences)
        #expect(declared.divergences.contains { $0.kind == .forgery && $0.name == "oversized-token" && $0.declared })
        #expect(CertificationHTML.render(declared).contains("Divergences from the reference"))
        run.knownDivergences = ["replayed-notification-uuid"]
        let undeclared = run.run(Mutants.named("no-size-limit")!.make())
        #expect(!undeclared.passedWithDeclaredDivergences)
        #expect(undeclared.declaredButNotObserved == ["replayed-notification-uuid"])
    }
}

/// The reference, remembering which instances checked cases (to see that jobs really ran side by side).
final class CountingReference: ReferenceValidator, @unchecked Sendable {
    static let busy = Locked<Set<ObjectIdentifier>>([])
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        let id = ObjectIdentifier(self)
        Self.busy.withLock { _ = $0.insert(id) }
        try super.reset(config)
    }
}

/// A validator whose answers change between identical runs (real randomness, on purpose).
final class CoinFlipValidator: ReferenceValidator {
    override var name: String { "coin-flip" }
    override func isEntitled(_ s: SubscriptionStatus) -> Bool {
        var g = SystemRandomNumberGenerator()
        return Int.random(in: 0..<4, using: &g) == 0 ? false : super.isEntitled(s)
    }
}

@Suite struct FlakinessTests {
    @Test func aValidatorThatAnswersDifferentlyOnReplayIsReportedFlaky() throws {
        var o = CheckOptions()
        o.cases = 200
        o.signed = false
        o.flakinessReplays = 12
        let report = Checker(options: o, validator: CoinFlipValidator()).run()
        let f = try #require(report.failure)
        let flaky = try #require(f.flaky)
        #expect(Set(flaky.outcomes).count > 1)
    }

    @Test func aDeterministicMutantIsNotFlaky() throws {
        var o = CheckOptions()
        o.cases = 200
        o.signed = false
        let f = try #require(Checker(options: o, validator: Mutants.named("no-grace")!.make()).run().failure)
        #expect(f.flaky == nil)
    }

    @Test func aStopRequestEndsTheRunEarly() {
        var o = CheckOptions()
        o.cases = 1000
        o.signed = false
        o.shouldStop = { true }
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(report.interrupted && report.cases == 0)
    }

    /// The cases are a range, never an array of their indices: any `--cases` runs (it used to allocate eight bytes
    /// a case before the first one, and crashed on large counts).
    @Test func anyNumberOfCasesRunsWithoutListingThem() {
        var o = CheckOptions()
        o.cases = Int.max
        o.signed = false
        o.jobs = 1
        let asked = Locked(0)
        o.shouldStop = {
            asked.withLock {
                $0 += 1
                return $0 > 3
            }
        }
        let report = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(report.interrupted && report.cases == 3 && report.passed == 3)
    }
}

@Suite struct DurableAckPropertyTests {
    static let binary = BuiltIAPCheck.path

    @Test(.long, .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func durableAckCatchesAServerThatAcknowledgesBeforePersisting() throws {
        var o = CheckOptions()
        o.cases = 20
        o.properties = [.durableAck]
        o.shrinkBudget = .init(maxAttempts: 30, maxSeconds: 10)
        let dir = Scratch.directory + "durable-\(UUID().uuidString)"
        let good = SubprocessValidator(command: "\(Self.binary) serve --journal \(dir)-good", timeout: 10)
        defer { good.stop() }
        let ok = Checker(options: o, validator: good).run()
        #expect(
            ok.failure == nil, "\(ok.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        let sloppy = SubprocessValidator(
            command: "\(Self.binary) serve --journal \(dir)-sloppy --ack-before-persist 8", timeout: 10)
        defer { sloppy.stop() }
        let bad = Checker(options: o, validator: sloppy).run()
        #expect(bad.failure?.discrepancy?.property == .durableAck)
    }
}

@Suite struct ParallelDeliveryTests {
    @Test(.long) func theSynchronizedReferenceHasNoRaceAndTheCheckThenActMutantDoes() throws {
        var o = CheckOptions()
        o.cases = 120
        o.properties = [.parallelDelivery]
        let ok = Checker(options: o, validator: SynchronizedReferenceValidator()).run()
        #expect(
            ok.failure == nil, "\(ok.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        o.cases = 400
        let racy = Checker(options: o, validator: Mutants.named("check-then-act-credit")!.make()).run()
        let d = try #require(racy.failure?.discrepancy)
        #expect(d.property == .parallelDelivery)
        #expect(d.differences.contains { $0.contains("balance") })
        // The report marks where the race began and shows the question asked after it, which is none of the case's
        // own (every person is asked a minute after the last delivery).
        let f = try #require(racy.failure)
        let race = try #require(d.race)
        let shown = Timeline.render(f.shrunk, failingStep: f.failingStep, race: race)
        #expect(shown.contains("⇉ from here on, two concurrent clients sent every delivery below"), "\(shown)")
        let asked = shown.split(separator: "\n").filter { $0.contains("ask: what may") }
        let at = CivilTime.relative(race.question.query.at - f.shrunk.origin)
        #expect(asked.count == 1 && asked[0].contains("use at \(at)? (after the race"), "\(shown)")
        #expect(f.explanation.contains("⇉ from here on"))
        #expect(Explanation.lines(d, in: f.shrunk).first?.contains("asked at \(at))") == true)
    }
}

/// Reads a subscription's end from its transaction only, never from the renewal info.
final class ExpiresDateOnly: ReferenceValidator {
    override var name: String { "expires-date-only" }
    override func periodEnd(of tx: JWSTransactionDecodedPayload, chain otid: String) -> Millis? {
        expiry(of: tx)
    }
}

@Suite struct ExtensionPolicyTests {
    /// Under policy extensionSignedAs `renewal-info` an extension moves only the renewal date: the reference keeps
    /// access to it; a validator that reads the transaction's expiresDate alone loses access early and is caught.
    @Test(.long) func anExtensionSignedOnlyInTheRenewalInfoMustBeHonoured() throws {
        var o = CheckOptions()
        o.cases = 600
        o.policy = Policy(extensionSignedAs: .renewalInfo)
        let reference = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(
            reference.failure == nil,
            "\(reference.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) + "\n\($0.outcome)" }.map { String($0.prefix(3000)) } ?? "")"
        )
        let blind = Checker(options: o, validator: ExpiresDateOnly()).run()
        let d = try #require(blind.failure?.discrepancy, "reading expiresDate alone passed")
        #expect(Timeline.render(blind.failure!.shrunk, failingStep: nil).contains("extends"), "\(d)")
        // Under the default, the same validator is right: the transaction carries the new end too.
        o.policy = .default
        #expect(Checker(options: o, validator: ExpiresDateOnly()).run().failure == nil)
    }
}

@Suite struct RetryBytesTests {
    /// Apple re-sends a notification it could not deliver with the same `signedPayload`, byte for byte: every
    /// repeat of a notification UUID in a case reaches the validator as the same bytes (a careful validator may
    /// treat "same UUID, other bytes" as tampering, and must not fail for it).
    @Test func aRepeatedNotificationIsByteIdenticalToTheFirst() throws {
        var repeats = 0
        for seed in UInt64(0)..<300 where repeats < 5 {
            let (c, _) = Fixtures.generated(seed: seed, property: .idempotentDelivery)
            let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
            var first: [String: String] = [:]
            for step in c.steps {
                guard case .deliver(let d) = step, d.forgery == nil, case .notification(let n) = d.delivery,
                    case .notification(let bytes) = renderer.render(d.delivery)
                else { continue }
                if let earlier = first[n.notificationUUID] {
                    #expect(
                        earlier == bytes,
                        "seed \(seed): \(d.label) of \(n.notificationUUID) differs from its first delivery")
                    repeats += 1
                } else {
                    first[n.notificationUUID] = bytes
                }
            }
        }
        #expect(repeats >= 5, "too few repeated notifications to judge")
    }
}
