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
    /// The validator as the user named it (`reference`, `mutant:NAME`, `exec:'…'`): replay commands name it so.
    public var validatorSpec: String
    /// The options that select the same cases again (catalog, policy, size, faults, properties), each with a
    /// leading space, appended to every replay command.
    public var selectionArguments = ""
    /// The corpus directory: replayed first, and where a new counterexample is saved. Nil: neither.
    public var corpus: String?
    /// More corpus directories replayed but never written (iapcheck's own `Corpus/` when a backend's counterexamples
    /// go to a directory of their own).
    public var sharedCorpus: [String] = []
    /// Save a new counterexample to the corpus (off for deliberate mutants: their failures are the point).
    public var savesCounterexamples = true
    /// `--faults` as the user gave it, recorded in the summary's run identity so shards under other faults do not merge.
    public var faults: String?
    /// `--explain`: under each failure, what each delivery of the shrunk case changed (``Explanation/deliveries(_:upTo:)``).
    public var explain = false
    /// Accepted divergences (`--baseline`, docs/check.md#baselines): failures with these signatures are listed as
    /// accepted, not failed, in the corpus replay and in generated cases alike, and are not shrunk again.
    public var baseline: Baseline?
    /// The baseline's file, for the lines that name it.
    public var baselineFile = "the baseline"
    /// Called once the corpus is replayed, just before the first generated case (progress lines start here).
    public var willRunCases: (() -> Void)?
    public var checker: Checker

    public init(validatorSpec: String, checker: Checker) {
        self.validatorSpec = validatorSpec
        self.checker = checker
    }

    /// A saved counterexample that cannot be read: the corpus is configuration, so this is a usage error.
    public struct UnreadableCorpus: Error, CustomStringConvertible {
        public var error: ConfigError
        public var description: String { "corpus file is unreadable: \(error)" }
    }

    /// Runs the check; `emit` receives the report's text lines as they are found (corpus failures before the run,
    /// the counterexample and the summary line after it).
    public func run(emit: (String) -> Void) throws(UnreadableCorpus) -> CheckRunReport {
        let options = checker.options
        let v = checker.validator
        let rerun =
            "iapcheck check --validator \(Shell.quote(validatorSpec)) --seed \(options.seed)"

        // 1. The corpus: every saved counterexample of this app must pass.
        var replayed = 0
        var skipped: [String: Int] = [:]
        var corpusFailures: [Reports.DiscrepancySummary] = []
        var corpusSignatures: [FailureSignature] = []
        // Every failure signature met, with its replay (`--write-baseline`), and the accepted ones met, counted.
        var met: [(FailureSignature, String)] = []
        var accepted: [FailureSignature: Int] = [:]
        var failures: [Reports.ValidatorFailureSummary] = []
        let directories = (corpus.map { [$0] } ?? []) + (corpus == nil ? [] : sharedCorpus)
        if !directories.isEmpty, options.onlyCase == nil {
            try? v.prepare()  // the profile, for the selection
            var selection = Corpus.Selection(
                catalog: options.catalog, drawsCatalogs: options.drawsCatalogs, policy: options.policy,
                profile: v.profile, isolation: v.isolation)
            selection.declared = options.knownDivergentProperties
            for file in directories.flatMap(Corpus.files(in:)) {
                // Ctrl-C: the run stops before its first case, keeping what was found.
                if options.shouldStop() { break }
                let saved: CorpusCase
                do { saved = try Corpus.load(path: file) } catch { throw UnreadableCorpus(error: error) }
                if let why = selection.skip(saved.testCase) {
                    skipped[why.rawValue, default: 0] += 1
                    continue
                }
                replayed += 1
                let testCase = saved.testCase.leavingOut(options.knownDivergences).holdingQuestions(
                    at: v.profile.datePrecision, profile: v.profile)
                switch CaseRunner.run(testCase, against: v) {
                case .passed: continue
                case .discrepancy(let d):
                    let replay = "iapcheck replay \(Shell.quote(file)) --validator \(Shell.quote(validatorSpec))"
                    let signature = FailureSignature.of(.discrepancy(d), in: testCase)
                    met.append((signature, replay))
                    if baseline?.entry(for: signature) != nil {
                        accepted[signature, default: 0] += 1
                        continue
                    }
                    let s = Reports.summary(of: d, testCase, caseIndex: nil, corpusFile: file, replay: replay)
                    corpusFailures.append(s)
                    corpusSignatures.append(signature)
                    emit(
                        TextReport.discrepancy(
                            s, headline: "FAIL \(d.finding) — property \(d.property.rawValue) (corpus \(file))"))
                case .validatorFailed(let f, _):
                    failures.append(.init(f, caseIndex: nil))
                    emit("VALIDATOR FAILURE \(f) (corpus \(file))")
                }
            }
        }

        // 2. New cases; one failing like a saved counterexample above is counted into it, not shrunk again.
        willRunCases?()
        var checker = self.checker
        checker.options.reportedSignatures = Set(corpusSignatures).union(baseline?.signatures ?? [])
        let report = checker.run()
        for (signature, n) in report.repeatsOfReported where baseline?.entry(for: signature) != nil {
            accepted[signature, default: 0] += n
            if !met.contains(where: { $0.0 == signature }) { met.append((signature, "")) }
        }
        for (k, signature) in corpusSignatures.enumerated() {
            guard let n = report.repeatsOfReported[signature] else { continue }
            corpusFailures[k].signature = signature.description
            corpusFailures[k].occurrences = 1 + n
            emit(
                "the failure of \(corpusFailures[k].corpusFile ?? "the corpus") again:\n"
                    + TextReport.signatureLine(signature.description, 1 + n)
                    + " (the saved case and \(n) generated, not shrunk again)")
        }
        var discrepancies = corpusFailures
        if report.interrupted && report.failure == nil {
            emit(
                "INTERRUPTED after \(report.cases) of \(options.caseRange.count) cases, all passed; the same run again: iapcheck check --validator \(Shell.quote(validatorSpec)) --seed \(options.seed) --cases \(options.cases)\(selectionArguments)\(options.shard.map { " --shard \($0)" } ?? "")"
            )
        }
        for f in report.failures {
            let rerunCase = "\(rerun) --case \(f.caseIndex)\(selectionArguments)"
            met.append((f.signature, rerunCase))
            if baseline?.entry(for: f.signature) != nil {
                accepted[f.signature, default: 0] += f.occurrences
                continue
            }
            let flaky = f.flaky.map {
                Reports.FlakySummary(property: f.property.rawValue, runs: $0.runs, outcomes: $0.outcomes)
            }
            if let flaky { emit(TextReport.flaky(flaky)) }
            // With --keep-going: what makes another failure this one, and how many failing cases had it.
            let tally =
                options.keepGoing > 1 ? "\n" + TextReport.signatureLine(f.signature.description, f.occurrences) : ""
            if let d = f.discrepancy {
                var file: String?
                if let corpus, savesCounterexamples {
                    file = try? Corpus.save(
                        CorpusCase(
                            foundWith: v.name, seed: options.seed, caseIndex: f.caseIndex, failure: d,
                            testCase: f.shrunk), in: corpus)
                }
                let replay =
                    file.map { "iapcheck replay \(Shell.quote($0)) --validator \(Shell.quote(validatorSpec))" }
                    ?? rerunCase
                var s = Reports.summary(of: d, f.shrunk, caseIndex: f.caseIndex, corpusFile: file, replay: replay)
                s.headline =
                    "FAIL \(d.finding) — under property \(f.property.rawValue): \(v.name) disagrees with the oracle (case \(f.caseIndex) of seed \(options.seed); "
                    + f.shrinkClause(timeBudget: options.shrinkBudget.maxSeconds, timed: options.outOfProcess) + ")"
                    + Self.propertyNote(d, in: f.shrunk, caseProperty: f.property)
                if file != nil { s.rerun = "\(rerunCase)  (the unshrunk case)" }
                s.flaky = flaky
                if explain { s.deliveries = Explanation.deliveries(f.shrunk, upTo: d.step) }
                if options.keepGoing > 1 {
                    s.signature = f.signature.description
                    s.occurrences = f.occurrences
                }
                discrepancies.append(s)
                emit(TextReport.discrepancy(s, headline: s.headline!))
                if let r = s.rerun { emit("  rerun:    \(r)") }
            } else if let vf = f.validatorFailure {
                var s = Reports.ValidatorFailureSummary(vf, caseIndex: f.caseIndex)
                s.headline =
                    (vf.kind == .misconfigured
                        ? "CONFIGURATION ERROR in case \(f.caseIndex): \(vf.message)\n  (the target file does not describe the backend's answers: fix the file)"
                        : "VALIDATOR FAILURE \(vf) in case \(f.caseIndex)") + tally
                s.timeline = Timeline.render(f.shrunk, failingStep: f.failingStep)
                s.rerun = rerunCase
                s.flaky = flaky
                failures.append(s)
                emit(TextReport.validatorFailure(s))
            }
        }
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

        var summary = Reports.CheckSummary(
            validator: v.name, seed: options.seed, cases: report.cases, passed: report.passed,
            questions: report.questions, seconds: report.seconds,
            corpus: Reports.CorpusSummary(
                replayed: replayed, failed: corpusFailures.compactMap(\.corpusFile),
                skipped: skipped.isEmpty ? nil : skipped),
            discrepancies: discrepancies, validatorFailures: failures, coverage: report.coverage)
        summary.forgeries = Reports.ForgerySummary.all(report.forgeries)
        if !options.catalog.notes.isEmpty { summary.catalogNotes = options.catalog.notes }
        summary.interrupted = report.interrupted
        if let baseline {
            summary.accepted = baseline.entries.compactMap { e in
                accepted[e.signature].map {
                    AcceptedFailure(signature: e.signature.description, reason: e.reason, occurrences: $0)
                }
            }
            summary.baselineNotSeen = baseline.entries.filter { accepted[$0.signature] == nil }.map(
                \.signature.description)
            emit(Self.baselineLines(summary, file: baselineFile))
        }
        let profile = v.profile
        if !profile.isUndeclared { summary.profile = profile }
        if options.onlyCase == nil {
            summary.run = RunIdentity(
                seed: options.seed, totalCases: options.cases, properties: checker.properties.map(\.rawValue),
                policy: options.policy, catalog: options.catalog, drawsCatalogs: options.drawsCatalogs,
                signed: options.signed, shard: options.shard ?? Shard(index: 0, count: 1))
            if options.maxSize != HistoryGenerator.defaultMaxSize { summary.run?.maxSize = options.maxSize }
            summary.run?.faults = faults
            let budget = options.shrinkBudget
            if budget.maxAttempts != Shrinker.Budget().maxAttempts { summary.run?.shrinkAttempts = budget.maxAttempts }
            if budget.maxSeconds.isFinite { summary.run?.shrinkSeconds = budget.maxSeconds }
            summary.run?.profile = summary.profile
            if corpus == nil { summary.run?.corpusSkipped = true }
            let declared = options.knownDivergences.map(\.rawValue) + options.knownDivergentProperties.map(\.rawValue)
            if !declared.isEmpty { summary.run?.knownDivergences = declared.sorted() }
        }
        if !profile.isUndeclared && profile != .everything {
            emit("profile checked: \(profile) (other fields not compared, other channels not used)")
        }

        emit(
            "\(v.name): \(report.passed)/\(report.cases) cases passed\(options.shard.map { " (\($0.describe(of: options.cases)))" } ?? ""), \(report.questions) questions, \(summary.corpus.line), \(String(format: "%.1f", report.seconds)) s (\(TextReport.rate(Double(report.cases), seconds: report.seconds)))"
        )
        if report.failure == nil && options.onlyCase == nil && !report.interrupted && options.shard == nil {
            emit(
                options.signed
                    ? TextReport.forgeryLine(summary.forgeries, channels: profile.channels)
                    : "forgeries: not checked (--unsigned)")
            let declared = options.knownDivergences.map(\.rawValue) + options.knownDivergentProperties.map(\.rawValue)
            if !declared.isEmpty {
                emit(
                    "not checked, declared divergences: \(declared.sorted().joined(separator: ", ")) (--known-divergences)"
                )
            }
            let missing = report.coverage.missingFamilies
            if !missing.isEmpty { emit("not exercised: \(missing.joined(separator: ", "))") }
        }
        var result = CheckRunReport(summary: summary, report: report)
        var seen: Set<FailureSignature> = []
        result.signatures = met.filter { seen.insert($0.0).inserted }
        return result
    }
}

extension CheckRun {
    /// What a run with a baseline says of it: the accepted divergences it met, with their reasons and counts, and
    /// the entries it did not meet (fixed, or just not reached by these cases).
    static func baselineLines(_ s: Reports.CheckSummary, file: String) -> String {
        var lines: [String] = []
        let met = s.accepted ?? []
        lines.append(
            "accepted divergences (\(file)): \(met.count) met" + (met.isEmpty ? "" : ", not counted as failures:"))
        for a in met {
            lines.append(
                "  - \(a.signature) (\(a.occurrences) failing case\(a.occurrences == 1 ? "" : "s")): \(a.reason)")
        }
        for n in s.baselineNotSeen ?? [] {
            lines.append("  not met in this run: \(n) — fixed? if so, remove it from \(file)")
        }
        return lines.joined(separator: "\n")
    }

    /// The line under a FAIL headline when the finding counts under another property than the case ran under. It
    /// says "before any of this property's perturbations" only when no perturbed delivery or question came by the
    /// failing step; a verdict on a perturbed delivery (a repeated genuine artifact refused) is said as what it is.
    static func propertyNote(_ d: Discrepancy, in c: GeneratedCase, caseProperty: PropertyName) -> String {
        guard d.property != caseProperty else { return "" }
        guard CaseRunner.attribute(c, step: d.step) == caseProperty else {
            return
                "\n  (the difference shows before any of this property's perturbations: plain \(d.property.rawValue))"
        }
        return d.kind == .verdict
            ? "\n  (a wrong verdict counts under \(d.property.rawValue): here on an artifact \(caseProperty.rawValue) delivered)"
            : "\n  (counted under \(d.property.rawValue), shown by \(caseProperty.rawValue)'s perturbations)"
    }
}

/// What a ``CheckRun`` found: the summary that `--json` and `--junit` render, and its verdict.
public struct CheckRunReport: Sendable {
    public var summary: Reports.CheckSummary
    /// The run of the generated cases (the counterexample, unrendered).
    public var report: CheckReport
    /// Every distinct failure signature the run met (accepted ones too), with a command that replays it, in the
    /// order met: what `--write-baseline` writes.
    public var signatures: [(FailureSignature, String)] = []

    public init(summary: Reports.CheckSummary, report: CheckReport) {
        self.summary = summary
        self.report = report
    }

    /// A baseline accepting every failure of the run, each reason left for a person to fill in.
    public var baseline: Baseline {
        Baseline(entries: signatures.map { .init(signature: $0.0, reason: "", replay: $0.1.isEmpty ? nil : $0.1) })
    }

    public enum Verdict: Sendable, Equatable {
        case pass, discrepancy, validatorFailure, interrupted
    }

    /// A validator that failed as a program outranks a discrepancy, which outranks an interrupted run.
    public var verdict: Verdict {
        if !summary.validatorFailures.isEmpty { return .validatorFailure }
        if !summary.discrepancies.isEmpty { return .discrepancy }
        return report.interrupted ? .interrupted : .pass
    }
}
