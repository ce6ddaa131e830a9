import Foundation
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI
import PropertyEngine

/// `--jobs N`: cases run on N validators at once, and the report is the one a single job would give.
///
/// Cases are independent (each is generated from `seed` and its index, and the validator is reset before it), so
/// they can run anywhere in any order. What must not depend on N is the report: the lowest failing index wins
/// (workers stop taking indices above a known failure, and finish those below it; with `--keep-going` they run every
/// index and the failures are picked in index order after the join), the counts, coverage and
/// forgery tallies are summed over the indices up to that one in index order, and the failure is shrunk as a single
/// job would shrink it (its candidates tried side by side on the N validators: the same counterexample, sooner).
extension Checker {
    /// What one case left behind, kept until the run knows which cases count.
    ///
    /// Sendable: a failure's choice source is left alone by its worker once on the board, and read after the join.
    struct CaseResult: @unchecked Sendable {
        var questions = 0
        var coverage = Coverage()
        var tally = ForgeryTally()
        /// Set when the case failed: what the shrinker needs.
        var failure: (GeneratedCase, ChoiceSource, CaseOutcome)?
    }

    /// Shared by the workers of one run, behind one lock.
    struct JobBoard {
        var next: Int
        var lowestFailure: Int?
        /// The lowest index whose failure ends the run whatever `--keep-going` says (a hang, a backend gone).
        var lowestEnd: Int?
        var stopped = false
        var results: [Int: CaseResult] = [:]
        var done = 0
    }

    func runJobs(_ workers: [any Validator], start: UInt64) -> CheckReport {
        let range = options.caseRange, total = range.count
        let board = Locked(JobBoard(next: range.lowerBound))
        let group = DispatchGroup()
        // Safe: the checker is only read by the workers (its options and generator are values).
        nonisolated(unsafe) let checker = self
        for worker in workers {
            // Safe: each worker thread owns its validator; no other thread calls it.
            nonisolated(unsafe) let v = worker
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                while true {
                    let (i, take) = board.withLock { board in
                        if !board.stopped && checker.options.shouldStop() { board.stopped = true }
                        let i = board.next
                        // With --keep-going, or failures reported before the run (a baseline's, the corpus's) that a
                        // failure may turn out to be, every index runs: which failures count is decided after the
                        // join.
                        let take =
                            !board.stopped && i < range.upperBound
                            && (checker.options.runsPastAFailure
                                ? (board.lowestEnd.map { i < $0 } ?? true)
                                : (board.lowestFailure.map { i < $0 } ?? true))
                        if take { board.next += 1 }
                        return (i, take)
                    }
                    guard take else { return }
                    let (c, src) = checker.generate(caseIndex: i)
                    var r = CaseResult()
                    r.coverage.add(c)
                    let outcome = CaseRunner.run(c, against: v, signed: checker.options.signed, tally: &r.tally)
                    if case .passed(let q) = outcome { r.questions = q } else { r.failure = (c, src, outcome) }
                    board.withLock { board in
                        board.results[i] = r
                        if r.failure != nil { board.lowestFailure = min(board.lowestFailure ?? i, i) }
                        if case .validatorFailed(let f, _)? = r.failure?.2, FailureCollector.endsTheRun(f) {
                            board.lowestEnd = min(board.lowestEnd ?? i, i)
                        }
                        board.done += 1
                        checker.progress?(board.done, total)
                    }
                }
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        group.wait()
        let results = board.withLock { $0.results }
        return count(results, workers: workers, start: start)
    }

    /// The report of a run whose cases `results` holds by index (nil: not run).
    func count(_ results: [Int: CaseResult], workers: [any Validator], start: UInt64) -> CheckReport {
        let range = options.caseRange, total = range.count
        // The cases that count: up to the failure that ends the run; when stopped early, the unbroken prefix that
        // finished. Failures are shrunk in index order on the first validator, as a single job would.
        var counted = 0
        var coverage = expectedCoverage, forgeries = ForgeryTally()
        var passed = 0, questions = 0
        var found = FailureCollector(options: options)
        var failing: [Int] = []
        while counted < total, !found.isDone, let r = results[range.lowerBound + counted] {
            coverage.merge(r.coverage)
            forgeries.merge(r.tally)
            counted += 1
            if let (c, src, outcome) = r.failure {
                let i = range.lowerBound + counted - 1
                failing.append(i)
                found.add(
                    i, c, outcome,
                    shrink: {
                        shrink(
                            caseIndex: i, original: c, source: src, outcome: outcome,
                            helpers: Array(workers.dropFirst()))
                    }, rerun: { CaseRunner.run(c, against: validator, signed: options.signed) })
            } else {
                passed += 1
                questions += r.questions
            }
        }
        var report = CheckReport(
            validator: validator.name, cases: counted, passed: passed, questions: questions, failures: found.failures,
            coverage: coverage, seconds: Self.seconds(since: start), forgeries: forgeries,
            interrupted: found.shrinkStopped || (counted < total && !found.isDone))
        report.unshrunkFailures = found.unshrunk
        report.repeatsOfReported = found.repeatsOfReported
        report.failingCases = failing
        report.shrunkSignatures = found.shrunkSignatures
        return report
    }
}

extension Coverage {
    public mutating func merge(_ o: Coverage) {
        for (k, v) in o.families { families[k, default: 0] += v }
        for (k, v) in o.notifications { notifications[k, default: 0] += v }
        for (k, v) in o.properties { properties[k, default: 0] += v }
        for (k, v) in o.productChanges { productChanges[k, default: 0] += v }
        historySize.merge(o.historySize)
        apiPages.merge(o.apiPages)
    }
}
