import Dispatch
import IAPModel
import IAPSimulator
import IAPValidatorAPI
import PropertyEngine

/// A failure found by a run, shrunk, with everything a person needs to understand and replay it.
public struct FailureReport: Sendable {
    public var caseIndex: Int
    public var seed: UInt64
    public var property: PropertyName
    public var originalActions: Int
    public var shrunk: GeneratedCase
    public var outcome: CaseOutcome
    public var shrinkAttempts: Int
    public var failingStep: Int?
    /// Set when replaying the shrunk case gave different outcomes: a flaky validator (or a race), not a plain fail.
    public var flaky: FlakyReport?
    /// Ctrl-C stopped the shrinking: `shrunk` is the simplest failing case found by then, not the one an
    /// uninterrupted run reports.
    public var shrinkStopped = false
    /// The shrink's time budget (`--shrink-seconds`) ended it: a longer one, or a faster validator, may shrink further.
    public var shrinkTimedOut = false
    /// A budget (attempts, time or Ctrl-C) ended the shrink before its passes ran out: nothing is known to be needed.
    public var shrinkExhausted = false
    /// After the attempt budget ended the shrink, each action of `shrunk` was deleted in turn and the failure went
    /// with each: no single action can go, and what a larger budget may still do is simplify values.
    public var actionsNeeded = false
    /// Wall-clock seconds spent shrinking (and replaying the result).
    public var shrinkSeconds = 0.0
    /// Failing cases of the run with this failure's signature (`--keep-going`), this one included.
    public var occurrences = 1
    /// Replayed with each differing question asked again for up to a second, the case passed: the backend applies
    /// deliveries after answering them, and its target says nothing of it (docs/http-target.md#asynchronous-backends).
    public var settlesLater = false
    /// The case passed when the baseline was written and now fails as an accepted divergence does
    /// (docs/check.md#baselines): shown unshrunk, under a signature of its own.
    public var newSinceBaseline = false

    /// What makes another failure the same bug as this one.
    public var signature: FailureSignature {
        let s = FailureSignature.of(outcome, in: shrunk)
        return newSinceBaseline ? s.newSinceBaselineRun : s
    }

    public var discrepancy: Discrepancy? { if case .discrepancy(let d) = outcome { d } else { nil } }

    /// How far the case was shrunk, as the FAIL line says it: "shrunk from 12 to 2 actions in 400 attempts", or,
    /// when the shrink ran to its end and no action could go, "not shrunk in 250 attempts: its 1 action is needed".
    /// A shrink a budget ended says only "not shrunk in N attempts" (deleting an action may still have worked),
    /// unless each action was then deleted in turn and found needed (``actionsNeeded``).
    public func shrinkPhrase(attempts: Int? = nil) -> String {
        let n = shrunk.actionCount
        let actions = "\(n) action\(n == 1 ? "" : "s")"
        let tried = attempts.map { " in \($0) attempts" } ?? ""
        let needed = ": its \(actions) \(n == 1 ? "is" : "are") needed"
        if flaky != nil {
            // A deletion that lost the failure may only have met a run without it: nothing is shown needed.
            let unsure = "it does not fail on every run, so actions kept may not be needed"
            guard originalActions != n else { return "not shrunk\(tried) (\(unsure))" }
            return "shrunk from \(originalActions) to \(actions)\(tried) (\(unsure))"
        }
        guard originalActions != n else {
            return shrinkExhausted && !actionsNeeded ? "not shrunk\(tried)" : "not shrunk\(tried)\(needed)"
        }
        return "shrunk from \(originalActions) to \(actions)\(tried)"
    }

    /// The shrink as the FAIL line says it: ``shrinkPhrase(attempts:)``, the time it took (`timed`, for programs and
    /// backends), and which budget stopped it, if one did, with what a larger one might give.
    public func shrinkClause(timeBudget: Double, timed: Bool) -> String {
        if newSinceBaseline {
            return "not shrunk: this case passed when the baseline was written and now fails in an accepted way, so"
                + " something new fails here (a shrink would end in the accepted divergence); if the accepted"
                + " divergence has only spread, write the baseline again over the same cases"
        }
        var s = shrinkPhrase(attempts: shrinkAttempts)
        if timed { s += ", " + String(format: "%.1f s", shrinkSeconds) }
        if shrinkStopped {
            s += ", stopped by Ctrl-C: a whole shrink may give a smaller case"
        } else if shrinkTimedOut {
            s +=
                ", stopped by the \(Int(timeBudget)) s shrink budget: a longer --shrink-seconds may give a smaller case"
        } else if shrinkExhausted, validatorFailure != nil {
            // Its budget is a few attempts whatever --shrink-attempts says (Checker.shrinkBudget).
            s += ", stopped after the few attempts a validator failing as a program is given (each may wait --timeout)"
        } else if shrinkExhausted && actionsNeeded && flaky == nil {
            s +=
                ", stopped by the attempt budget while simplifying values (no single action can go): a larger"
                + " --shrink-attempts may give simpler values"
        } else if shrinkExhausted {
            s += ", stopped by the attempt budget: a larger --shrink-attempts may give a smaller case"
        }
        return s
    }

    /// The failure as a person reads it: which case, what differed (or how the validator failed), and the shrunk
    /// history as a timeline. What a test built on ``Checker`` records as its issue.
    public var explanation: String {
        let what =
            discrepancy.map { d in
                "\(d.property.rawValue): expected \(d.expected), observed \(d.observed)\n"
                    + d.differences.map { "  - \($0)" }.joined(separator: "\n")
            } ?? validatorFailure.map { "validator failure: \($0)" } ?? ""
        return """
            case \(caseIndex) of seed \(seed), \(shrinkPhrase())
            \(what)
            \(Timeline.render(shrunk, failingStep: failingStep, race: discrepancy?.race))
            """
    }
    public var validatorFailure: ValidatorFailure? { if case .validatorFailed(let f, _) = outcome { f } else { nil } }
}

extension FailureReport {
    /// A failure shown as the run met it, not shrunk.
    init(unshrunk c: GeneratedCase, caseIndex: Int, seed: UInt64, outcome: CaseOutcome) {
        self.init(
            caseIndex: caseIndex, seed: seed, property: c.property, originalActions: c.actionCount, shrunk: c,
            outcome: outcome, shrinkAttempts: 0, failingStep: Checker.step(outcome))
    }
}

/// The outcomes of replaying one case several times, when they differ.
public struct FlakyReport: Sendable {
    public var runs: Int
    public var outcomes: [String]
}

public struct CheckReport: Sendable {
    public var validator: String
    public var cases: Int
    public var passed: Int
    public var questions: Int
    /// The distinct failures found, shrunk, in the order their first cases came (one unless `--keep-going`).
    public var failures: [FailureReport]
    /// The first failure: the only one of a run without `--keep-going`.
    public var failure: FailureReport? { failures.first }
    /// Failing cases left unshrunk, hence unclassified, because the run had shrunk as many failures as it allows
    /// (``CheckOptions/maxShrinks``).
    public var unshrunkFailures = 0
    /// Failing cases of the run counted into a failure reported before it (the corpus replay's), by its signature.
    public var repeatsOfReported: [FailureSignature: Int] = [:]
    /// The indices of the cases that failed, in order, whatever their failure: what a baseline written by this run
    /// records (``Baseline/WrittenOver``).
    public var failingCases: [Int] = []
    /// Each unshrunk signature met, with the signature its shrink led to.
    public var shrunkSignatures: [FailureSignature: FailureSignature] = [:]
    public var coverage: Coverage
    public var seconds: Double
    /// Forged artifacts sent and rejected, per class.
    public var forgeries = ForgeryTally()
    /// The run was stopped early (`cases` says how far it got).
    public var interrupted = false

    public init(
        validator: String, cases: Int, passed: Int, questions: Int, failures: [FailureReport], coverage: Coverage,
        seconds: Double, forgeries: ForgeryTally = ForgeryTally(), interrupted: Bool = false
    ) {
        self.validator = validator
        self.cases = cases
        self.passed = passed
        self.questions = questions
        self.failures = failures
        self.coverage = coverage
        self.seconds = seconds
        self.forgeries = forgeries
        self.interrupted = interrupted
    }
}
