import Foundation
import IAPEncoding
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI
import PropertyEngine

/// One `iapcheck check` as a library call: the saved counterexamples of the corpus replayed, the seeded cases run
/// (``Checker``), a new counterexample saved, and everything summarised in one ``CheckRunReport``. The command line
/// only parses options, prints the text this emits and writes the report's files.
public struct CheckRun {
    /// What the user selected, as they wrote it: every replay and rerun command is built from it. Its seed, cases and
    /// shard are the checker's (``CheckOptions``), filled in by ``run(emit:)``.
    public var selection: RunSelection
    /// The corpus directory: replayed first, and where a new counterexample is saved. Nil: neither.
    public var corpus: String?
    /// More corpus directories replayed but never written (iapcheck's own `Corpus/` when a backend's counterexamples
    /// go to a directory of their own).
    public var sharedCorpus: [String] = []
    /// Save a new counterexample to the corpus (off for deliberate mutants: their failures are the point).
    public var savesCounterexamples = true
    /// `--explain`: under each failure, what each delivery of the shrunk case changed (``Explanation/deliveries(_:upTo:)``).
    public var explain = false
    /// Accepted divergences (`--baseline`, docs/check.md#baselines): failures with these signatures are listed as
    /// accepted, not failed, in the corpus replay and in generated cases alike, and are not shrunk again.
    public var baseline: Baseline?
    /// The baseline's file, for the lines that name it.
    public var baselineFile = "the baseline"
    /// `--write-baseline`: every case runs, and the report records which failed (``CheckRunReport/baseline``); a
    /// baseline read as well accepts by signature only, since the run is writing its successor.
    public var writesBaseline = false
    /// Called once the corpus is replayed, just before the first generated case (progress lines start here).
    public var willRunCases: (() -> Void)?
    public var checker: Checker

    public init(selection: RunSelection, checker: Checker) {
        self.selection = selection
        self.checker = checker
    }

    /// A run of the validator named `validator` (tests): the rest of the selection as its defaults.
    public init(validator: String, checker: Checker) {
        self.init(selection: RunSelection(validator: validator), checker: checker)
    }

    /// A saved counterexample that cannot be read: the corpus is configuration, so this is a usage error.
    public struct UnreadableCorpus: Error, CustomStringConvertible {
        public var error: ConfigError
        public var description: String { "corpus file is unreadable: \(error)" }
    }

    /// What a run has met so far, in the corpus replay and in the generated cases.
    struct Findings {
        var replayed = 0
        var skipped: [String: Int] = [:]
        var corpusFailures: [Reports.DiscrepancySummary] = []
        var corpusSignatures: [FailureSignature] = []
        /// Every failure signature met, with its replay (`--write-baseline`), and the accepted ones met, counted.
        var met: [(FailureSignature, String)] = []
        var accepted: [FailureSignature: Int] = [:]
        var discrepancies: [Reports.DiscrepancySummary] = []
        var failures: [Reports.ValidatorFailureSummary] = []
    }

    /// Runs the check; `emit` receives the report's text lines as they are found (corpus failures before the run,
    /// the counterexample and the summary line after it).
    public func run(emit: (String) -> Void) throws(UnreadableCorpus) -> CheckRunReport {
        let options = checker.options
        var selection = self.selection
        (selection.seed, selection.cases, selection.shard) = (options.seed, options.cases, options.shard)
        var found = Findings()
        // 1. The corpus: every saved counterexample of this app must pass.
        try replayCorpus(selection, into: &found, emit: emit)
        // 2. New cases; one failing like a saved counterexample above is counted into it, not shrunk again.
        willRunCases?()
        var checker = self.checker
        checker.options.reportedSignatures = Set(found.corpusSignatures).union(baseline?.signatures ?? [])
        checker.options.runsToTheEnd = writesBaseline
        let casesNote = gateOnBaselineCases(&checker.options)
        let report = checker.run()
        countRepeats(report, into: &found, emit: emit)
        found.discrepancies = found.corpusFailures
        if report.interrupted && report.failure == nil {
            emit(
                "INTERRUPTED after \(report.cases) of \(options.caseRange.count) cases, all passed; the same run again: \(selection.sameRun)"
            )
        }
        for f in report.failures { record(f, selection, into: &found, emit: emit) }
        emitStopLines(report, emit: emit)
        var summary = summarize(report, found)
        if baseline != nil {
            let total = options.onlyCase == nil ? options.caseRange.count : 1
            let stopped = report.cases < total ? (report.cases, total) : nil
            emit(Self.baselineLines(summary, file: baselineFile, stoppedAt: stopped, cases: casesNote))
        }
        if options.onlyCase == nil { summary.run = identity(profile: summary.profile) }
        emitClosingLines(report, summary, emit: emit)
        var result = CheckRunReport(summary: summary, report: report)
        var seen: Set<FailureSignature> = []
        result.signatures = found.met.map { ($0.0.withoutBaselineMark, $0.1) }.filter { seen.insert($0.0).inserted }
        if options.shard == nil, options.onlyCase == nil, let run = summary.run {
            result.writtenOver = .init(
                run: run, casesRun: report.cases, failingCases: report.failingCases,
                casesFingerprint: checker.casesFingerprint(casesRun: report.cases))
            result.shrunkSignatures = report.shrunkSignatures
        }
        return result
    }

    /// Replays every saved counterexample of this app in the corpus directories; a failure is reported before the
    /// run, unless the baseline accepts it.
    func replayCorpus(_ selection: RunSelection, into found: inout Findings, emit: (String) -> Void)
        throws(UnreadableCorpus)
    {
        let options = checker.options
        let v = checker.validator
        let directories = (corpus.map { [$0] } ?? []) + (corpus == nil ? [] : sharedCorpus)
        guard !directories.isEmpty, options.onlyCase == nil else { return }
        try? v.prepare()  // the profile, for the selection
        var which = Corpus.Selection(
            catalog: options.catalog, drawsCatalogs: options.drawsCatalogs, policy: options.policy,
            profile: v.profile, isolation: v.isolation)
        which.declared = options.knownDivergentProperties
        for file in directories.flatMap(Corpus.files(in:)) {
            // Ctrl-C: the run stops before its first case, keeping what was found.
            if options.shouldStop() { break }
            let saved: CorpusCase
            do { saved = try Corpus.load(path: file) } catch { throw UnreadableCorpus(error: error) }
            if let why = which.skip(saved.testCase) {
                found.skipped[why.rawValue, default: 0] += 1
                continue
            }
            found.replayed += 1
            let testCase = saved.testCase.leavingOut(options.knownDivergences).holdingQuestions(
                at: v.profile.datePrecision, profile: v.profile)
            switch CaseRunner.run(testCase, against: v) {
            case .passed: continue
            case .discrepancy(let d):
                let replay = selection.replay(file: file)
                let signature = FailureSignature.of(.discrepancy(d), in: testCase)
                found.met.append((signature, replay))
                if baseline?.entry(for: signature) != nil {
                    found.accepted[signature, default: 0] += 1
                    continue
                }
                let s = Reports.summary(of: d, testCase, caseIndex: nil, corpusFile: file, replay: replay)
                found.corpusFailures.append(s)
                found.corpusSignatures.append(signature)
                emit(
                    TextReport.discrepancy(
                        s,
                        headline: "FAIL \(d.finding) — property \(d.property.rawValue) (corpus \(file))"
                            + (checker.settlesLater((testCase, .discrepancy(d))) ? Self.lagNote : "")
                            + (d.kind == .answer ? Self.settleNote(checker.validator.settleSeconds) : "")))
            case .validatorFailed(let f, _):
                found.failures.append(.init(f, caseIndex: nil))
                emit("VALIDATOR FAILURE \(f) (corpus \(file))")
            }
        }
    }

    /// Generated cases that failed like a saved counterexample (or an accepted one) are counted into it.
    func countRepeats(_ report: CheckReport, into found: inout Findings, emit: (String) -> Void) {
        for (signature, n) in report.repeatsOfReported where baseline?.entry(for: signature) != nil {
            found.accepted[signature, default: 0] += n
            if !found.met.contains(where: { $0.0 == signature }) { found.met.append((signature, "")) }
        }
        for (k, signature) in found.corpusSignatures.enumerated() {
            guard let n = report.repeatsOfReported[signature] else { continue }
            found.corpusFailures[k].signature = signature.description
            found.corpusFailures[k].occurrences = 1 + n
            emit(
                "the failure of \(found.corpusFailures[k].corpusFile ?? "the corpus") again:\n"
                    + TextReport.signatureLine(signature.description, 1 + n)
                    + " (the saved case and \(n) generated, not shrunk again)")
        }
    }

    /// One failure of the generated cases: accepted by the baseline, or reported (and a discrepancy saved to the
    /// corpus) with its replay and rerun commands.
    func record(
        _ f: FailureReport, _ selection: RunSelection, into found: inout Findings, emit: (String) -> Void
    ) {
        let options = checker.options
        let rerunCase = selection.rerun(case: f.caseIndex)
        found.met.append((f.signature, rerunCase))
        if baseline?.entry(for: f.signature) != nil {
            found.accepted[f.signature, default: 0] += f.occurrences
            return
        }
        let flaky = f.flaky.map {
            Reports.FlakySummary(property: f.property.rawValue, runs: $0.runs, outcomes: $0.outcomes)
        }
        if let flaky { emit(TextReport.flaky(flaky)) }
        if let d = f.discrepancy {
            var file: String?
            // A failure new since the baseline shows as an accepted one does once shrunk: nothing to save.
            if let corpus, savesCounterexamples, !f.newSinceBaseline {
                file = try? Corpus.save(
                    CorpusCase(
                        foundWith: checker.validator.name, seed: options.seed, caseIndex: f.caseIndex, failure: d,
                        testCase: f.shrunk), in: corpus)
            }
            var s = Reports.summary(
                of: d, f.shrunk, caseIndex: f.caseIndex, corpusFile: file,
                replay: file.map(selection.replay(file:)) ?? rerunCase)
            s.headline = headline(d, f)
            if file != nil { s.rerun = "\(rerunCase)  (the unshrunk case)" }
            s.flaky = flaky
            if explain { s.deliveries = Explanation.deliveries(f.shrunk, upTo: d.step, race: d.race) }
            // With a baseline too: the signature is what an entry would accept.
            if options.keepGoing > 1 || baseline != nil {
                s.signature = f.signature.description
                s.occurrences = f.occurrences
            }
            found.discrepancies.append(s)
            emit(TextReport.discrepancy(s, headline: s.headline!))
            if let r = s.rerun { emit("  rerun:    \(r)") }
        } else if let vf = f.validatorFailure {
            // With --keep-going: what makes another failure this one, and how many failing cases had it.
            let tally =
                options.keepGoing > 1 ? "\n" + TextReport.signatureLine(f.signature.description, f.occurrences) : ""
            var s = Reports.ValidatorFailureSummary(vf, caseIndex: f.caseIndex)
            s.headline =
                (vf.kind == .misconfigured
                    ? "CONFIGURATION ERROR in case \(f.caseIndex): \(vf.message)\n  (the target file does not describe the backend's answers: fix the file)"
                    : "VALIDATOR FAILURE \(vf) in case \(f.caseIndex)") + tally
            s.timeline = Timeline.render(f.shrunk, failingStep: f.failingStep)
            s.rerun = rerunCase
            s.flaky = flaky
            found.failures.append(s)
            emit(TextReport.validatorFailure(s))
        }
    }

    /// The FAIL line of a generated case's discrepancy: the property, the case and seed, how it was shrunk.
    func headline(_ d: Discrepancy, _ f: FailureReport) -> String {
        let options = checker.options
        return
            "FAIL \(d.finding) — under property \(f.property.rawValue): \(checker.validator.name) disagrees with the oracle (case \(f.caseIndex) of seed \(options.seed); "
            + f.shrinkClause(timeBudget: options.shrinkBudget.maxSeconds, timed: options.outOfProcess) + ")"
            + Self.propertyNote(d, in: f.shrunk, caseProperty: f.property)
            + (f.settlesLater ? Self.lagNote : "")
            + (d.kind == .answer ? Self.settleNote(checker.validator.settleSeconds, flaky: f.flaky != nil) : "")
            + Self.drawnGraceNote(f.shrunk, graceChoice: options.catalog.graceChoice)
    }

    /// Under a FAIL line about grace in a case whose grace was drawn (the catalog does not state the app's setting):
    /// an app without Billing Grace Period never sends it, so its backend may rightly ignore it
    /// (docs/catalog.md#billing-grace-period).
    static func drawnGraceNote(_ c: GeneratedCase, graceChoice: GraceChoice) -> String {
        // Grace shows only where billing fails inside it: the timeline says "grace until".
        guard graceChoice != .declared, let g = c.config.catalog.gracePeriod,
            c.events.contains(where: { $0.summary.contains("grace until") || $0.summary.contains("inside grace") })
        else { return "" }
        return
            "\n  (this case drew Billing Grace Period \(g.days) d: the catalog does not state the app's setting; if the app has none in App Store Connect, --grace off)"
    }

    /// Under a FAIL line of a backend with a settle time: what its answers were given, so a reader does not take a
    /// lag for the bug (docs/http-target.md#asynchronous-backends).
    static func settleNote(_ seconds: Double, flaky: Bool = false) -> String {
        guard seconds > 0 else { return "" }
        let ms = Int((seconds * 1000).rounded())
        return "\n  (each differing answer was asked again for up to \(ms) ms, the target's settleMs, before it counted"
            + (flaky
                ? "; a case that fails only now and then is most often the backend's queue lagging past that under load: try a larger settleMs)"
                : ")")
    }

    /// Under a FAIL line whose case passes when each differing question is asked again for up to a second.
    static let lagNote =
        "\n  (replayed with each differing question asked again for up to a second, the case passed: if the backend"
        + " applies deliveries after answering them, from a queue, say so with \"settleMs\" in the target, and with"
        + " \"verifiesLater\" on a route that answers before verifying: docs/http-target.md#asynchronous-backends)"

    /// Why the run stopped short of its cases, or left failures unshrunk.
    func emitStopLines(_ report: CheckReport, emit: (String) -> Void) {
        let options = checker.options
        if options.keepGoing > 1, report.failures.count >= options.keepGoing, report.cases < options.caseRange.count {
            emit(
                "stopped after \(report.failures.count) distinct failures, at case \(report.cases) of \(options.caseRange.count) (--keep-going=\(options.keepGoing)): more may remain; a larger N goes on"
            )
        }
        if report.unshrunkFailures > 0 {
            emit(
                "\(report.unshrunkFailures) more failing case\(report.unshrunkFailures == 1 ? "" : "s") not shrunk: the run shrank \(options.maxShrinks) failures, the most --keep-going=\(options.keepGoing) shrinks; fix the failures above and run again"
            )
        }
    }

    /// The summary `--json` and `--junit` render (without the run identity).
    func summarize(_ report: CheckReport, _ found: Findings) -> Reports.CheckSummary {
        let options = checker.options
        var summary = Reports.CheckSummary(
            validator: checker.validator.name, seed: options.seed, cases: report.cases, passed: report.passed,
            questions: report.questions, seconds: report.seconds,
            corpus: Reports.CorpusSummary(
                replayed: found.replayed, failed: found.corpusFailures.compactMap(\.corpusFile),
                skipped: found.skipped.isEmpty ? nil : found.skipped),
            discrepancies: found.discrepancies, validatorFailures: found.failures, coverage: report.coverage)
        summary.forgeries = Reports.ForgerySummary.all(report.forgeries)
        if report.forgeries.race.sentAlone > 0 { summary.raceResent = report.forgeries.race }
        if !options.catalog.notes.isEmpty { summary.catalogNotes = options.catalog.notes }
        summary.interrupted = report.interrupted
        if let baseline {
            summary.accepted = baseline.entries.compactMap { e in
                found.accepted[e.signature].map {
                    AcceptedFailure(signature: e.signature.description, reason: e.reason, occurrences: $0)
                }
            }
            summary.baselineNotSeen = baseline.entries.filter { found.accepted[$0.signature] == nil }.map(
                \.signature.description)
        }
        let profile = checker.validator.profile
        if !profile.isUndeclared { summary.profile = profile }
        return summary
    }

    /// What makes this run's cases these cases: shards and reruns with another identity do not merge with it.
    func identity(profile: ValidatorProfile?) -> RunIdentity {
        let options = checker.options
        var run = RunIdentity(
            seed: options.seed, totalCases: options.cases, properties: checker.properties.map(\.rawValue),
            policy: options.policy, catalog: options.catalog, drawsCatalogs: options.drawsCatalogs,
            signed: options.signed, shard: options.shard ?? Shard(index: 0, count: 1))
        if options.maxSize != HistoryGenerator.defaultMaxSize { run.maxSize = options.maxSize }
        run.faults = selection.faults.flatMap { $0.isEmpty ? nil : $0 }
        let budget = options.shrinkBudget
        if budget.maxAttempts != Shrinker.Budget().maxAttempts { run.shrinkAttempts = budget.maxAttempts }
        if budget.maxSeconds.isFinite { run.shrinkSeconds = budget.maxSeconds }
        run.profile = profile
        if corpus == nil { run.corpusSkipped = true }
        if !declaredDivergences.isEmpty { run.knownDivergences = declaredDivergences }
        return run
    }

    /// `--known-divergences` as the run reads it, sorted.
    var declaredDivergences: [String] {
        let options = checker.options
        return (options.knownDivergences.map(\.rawValue) + options.knownDivergentProperties.map(\.rawValue)).sorted()
    }

    /// The profile line, the summary line, and for a whole passing run what it did not check.
    func emitClosingLines(_ report: CheckReport, _ summary: Reports.CheckSummary, emit: (String) -> Void) {
        let options = checker.options
        let profile = checker.validator.profile
        if !profile.isUndeclared && profile != .everything {
            emit("profile checked: \(profile) (other fields not compared, other channels not used)")
        } else if !profile.questionsInHindsight {
            emit(
                "profile checked: asked about its present only (no questions in hindsight: the entitlements route carries no {at})"
            )
        }
        emit(
            "\(checker.validator.name): \(report.passed)/\(report.cases) cases passed\(options.shard.map { " (\($0.describe(of: options.cases)))" } ?? ""), \(TextReport.questions(report.questions, allPassed: report.passed == report.cases)), \(summary.corpus.line), \(String(format: "%.1f", report.seconds)) s (\(TextReport.rate(Double(report.cases), seconds: report.seconds)))"
        )
        guard report.failure == nil && options.onlyCase == nil && !report.interrupted && options.shard == nil else {
            return
        }
        emit(
            options.signed
                ? TextReport.forgeryLine(summary.forgeries, channels: profile.channels)
                : "forgeries: not checked (--unsigned)")
        if let race = summary.raceResent?.line { emit(race) }
        let restartable = checker.validator is any RestartableValidator
        if let kills = Self.killLine(report, properties: options.properties, restartable: restartable) { emit(kills) }
        if !declaredDivergences.isEmpty {
            emit(
                "not checked, declared divergences: \(declaredDivergences.joined(separator: ", ")) (--known-divergences)"
            )
        }
        let missing = report.coverage.missingFamilies
        if !missing.isEmpty { emit("not exercised: \(missing.joined(separator: ", "))") }
    }
}

extension CheckRun {
    /// The line under a FAIL headline when the finding counts under another property than the case ran under. It
    /// says "before any of this property's perturbations" only when no perturbed delivery or question came by the
    /// failing step; a verdict on a perturbed delivery (a repeated genuine artifact refused) is said as what it is.
    package static func propertyNote(_ d: Discrepancy, in c: GeneratedCase, caseProperty: PropertyName) -> String {
        guard d.property != caseProperty else { return "" }
        guard CaseRunner.attribute(c, step: d.step) == caseProperty else {
            return
                "\n  (the difference shows before any of this property's perturbations: plain \(d.property.rawValue))"
        }
        return d.kind == .verdict
            ? "\n  (a wrong verdict counts under \(d.property.rawValue), whatever case delivered the artifact; this one ran under \(caseProperty.rawValue))"
            : "\n  (counted under \(d.property.rawValue), shown by \(caseProperty.rawValue)'s perturbations)"
    }
}
