import Dispatch
import Foundation
import IAPEncoding
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI
import PropertyEngine

/// Generates, runs and shrinks cases against one validator.
public struct Checker {
    public var options: CheckOptions
    public var validator: any Validator
    /// Called after every case with (cases done, total) so long runs can show progress.
    public var progress: ((Int, Int) -> Void)?
    /// Called when a failing case is about to be shrunk, with its index, what failed and the budget the shrink has
    /// (shrinking a program or a backend can take a minute: the command line says so); nil when a stop (Ctrl-C) is
    /// pending, so the case is reported as it was found.
    public var willShrink: ((_ caseIndex: Int, _ what: String, _ budget: Shrinker.Budget?) -> Void)?
    /// Makes the validator of each further job (`options.jobs` > 1): another instance, or process, of the same.
    public var makeWorker: (() throws -> any Validator)?

    public init(options: CheckOptions, validator: any Validator) {
        self.options = options
        self.validator = validator
    }

    /// The generator of case `i`: its size depends on the index (small cases first, then a long tail).
    package func generator(forCase i: Int) -> CaseGenerator {
        CaseGenerator(
            catalog: options.catalog, policy: options.policy, maxActions: options.maxActions,
            drawsCatalogs: options.drawsCatalogs,
            size: HistoryGenerator.sizeLimit(caseIndex: i, maxSize: options.maxSize), profile: validator.profile,
            leavingOut: options.knownDivergences)
    }

    /// A run's coverage before its first case: the families its catalog allows (drawn catalogs' included) count as
    /// blind spots until a case makes them.
    var expectedCoverage: Coverage {
        var c = Coverage()
        c.expect(ScenarioFamily.possible(in: options.catalog, drawsCatalogs: options.drawsCatalogs))
        return c
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

    /// A digest of 32 cases of the first `casesRun` as this build generates them, their content included: cases 0 to
    /// 7 and 24 spread over the rest, where the long tail's cases grow (a generator change there shows too). Two
    /// builds that agree on it generate the same cases from a seed, for all that a baseline's record of its failing
    /// cases needs (docs/check.md#baselines).
    public func casesFingerprint(casesRun: Int) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let n = max(casesRun, 0)
        let spread = n > 8 ? (0..<24).map { 8 + ($0 * (n - 8)) / 24 } : []
        var text = Data()
        for i in Set(Array(0..<min(n, 8)) + spread).sorted() {
            text.append((try? encoder.encode(generate(caseIndex: i).0)) ?? Data())
        }
        return String(text.withUnsafeBytes { ByteHash.of($0) }, radix: 16)
    }

    /// Runs the cases; stops at the first failure, which it shrinks (with `keepGoing`, at that many distinct ones).
    public func run() -> CheckReport {
        let start = DispatchTime.now().uptimeNanoseconds
        // The profile decides what the cases deliver; a validator that cannot start fails the first case instead.
        try? validator.prepare()
        var coverage = expectedCoverage
        var passed = 0, questions = 0
        var forgeries = ForgeryTally()
        if options.jobs > 1, options.onlyCase == nil, options.caseRange.count > 1, let make = makeWorker {
            var workers: [any Validator] = [validator]
            for _ in 1..<options.jobs { if let w = try? make() { workers.append(w) } }
            if workers.count > 1 { return runJobs(workers, start: start) }
        }
        // A range, never an array of indices: `--cases` may be as large as a user likes.
        let indices: Range<Int> = options.onlyCase.map { $0..<($0 + 1) } ?? options.caseRange
        var found = FailureCollector(options: options)
        func report(cases: Int, interrupted: Bool = false) -> CheckReport {
            var r = CheckReport(
                validator: validator.name, cases: cases, passed: passed, questions: questions,
                failures: found.failures, coverage: coverage, seconds: Self.seconds(since: start),
                forgeries: forgeries, interrupted: interrupted || found.shrinkStopped)
            r.unshrunkFailures = found.unshrunk
            r.repeatsOfReported = found.repeatsOfReported
            r.failingCases = failing
            r.shrunkSignatures = found.shrunkSignatures
            return r
        }
        var failing: [Int] = []
        for (n, i) in indices.enumerated() {
            if options.shouldStop() { return report(cases: n, interrupted: true) }
            let (c, src) = generate(caseIndex: i)
            coverage.add(c)
            let outcome = CaseRunner.run(c, against: validator, signed: options.signed, tally: &forgeries)
            if case .passed(let q) = outcome {
                passed += 1
                questions += q
            } else {
                failing.append(i)
                found.add(
                    i, c, outcome, shrink: { shrink(caseIndex: i, original: c, source: src, outcome: outcome) },
                    rerun: { CaseRunner.run(c, against: validator, signed: options.signed) })
                if found.isDone { return report(cases: n + 1) }
            }
            progress?(n + 1, indices.count)
        }
        return report(cases: indices.count)
    }

    /// Runs `attempt` on each candidate, candidate j on validator j, each on a thread of its own.
    static func sideBySide(
        _ batch: [[UInt64]], on validators: [any Validator],
        _ attempt: @escaping (_ candidate: [UInt64], _ on: any Validator) -> Shrinker.Outcome
    ) -> [Shrinker.Outcome] {
        let results = Locked([Shrinker.Outcome?](repeating: nil, count: batch.count))
        // Safe: each thread calls its own validator; `attempt` only reads the checker's values and a lock.
        nonisolated(unsafe) let run = attempt
        let group = DispatchGroup()
        for (j, candidate) in batch.enumerated() {
            nonisolated(unsafe) let v = validators[j]
            group.enter()
            let thread = Thread {
                let o = run(candidate, v)
                results.withLock { $0[j] = o }
                group.leave()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        group.wait()
        return results.value.map { $0! }
    }

    static func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

    /// An outcome in one line, for comparing replays.
    static func describe(_ o: CaseOutcome) -> String {
        switch o {
        case .passed: "passed"
        case .discrepancy(let d):
            // The ids of a run without a reset are its own: a refusal that names one is the same refusal in every run.
            (d.backendIds.map { IDNamespace(value: $0.namespace).generalizing } ?? { $0 })(
                "\(d.race == nil ? "step \(d.step)" : "after the race"): \(d.kind.rawValue) expected \(d.expected), observed \(d.observed)"
            )
        // Kind and step only: messages carry pids and stderr tails that differ between identical failures.
        case .validatorFailed(let f, let step): "step \(step): \(f.kind.rawValue)"
        }
    }

    /// The step a failure happened at.
    static func step(_ o: CaseOutcome) -> Int? {
        switch o {
        case .discrepancy(let d): d.step
        case .validatorFailed(_, let s): s
        case .passed: nil
        }
    }

    /// What a failing outcome found, as headlines say it.
    static func finding(_ o: CaseOutcome) -> String {
        switch o {
        case .passed: "passed"
        case .discrepancy(let d): d.finding
        case .validatorFailed(let f, _): "validator failure: \(f.kind.rawValue)"
        }
    }

    static func sameFailure(_ a: CaseOutcome, _ b: CaseOutcome) -> Bool {
        switch (a, b) {
        // A wrong answer stays "the same failure" when shrinking drops the perturbation it was attributed to, as
        // long as the same field of the same product, group or balance is wrong (the candidate `a` must show the
        // original `b`'s first difference); a wrong verdict keeps its property and its finding: the same forgery
        // class accepted, or the same kind of artifact to refuse (a shrink that swapped one forged chain for another
        // reported a class the run's progress line had not named).
        case let (.discrepancy(x), .discrepancy(y)):
            x.kind == y.kind
                && (x.kind == .answer
                    ? (y.differenceKeys?.first).map { x.differenceKeys?.contains($0) ?? false } ?? true
                    : x.property == y.property && x.finding == y.finding)
        case let (.validatorFailed(x, _), .validatorFailed(y, _)): x.kind == y.kind
        default: false
        }
    }

    /// Shrinks a failing case on its choice sequence, keeping the same kind of failure.
    ///
    /// With `helpers` (the other validators of a `--jobs` run), candidates are tried side by side, one per
    /// validator; the counterexample is the same as with none (``Shrinker/shrink(_:spans:width:testBatch:)``).
    public func shrink(
        caseIndex i: Int, original: GeneratedCase, source: ChoiceSource, outcome: CaseOutcome,
        helpers: [any Validator] = []
    ) -> FailureReport {
        let shrinkStart = DispatchTime.now().uptimeNanoseconds
        let property = original.property
        let generator = generator(forCase: i)
        if options.shouldStop() {
            // Ctrl-C came while the case ran: no shrink, nor a replay that could hang another --timeout.
            willShrink?(i, Self.finding(outcome), nil)
            var report = FailureReport(unshrunk: original, caseIndex: i, seed: options.seed, outcome: outcome)
            report.shrinkStopped = true
            return report
        }
        // Shrink without cryptography when the failure shows there too (entitlement bugs): thousands of attempts
        // then cost milliseconds. Signature-dependent failures shrink signed.
        let decodedReproduces =
            options.signed && validator is any DecodedDeliveryValidator
            && Self.sameFailure(CaseRunner.run(original, against: validator, signed: false), outcome)
        // Candidates that hang cost --timeout each: after a few, stop trying (the rest are refused unrun).
        let hangs = Locked(0)
        let validators = [validator] + helpers
        func shrunk(signed: Bool) -> Shrinker.Result {
            let budget = shrinkBudget(signed: signed, outcome: outcome)
            func attempt(_ candidate: [UInt64], on v: any Validator) -> Shrinker.Outcome {
                let src = ChoiceSource(replaying: candidate)
                guard hangs.value < 4 else { return Shrinker.Outcome(failing: false, spans: [], consumed: candidate) }
                let (c, _) = generator.generate(property, src)
                let run = CaseRunner.run(c, against: v, signed: signed)
                if case .validatorFailed(let f, _) = run, f.kind == .timedOut { hangs.withLock { $0 += 1 } }
                return Shrinker.Outcome(
                    failing: Self.sameFailure(run, outcome), spans: src.spans,
                    consumed: Array(src.choices.prefix(src.drawCount)))
            }
            let shrinker = Shrinker(budget: budget, zeroOnlyLabels: ["entropy"])
            // Decoded attempts cost microseconds: side by side only when signed.
            guard validators.count > 1, signed else {
                return shrinker.shrink(source.choices, spans: source.spans) { attempt($0, on: validator) }
            }
            return shrinker.shrink(source.choices, spans: source.spans, width: validators.count) { batch in
                Self.sideBySide(batch, on: validators, attempt)
            }
        }
        // Regenerate from the final sequence and confirm the failure with signed artifacts, as the run saw it.
        func confirmed(_ r: Shrinker.Result) -> (GeneratedCase, CaseOutcome)? {
            let (c, _) = generator.generate(property, ChoiceSource(replaying: r.choices))
            let o = CaseRunner.run(c, against: validator, signed: options.signed)
            return Self.sameFailure(o, outcome) ? (c, o) : nil
        }
        var signed = options.signed && !decodedReproduces
        willShrink?(i, Self.finding(outcome), shrinkBudget(signed: signed, outcome: outcome))
        var result = shrunk(signed: signed)
        var best = confirmed(result)
        if best == nil && options.signed && decodedReproduces && !result.stopped {
            // The shortcut shrank to a history whose failure needs the decoded form (signed artifacts are rendered
            // in Apple's form, e.g. receipt entries in Apple's order): shrink again, signed.
            signed = true
            result = shrunk(signed: true)
            best = confirmed(result)
        }
        let bestCase = best ?? (original, outcome)
        let step = Self.step(bestCase.1)
        let flaky = result.stopped ? nil : flakiness(of: bestCase)
        var report = FailureReport(
            caseIndex: i, seed: options.seed, property: property, originalActions: original.actionCount,
            shrunk: bestCase.0, outcome: bestCase.1, shrinkAttempts: result.attempts, failingStep: step, flaky: flaky)
        (report.shrinkStopped, report.shrinkTimedOut) = (result.stopped, result.timedOut)
        report.shrinkExhausted = result.exhaustedBudget
        // Only for a wrong answer or verdict: a validator failing as a program (a hang, a crash) has a budget of a few
        // attempts on purpose, each up to --timeout, and its failure rarely depends on the history.
        if case .discrepancy = outcome, result.exhaustedBudget && !result.stopped && !result.timedOut && best != nil {
            report.actionsNeeded = !anActionCanGo(
                result.choices, generator: generator, property: property, outcome: outcome, signed: signed)
        }
        report.settlesLater = flaky == nil && !result.stopped && settlesLater(bestCase)
        report.shrinkSeconds = Self.seconds(since: shrinkStart)
        return report
    }

    /// The shrink budget of one failure: the run's, with at most 400 signed attempts in process (each signs its
    /// artifacts; a program or a backend spends the time budget it was given instead, CheckOptions.outOfProcess), and
    /// a few for a validator that fails as a program (a hang, a crash, garbage: up to --timeout per attempt, and its
    /// failure rarely depends on the history's details), still deterministic.
    func shrinkBudget(signed: Bool, outcome: CaseOutcome) -> Shrinker.Budget {
        var budget = options.shrinkBudget
        budget.shouldStop = options.shouldStop
        if signed && !options.outOfProcess { budget.maxAttempts = min(budget.maxAttempts, 400) }
        if case .validatorFailed(let f, _) = outcome {
            budget.maxAttempts = min(budget.maxAttempts, f.kind == .timedOut ? 8 : f.kind == .misconfigured ? 1 : 40)
        }
        return budget
    }

    /// The counterexample replayed a few times: different outcomes mean a flaky validator, reported as such.
    func flakiness(of best: (GeneratedCase, CaseOutcome)) -> FlakyReport? {
        var outcomes = [Self.describe(best.1)]
        for _ in 1..<max(options.flakinessReplays, 1) {
            outcomes.append(Self.describe(CaseRunner.run(best.0, against: validator, signed: options.signed)))
        }
        return Set(outcomes).count > 1 ? FlakyReport(runs: outcomes.count, outcomes: outcomes) : nil
    }
}
