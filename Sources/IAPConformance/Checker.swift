import Dispatch
import IAPModel
import IAPSimulator
import IAPValidatorAPI
import PropertyEngine

/// Generates, runs and shrinks cases against one validator.
public struct Checker {
    public var options: CheckOptions
    public var validator: any Validator
    /// Called after every case with (cases done, total) so long runs can show progress.
    public var progress: ((Int, Int) -> Void)?
    /// Makes the validator of each further job (`options.jobs` > 1): another instance, or process, of the same.
    public var makeWorker: (() throws -> any Validator)?

    public init(options: CheckOptions, validator: any Validator) {
        self.options = options
        self.validator = validator
    }

    /// The generator of case `i`: its size depends on the index (small cases first, then a long tail).
    func generator(forCase i: Int) -> CaseGenerator {
        CaseGenerator(
            catalog: options.catalog, policy: options.policy, maxActions: options.maxActions,
            drawsCatalogs: options.drawsCatalogs,
            size: HistoryGenerator.sizeLimit(caseIndex: i, maxSize: options.maxSize), profile: validator.profile,
            leavingOut: options.knownDivergences)
    }

    /// The properties this run takes turns with: a validator that takes concurrent calls is also checked for races.
    public var properties: [PropertyName] {
        validator is any ConcurrentValidator && options.properties == PropertyName.standard
            ? options.properties + [.parallelDelivery] : options.properties
    }

    /// The property of the `i`-th case: properties take turns, so every property gets its share of any run.
    public func property(ofCase i: Int) -> PropertyName { properties[i % properties.count] }

    public func generate(caseIndex i: Int) -> (GeneratedCase, ChoiceSource) {
        let src = ChoiceSource(seed: SplitMix64.derive(options.seed, UInt64(i)))
        let (c, _) = generator(forCase: i).generate(property(ofCase: i), src)
        return (c, src)
    }

    /// Runs the cases; stops at the first failure, which it shrinks.
    public func run() -> CheckReport {
        let start = DispatchTime.now().uptimeNanoseconds
        // The profile decides what the cases deliver; a validator that cannot start fails the first case instead.
        try? validator.prepare()
        var coverage = Coverage()
        var passed = 0, questions = 0
        var forgeries = ForgeryTally()
        if options.jobs > 1, options.onlyCase == nil, options.caseRange.count > 1, let make = makeWorker {
            var workers: [any Validator] = [validator]
            for _ in 1..<options.jobs { if let w = try? make() { workers.append(w) } }
            if workers.count > 1 { return runJobs(workers, start: start) }
        }
        // A range, never an array of indices: `--cases` may be as large as a user likes.
        let indices: Range<Int> = options.onlyCase.map { $0..<($0 + 1) } ?? options.caseRange
        for (n, i) in indices.enumerated() {
            if options.shouldStop() {
                return CheckReport(
                    validator: validator.name, cases: n, passed: passed, questions: questions,
                    failure: nil, coverage: coverage, seconds: Self.seconds(since: start), forgeries: forgeries,
                    interrupted: true)
            }
            let (c, src) = generate(caseIndex: i)
            coverage.add(c)
            let outcome = CaseRunner.run(c, against: validator, signed: options.signed, tally: &forgeries)
            if case .passed(let q) = outcome {
                passed += 1
                questions += q
                progress?(n + 1, indices.count)
                continue
            }
            let failure = shrink(caseIndex: i, original: c, source: src, outcome: outcome)
            return CheckReport(
                validator: validator.name, cases: n + 1, passed: passed, questions: questions,
                failure: failure, coverage: coverage, seconds: Self.seconds(since: start), forgeries: forgeries,
                interrupted: failure.shrinkStopped)
        }
        return CheckReport(
            validator: validator.name, cases: indices.count, passed: passed, questions: questions,
            failure: nil, coverage: coverage, seconds: Self.seconds(since: start), forgeries: forgeries)
    }

    static func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

    /// An outcome in one line, for comparing replays.
    static func describe(_ o: CaseOutcome) -> String {
        switch o {
        case .passed: "passed"
        case .discrepancy(let d): "step \(d.step): \(d.kind.rawValue) expected \(d.expected), observed \(d.observed)"
        // Kind and step only: messages carry pids and stderr tails that differ between identical failures.
        case .validatorFailed(let f, let step): "step \(step): \(f.kind.rawValue)"
        }
    }

    static func sameFailure(_ a: CaseOutcome, _ b: CaseOutcome) -> Bool {
        switch (a, b) {
        // A wrong answer stays "the same failure" when shrinking drops the perturbation it was attributed to, as
        // long as the same field of the same product, group or balance is wrong (the candidate `a` must show the
        // original `b`'s first difference); a wrong verdict keeps its property (forgery accepted vs genuine
        // artifact refused).
        case let (.discrepancy(x), .discrepancy(y)):
            x.kind == y.kind
                && (x.kind == .answer
                    ? (y.differenceKeys?.first).map { x.differenceKeys?.contains($0) ?? false } ?? true
                    : x.property == y.property)
        case let (.validatorFailed(x, _), .validatorFailed(y, _)): x.kind == y.kind
        default: false
        }
    }

    /// Shrinks a failing case on its choice sequence, keeping the same kind of failure.
    public func shrink(caseIndex i: Int, original: GeneratedCase, source: ChoiceSource, outcome: CaseOutcome)
        -> FailureReport
    {
        let property = original.property
        let generator = generator(forCase: i)
        // Shrink without cryptography when the failure shows there too (entitlement bugs): thousands of attempts
        // then cost milliseconds. Signature-dependent failures shrink signed.
        let decodedReproduces =
            options.signed && validator is any DecodedDeliveryValidator
            && Self.sameFailure(CaseRunner.run(original, against: validator, signed: false), outcome)
        // Candidates that hang cost --timeout each: after a few, stop trying (the rest are refused unrun).
        var hangs = 0
        func shrunk(signed: Bool) -> Shrinker.Result {
            var budget = options.shrinkBudget
            budget.shouldStop = options.shouldStop
            if signed { budget.maxAttempts = min(budget.maxAttempts, 400) }
            // A validator that fails as a program (a hang, a crash, garbage) costs up to --timeout per attempt, and
            // its failure rarely depends on the history's details: a few attempts, still deterministic.
            if case .validatorFailed(let f, _) = outcome {
                budget.maxAttempts = min(
                    budget.maxAttempts, f.kind == .timedOut ? 8 : f.kind == .misconfigured ? 1 : 40)
            }
            return Shrinker(budget: budget, zeroOnlyLabels: ["entropy"]).shrink(source.choices, spans: source.spans) {
                candidate in
                let src = ChoiceSource(replaying: candidate)
                guard hangs < 4 else { return Shrinker.Outcome(failing: false, spans: [], consumed: candidate) }
                let (c, _) = generator.generate(property, src)
                let run = CaseRunner.run(c, against: validator, signed: signed)
                if case .validatorFailed(let f, _) = run, f.kind == .timedOut { hangs += 1 }
                let failing = Self.sameFailure(run, outcome)
                return Shrinker.Outcome(
                    failing: failing, spans: src.spans, consumed: Array(src.choices.prefix(src.drawCount)))
            }
        }
        // Regenerate from the final sequence and confirm the failure with signed artifacts, as the run saw it.
        func confirmed(_ r: Shrinker.Result) -> (GeneratedCase, CaseOutcome)? {
            let (c, _) = generator.generate(property, ChoiceSource(replaying: r.choices))
            let o = CaseRunner.run(c, against: validator, signed: options.signed)
            return Self.sameFailure(o, outcome) ? (c, o) : nil
        }
        var result = shrunk(signed: options.signed && !decodedReproduces)
        var best = confirmed(result)
        if best == nil && options.signed && decodedReproduces && !result.stopped {
            // The shortcut shrank to a history whose failure needs the decoded form (signed artifacts are rendered
            // in Apple's form, e.g. receipt entries in Apple's order): shrink again, signed.
            result = shrunk(signed: true)
            best = confirmed(result)
        }
        let bestCase = best ?? (original, outcome)
        let step: Int? =
            switch bestCase.1 {
            case .discrepancy(let d): d.step
            case .validatorFailed(_, let s): s
            case .passed: nil
            }
        // Replay the counterexample a few times: different outcomes mean a flaky validator, reported as such.
        var outcomes = [Self.describe(bestCase.1)]
        for _ in 1..<max(options.flakinessReplays, 1) where !result.stopped {
            outcomes.append(Self.describe(CaseRunner.run(bestCase.0, against: validator, signed: options.signed)))
        }
        let flaky = Set(outcomes).count > 1 ? FlakyReport(runs: outcomes.count, outcomes: outcomes) : nil
        var report = FailureReport(
            caseIndex: i, seed: options.seed, property: property, originalActions: original.actionCount,
            shrunk: bestCase.0, outcome: bestCase.1, shrinkAttempts: result.attempts, failingStep: step, flaky: flaky)
        report.shrinkStopped = result.stopped
        return report
    }
}
