import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Synchronization
import Testing

/// `CheckRun`, the whole `check` as a library call: the counterexample saved and replayed from the corpus, the
/// verdict, and the text a user reads.
@Suite struct CheckRunTests {
    static func run(
        _ v: any Validator, corpus: String?, cases: Int = 40, keepGoing: Int = 1, baseline: Baseline? = nil,
        jobs: Int = 1, make: (() -> any Validator)? = nil, shouldStop: @escaping @Sendable () -> Bool = { false },
        shrinkAttempts: Int? = nil
    ) throws -> (CheckRunReport, [String]) {
        var o = CheckOptions()
        if let shrinkAttempts { o.shrinkBudget.maxAttempts = shrinkAttempts }
        o.cases = cases
        o.keepGoing = keepGoing
        o.jobs = jobs
        o.seed = 3
        o.shouldStop = shouldStop
        var checker = Checker(options: o, validator: v)
        checker.makeWorker = make
        var run = CheckRun(validator: "mutant:ignore-revocation", checker: checker)
        run.corpus = corpus
        run.baseline = baseline
        var lines: [String] = []
        let report = try run.run { lines.append($0) }
        return (report, lines)
    }

    @Test(.long) func aFailureIsSavedThenReplayedFromTheCorpus() throws {
        let dir = Scratch.url.appendingPathComponent("checkrun-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mutant = Mutants.named("ignore-revocation")!
        let (first, text) = try Self.run(mutant.make(), corpus: dir, cases: 600)
        #expect(first.verdict == .discrepancy)
        let saved = try #require(first.summary.discrepancies.first?.corpusFile)
        #expect(Corpus.files(in: dir) == [saved])
        #expect(text.contains { $0.hasPrefix("FAIL ") && $0.contains("disagrees with the oracle") })
        #expect(
            text.contains { $0.contains("replay:   iapcheck replay \(saved) --validator mutant:ignore-revocation") })

        // The same mutant again: the saved case fails from the corpus before any generated case runs.
        let (again, againText) = try Self.run(mutant.make(), corpus: dir, cases: 0)
        #expect(again.summary.corpus.replayed == 1)
        #expect(again.summary.corpus.failed == [saved])
        #expect(again.verdict == .discrepancy)
        #expect(againText.first?.contains("(corpus \(saved))") == true)

        // The reference passes the saved case.
        let (fixed, _) = try Self.run(ReferenceValidator(), corpus: dir, cases: 20)
        #expect(fixed.verdict == .pass)
        #expect(fixed.summary.corpus.replayed == 1 && fixed.summary.corpus.failed.isEmpty)
        #expect(fixed.summary.run?.totalCases == 20)
    }

    /// A bug is shrunk once per run: generated cases failing as a saved counterexample does are counted into it.
    @Test(.long) func aBugSavedInTheCorpusIsCountedNotShrunkAgain() throws {
        let dir = Scratch.url.appendingPathComponent("checkrun-again-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mutant = Mutants.named("ignore-revocation")!
        let (first, _) = try Self.run(mutant.make(), corpus: dir, cases: 600)
        let saved = try #require(first.summary.discrepancies.first?.corpusFile)
        let (again, text) = try Self.run(mutant.make(), corpus: dir, cases: 600, keepGoing: 3)
        let known = try #require(again.summary.discrepancies.first { $0.corpusFile == saved })
        let signature = try #require(known.signature, "no generated case failed as the saved one: \(text)")
        #expect((known.occurrences ?? 1) > 1)
        #expect(!again.report.failures.contains { $0.signature.description == signature }, "\(text)")
        #expect(text.contains { $0.contains("not shrunk again") }, "\(text)")
    }

    /// Shrink attempts per failure in the baseline tests: each of up to 50 failures is shrunk, and a baseline is about
    /// which signatures are accepted, not how small they get (400 signed attempts each took minutes in a debug build).
    static let baselineShrink = 40

    /// A gate on the backend a team has (docs/check.md#baselines): the signatures it accepts, with reasons, pass;
    /// a new kind of failure fails, named alone; an entry no longer met is named.
    @Test(.long) func aBaselineAcceptsItsSignaturesOnlyAndNamesThoseNotMet() throws {
        let mutant = Mutants.named("ignore-revocation")!
        let (first, _) = try Self.run(
            mutant.make(), corpus: nil, cases: 400, keepGoing: 50, shrinkAttempts: Self.baselineShrink)
        #expect(first.verdict == .discrepancy)
        var baseline = first.baseline
        #expect(!baseline.entries.isEmpty && baseline.entries.allSatisfy { $0.reason.isEmpty })
        for i in baseline.entries.indices { baseline.entries[i].reason = "a judgement call, for the test" }

        let (again, text) = try Self.run(
            mutant.make(), corpus: nil, cases: 400, baseline: baseline, shrinkAttempts: Self.baselineShrink)
        #expect(again.verdict == .pass, "\(text)")
        #expect((again.summary.accepted ?? []).count == baseline.entries.count, "\(text)")
        #expect(text.contains { $0.contains("accepted divergences (the baseline)") && $0.contains("a judgement call") })

        let (other, otherText) = try Self.run(
            Mutants.named("no-grace")!.make(), corpus: nil, cases: 400, keepGoing: 50, baseline: baseline,
            shrinkAttempts: Self.baselineShrink)
        #expect(other.verdict == .discrepancy)
        let accepted = Set(baseline.entries.map(\.signature.description))
        #expect(other.summary.discrepancies.allSatisfy { !accepted.contains($0.signature ?? "") }, "\(otherText)")

        let (fixed, fixedText) = try Self.run(
            ReferenceValidator(), corpus: nil, cases: 60, baseline: baseline, shrinkAttempts: Self.baselineShrink)
        #expect(fixed.verdict == .pass)
        #expect(fixed.summary.baselineNotSeen?.count == baseline.entries.count)
        #expect(fixedText.contains { $0.contains("fixed, or not reached by these cases: remove it only when") })
    }

    /// Ignores refunds (the accepted divergence) and grace periods (a new bug).
    final class RevocationAndGrace: ReferenceValidator, @unchecked Sendable {
        override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool { false }
        override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload)
            -> Millis?
        { nil }
    }

    /// A gate with a baseline and without --keep-going, on one job or several: an accepted failure does not end the
    /// run (on several jobs it used to stop the workers, and the run read as interrupted, exit 130), a run that meets
    /// only accepted failures passes having run every case, and shrinks that end in accepted failures do not use up
    /// what a new bug needs (it used to pass with "failing cases not shrunk").
    @Test(.long, arguments: [1, 2])
    func aBaselineGateRunsEveryCaseAndStillCatchesANewBug(jobs: Int) throws {
        let mutant = Mutants.named("ignore-revocation")!
        let (first, _) = try Self.run(
            mutant.make(), corpus: nil, cases: 400, keepGoing: 50, shrinkAttempts: Self.baselineShrink)
        var baseline = first.baseline
        for i in baseline.entries.indices { baseline.entries[i].reason = "accepted, for the test" }
        let (gate, text) = try Self.run(
            mutant.make(), corpus: nil, cases: 400, baseline: baseline, jobs: jobs, make: { mutant.make() },
            shrinkAttempts: Self.baselineShrink)
        #expect(gate.verdict == .pass && !gate.report.interrupted && gate.report.cases == 400, "\(text)")
        #expect(!text.contains { $0.contains("not met before the run stopped") }, "\(text)")
        let (both, bothText) = try Self.run(
            RevocationAndGrace(), corpus: nil, cases: 400, baseline: baseline, jobs: jobs,
            make: { RevocationAndGrace() }, shrinkAttempts: Self.baselineShrink)
        #expect(both.verdict == .discrepancy, "\(bothText)")
        let accepted = Set(baseline.entries.map(\.signature.description))
        #expect(both.summary.discrepancies.contains { !accepted.contains($0.signature ?? "") }, "\(bothText)")
    }

    /// Ignores refunds of transactions whose id ends in an even digit: the accepted bug, in some cases only.
    final class RevocationSometimes: ReferenceValidator, @unchecked Sendable {
        override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool {
            (tx.transactionId.utf8.last.map { $0 % 2 == 0 } ?? false) ? false : super.isRevoked(tx, at: t)
        }
    }

    /// A gate over the cases its baseline was written over holds them case by case (docs/check.md#baselines): the
    /// accepted bug spreading to cases that passed then fails the run, shown unshrunk under a signature no entry
    /// accepts, though every one of its signatures is accepted. Over other cases (another seed) the baseline
    /// accepts by signature alone, and says so.
    @Test(.long) func aBaselineGateFailsOnACaseThatPassedWhenItWasWritten() throws {
        let (first, _) = try Self.run(
            RevocationSometimes(), corpus: nil, cases: 300, keepGoing: 50, shrinkAttempts: Self.baselineShrink)
        var baseline = first.baseline
        let written = try #require(baseline.writtenOver)
        #expect(written.casesRun == 300 && written.failing == Set(first.report.failingCases))
        #expect(!first.report.failingCases.isEmpty)
        for i in baseline.entries.indices { baseline.entries[i].reason = "accepted, for the test" }

        let (same, sameText) = try Self.run(
            RevocationSometimes(), corpus: nil, cases: 300, baseline: baseline, shrinkAttempts: Self.baselineShrink)
        #expect(same.verdict == .pass, "\(sameText)")
        #expect(sameText.contains { $0.contains("held case by case against the run that wrote it (seed 3") })
        // What the writing run shrank the gate does not shrink again: a case that failed then, failing as an
        // unshrunk signature whose shrink led to an entry, is counted into it.
        #expect(baseline.entries.contains { !($0.alsoAs ?? []).isEmpty })
        var g = CheckOptions()
        (g.cases, g.seed, g.shrinkBudget.maxAttempts) = (300, 3, Self.baselineShrink)
        var checker = Checker(options: g, validator: RevocationSometimes())
        let shrinks = Mutex(0)
        checker.willShrink = { _, _, _ in shrinks.withLock { $0 += 1 } }
        var gate = CheckRun(validator: "revocation-sometimes", checker: checker)
        gate.baseline = baseline
        #expect(try gate.run { _ in }.verdict == .pass)
        #expect(shrinks.withLock { $0 } == 0)

        let mutant = Mutants.named("ignore-revocation")!
        let (spread, text) = try Self.run(
            mutant.make(), corpus: nil, cases: 300, keepGoing: 50, baseline: baseline,
            shrinkAttempts: Self.baselineShrink)
        #expect(spread.verdict == .discrepancy, "\(text)")
        let new = spread.report.failures.filter(\.newSinceBaseline)
        #expect(!new.isEmpty, "\(text)")
        for f in new {
            #expect(!written.failing!.contains(f.caseIndex))
            #expect(f.shrunk.actionCount == f.originalActions)
            #expect(baseline.entry(for: f.signature) == nil)
            #expect(baseline.entry(for: f.signature.withoutBaselineMark) != nil)
        }
        #expect(text.contains { $0.contains("this case passed when the baseline was written") }, "\(text)")

        // Another seed: other cases, so signatures alone, said.
        var o = CheckOptions()
        (o.cases, o.seed, o.shrinkBudget.maxAttempts) = (100, 9, Self.baselineShrink)
        var run = CheckRun(
            validator: "mutant:ignore-revocation", checker: Checker(options: o, validator: mutant.make()))
        run.baseline = baseline
        var lines: [String] = []
        _ = try run.run { lines.append($0) }
        #expect(
            lines.contains {
                $0.contains("accepted by signature alone: it was written over other cases (seed: 3 there, 9 here)")
            }, "\(lines)")
    }

    /// A baseline written by an iapcheck that generated other cases from the seed (another version) is held by
    /// signature alone, and says why: its case i is not this build's case i, so "passed then" means nothing.
    @Test func aBaselineFromABuildThatGeneratedOtherCasesIsHeldBySignatureAlone() throws {
        var o = CheckOptions()
        (o.cases, o.seed) = (12, 3)
        let checker = Checker(options: o, validator: ReferenceValidator())
        #expect(checker.casesFingerprint(casesRun: 12) == checker.casesFingerprint(casesRun: 12))
        #expect(checker.casesFingerprint(casesRun: 12) != checker.casesFingerprint(casesRun: 3))
        var other = o
        other.seed = 4
        #expect(
            Checker(options: other, validator: ReferenceValidator()).casesFingerprint(casesRun: 12)
                != checker.casesFingerprint(casesRun: 12))

        let (written, _) = try Self.run(ReferenceValidator(), corpus: nil, cases: 12)
        var baseline = written.baseline
        #expect(baseline.writtenOver?.casesFingerprint != nil)
        let (same, sameText) = try Self.run(ReferenceValidator(), corpus: nil, cases: 12, baseline: baseline)
        #expect(same.verdict == .pass)
        #expect(sameText.contains { $0.contains("held case by case against the run that wrote it") }, "\(sameText)")
        baseline.writtenOver?.casesFingerprint = "0"
        let (_, text) = try Self.run(ReferenceValidator(), corpus: nil, cases: 12, baseline: baseline)
        #expect(
            text.contains {
                $0.contains(
                    "accepted by signature alone: it was written over other cases (generated by another iapcheck")
            }, "\(text)")
    }

    /// The baseline file: failing cases as ranges, read back; a list that is not one refused, naming the key; the
    /// reasons of a baseline written again kept.
    @Test func aBaselineRecordsItsFailingCasesAsRangesAndKeepsReasons() throws {
        let run = RunIdentity(
            seed: 1, totalCases: 30, properties: ["p"], policy: .default, catalog: .standard, signed: true,
            shard: Shard(index: 1, count: 2))
        let w = Baseline.WrittenOver(run: run, casesRun: 30, failingCases: [7, 3, 4, 5, 20, 29])
        #expect(w.failingCases == "3-5,7,20,29")
        #expect(w.failing == [3, 4, 5, 7, 20, 29])
        #expect(w.run.shard == Shard(index: 0, count: 1))
        let path = Scratch.url.appendingPathComponent("baseline-ranges-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let signature = FailureSignature(difference: "validator failure (crashed)")
        var b = Baseline(entries: [.init(signature: signature, reason: "known", replay: nil)], writtenOver: w)
        try b.write(to: path)
        #expect(try Baseline.load(path: path).writtenOver?.failing == w.failing)
        var huge = w
        (huge.casesRun, huge.failingCases) = (1 << 40, "0-999999999999")
        #expect(huge.failing == nil, "a hand-edited range of a trillion cases is refused, not held")
        for bad in ["3-", "5-3", "a", "30", "-1"] {
            b.writtenOver?.failingCases = bad
            try b.write(to: path)
            #expect(throws: ConfigError.self) { try Baseline.load(path: path) }
            do { _ = try Baseline.load(path: path) } catch { #expect("\(error)".contains("writtenOver.failingCases")) }
        }
        var again = Baseline(entries: [.init(signature: signature, reason: "", replay: nil)])
        let (kept, dropped) = again.keepingReasons(of: b)
        #expect(kept == 1 && dropped.isEmpty && again.entries[0].reason == "known")
        // An entry the new run did not meet is left out, and said to be.
        var other = Baseline(entries: [.init(signature: FailureSignature(difference: "other"), reason: "", replay: nil)]
        )
        #expect(other.keepingReasons(of: b).dropped.map(\.reason) == ["known"])
    }

    @Test(.long) func aBaselineEntryWithoutAReasonIsRefusedNamingIt() throws {
        let path = Scratch.url.appendingPathComponent("baseline-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (first, _) = try Self.run(Mutants.named("ignore-revocation")!.make(), corpus: nil, cases: 400)
        try first.baseline.write(to: path)
        #expect(throws: ConfigError.self) { try Baseline.load(path: path) }
        do { _ = try Baseline.load(path: path) } catch { #expect("\(error)".contains("entries[0].reason")) }
    }

    @Test func anUnreadableCorpusFileIsAConfigurationError() throws {
        let dir = Scratch.url.appendingPathComponent("checkrun-bad-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: dir + "/broken.json"))
        #expect(throws: CheckRun.UnreadableCorpus.self) { _ = try Self.run(ReferenceValidator(), corpus: dir) }
    }

    /// Ctrl-C while a failure shrinks: the smallest failing case found so far is reported, said to be cut short,
    /// and the summary is marked interrupted (a merge of it is incomplete); the verdict is still the discrepancy.
    @Test(.long) func ctrlCWhileShrinkingReportsTheCaseFoundSoFar() throws {
        let mutant = Mutants.named("ignore-revocation")!
        let (whole, _) = try Self.run(mutant.make(), corpus: nil, cases: 600)
        let first = try #require(whole.report.failure)
        #expect(!first.shrinkStopped && whole.summary.interrupted != true && first.shrinkAttempts > 20)
        // Asked once per case up to the failing one, then before each shrink attempt: stop after a few attempts.
        let asked = Mutex(0)
        let (cut, text) = try Self.run(
            mutant.make(), corpus: nil, cases: 600,
            shouldStop: {
                asked.withLock { n in
                    n += 1
                    return n > first.caseIndex + 1 + 10
                }
            })
        let f = try #require(cut.report.failure)
        #expect(f.caseIndex == first.caseIndex && f.shrinkStopped && f.shrinkAttempts < first.shrinkAttempts)
        #expect(f.shrunk.actionCount >= first.shrunk.actionCount && f.discrepancy != nil)
        #expect(cut.verdict == .discrepancy && cut.summary.interrupted == true)
        #expect(text.contains { $0.hasPrefix("FAIL ") && $0.contains("stopped by Ctrl-C") })
        #expect(!text.contains { $0.hasPrefix("INTERRUPTED") }, "not the line of a run whose cases all passed")
    }

    @Test func aPassingRunSaysSoAndNamesTheForgeries() throws {
        let (report, text) = try Self.run(ReferenceValidator(), corpus: nil, cases: 30)
        #expect(report.verdict == .pass)
        #expect(text.last { $0.hasPrefix("forgeries: ") } != nil)
        #expect(text.contains { $0.contains("30/30 cases passed") })
        // A validator without the legacy channel is told why the legacy classes were not sent, not that they just
        // were not.
        var one = ForgeryTally()
        one.record(.algNone, on: .app, rejected: true)
        let few = TextReport.forgeryLine(Reports.ForgerySummary.all(one), channels: [.app, .notification])
        #expect(few.hasPrefix("forgeries: 1/1 classes sent were all rejected (1 forged artifacts)"), "\(few)")
        let offChannel = try #require(few.split(separator: "; ").first { $0.hasPrefix("on channels it does not") })
        let named = Set(offChannel.split(separator: ": ")[1].split(separator: ", ").map(String.init))
        #expect(named == Set(ForgeryClass.allCases.filter(\.isLegacyOnly).map(\.rawValue)), "\(few)")
        // A replayed notification UUID acknowledged (it changed nothing, or a question would have failed) is allowed.
        one.record(.replayedNotificationUUID, on: .notification, rejected: false)
        let acked = TextReport.forgeryLine(Reports.ForgerySummary.all(one), channels: [.app, .notification])
        #expect(!acked.contains("NOT all rejected") && acked.contains("acknowledged as repeats"), "\(acked)")
        one.record(.algNone, on: .notification, rejected: false)
        let wrong = TextReport.forgeryLine(Reports.ForgerySummary.all(one), channels: [.app, .notification])
        #expect(wrong.contains("NOT all rejected: alg-none"), "\(wrong)")
        // A run that sent none (a property without forgeries) gets no "0/0 … all rejected", which reads as a verdict.
        let none = TextReport.forgeryLine(Reports.ForgerySummary.all(ForgeryTally()), channels: [.app, .notification])
        #expect(none.hasPrefix("forgeries: none sent in this run") && !none.contains("0/0"), "\(none)")
    }

    /// A failure whose shrunk case gives different outcomes on replay is printed under FLAKY, and the summary keeps
    /// it (through JSON and a merge), so `merge-reports` and JUnit show it too.
    @Test func aFlakyFailureIsInTheSummaryAndSurvivesAMerge() throws {
        var o = CheckOptions()
        o.cases = 200
        o.signed = false
        o.flakinessReplays = 12
        var run = CheckRun(validator: "coin-flip", checker: Checker(options: o, validator: CoinFlipValidator()))
        run.corpus = nil
        var lines: [String] = []
        let report = try run.run { lines.append($0) }
        let s = report.summary
        let flaky = try #require(s.discrepancies.first?.flaky ?? s.validatorFailures.first?.flaky)
        #expect(Set(flaky.outcomes).count > 1)
        #expect(lines.contains(TextReport.flaky(flaky)))
        // The questions counted are the passing cases': said so, as the failing case asked some too.
        #expect(
            lines.contains { $0.contains("cases passed, \(s.questions) questions in the passing ones") }, "\(lines)")
        let decoded = try JSONDecoder().decode(Reports.CheckSummary.self, from: JSONEncoder().encode(s))
        let merged = try ShardMerge.merge([ShardMerge.Input(path: "one.json", summary: decoded)]).summary
        #expect((merged.discrepancies.first?.flaky ?? merged.validatorFailures.first?.flaky) == flaky)
        #expect(Reports.junit(merged).contains("FLAKY \(flaky.property)"))
    }
}

/// A passing run under `--faults kill` says how many cases were durable-ack: with none, nothing was killed, which
/// "all passed" alone hid (an in-memory validator passed 20 cases so).
@Suite struct KillLineTests {
    @Test func aRunUnderKillSaysHowManyCasesKilledTheValidator() {
        var o = CheckOptions()
        (o.cases, o.seed, o.signed) = (6, 1, false)
        o.properties = [.entitlementAgreement]
        let none = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(CheckRun.killLine(none, properties: o.properties, restartable: true) == nil)
        #expect(CheckRun.killLine(none, properties: [.durableAck], restartable: true)?.contains("never killed") == true)
        o.properties = [.durableAck]
        let all = Checker(options: o, validator: ReferenceValidator()).run()
        #expect(
            CheckRun.killLine(all, properties: o.properties, restartable: true)?.hasPrefix("faults kill: 6 of 6 cases")
                == true)
        // The reference in this process is never killed, whatever the property mix says.
        #expect(
            CheckRun.killLine(all, properties: o.properties, restartable: false)?.contains("cannot be killed") == true)
    }
}
