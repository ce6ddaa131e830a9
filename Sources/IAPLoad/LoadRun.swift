import Foundation
import IAPModel
import IAPSupport
import IAPValidatorAPI

/// One `iapcheck load` run as a library call: the artifact pool for the target, the warm-up, the measured run (or a
/// capacity search) and the results with everything the summary records. The command line parses the profile and its
/// options, makes the validators, writes the result folder and prints the report.
public struct LoadRun: Sendable {
    /// The backend's clock, as far as the pool's answer samples care: the time iapcheck sends in a header, the
    /// backend's own real time, or one libfaketime clock for the whole run.
    public enum Clock: Sendable { case header, wall, fake }

    /// What stops a run, and the exit code it means: a usage error (2) or a validator that failed as a program (3).
    public enum Failure: Error, CustomStringConvertible {
        case usage(String)
        case validator(String)

        public var description: String {
            switch self {
            case .usage(let m): "error: \(m)"
            case .validator(let m): "validator failure: \(m)"
            }
        }
        public var exitCode: Int32 {
            switch self {
            case .usage: 2
            case .validator: 3
            }
        }
    }

    public var profile: LoadProfile
    public var catalog: Catalog
    public var policy: Policy
    public var clock = Clock.header
    /// The id every pool history's ids are made from; nil draws one.
    public var runId: Int64?
    /// Segment `index` of `count`: every `count`-th intended send, starting at `index`; nil for the whole run.
    public var segment: (index: Int, count: Int)?
    /// The fault profile, as parsed and as the user wrote it (the summary records both).
    public var faults = FaultProfile()
    public var faultsAsGiven: String?
    /// With the fault profile kill: seconds from a restart to the next kill, and the kill itself.
    public var kill: (every: Double, action: @Sendable () -> Void)?
    /// Seconds per request (recorded in the summary's options).
    public var timeout: Double = 5
    /// No progress lines (notes are still said).
    public var quiet = false
    public var shouldStop: @Sendable () -> Bool = { false }
    /// Notes and progress lines (standard error on the command line).
    public var say: @Sendable (String) -> Void = { _ in }

    public init(profile: LoadProfile, catalog: Catalog, policy: Policy) {
        self.profile = profile
        self.catalog = catalog
        self.policy = policy
    }

    /// An earlier summary of this profile to compare with (the path as given, for the report), within the profile's
    /// baselineTolerancePercent.
    public var baseline: (path: String, summary: LoadResults.Summary)?

    /// What a run measured, and what it means. `results` is nil when it was interrupted before any measured request.
    public struct Verdict: Sendable {
        public var results: LoadResults?
        public var interrupted: Bool
        /// Seconds measured (less than the profile's duration when interrupted).
        public var elapsed: Double
        /// Thresholds and the baseline are gated on a whole, uninterrupted run; a segment's on the merge.
        public var gated = false
        /// The baseline's path and what regressed against it (empty: within tolerance); nil without a baseline.
        public var baseline: (path: String, regressions: [String])?

        /// 130 interrupted, 4 a threshold failed or the baseline regressed, 0 otherwise (and for a segment).
        public var exitCode: Int32 {
            guard let results, !interrupted else { return 130 }
            guard gated else { return 0 }
            return results.summary.passed && (baseline?.regressions ?? []).isEmpty ? 0 : 4
        }

        /// The summary, then the baseline's comparison.
        public func lines(tolerance: Double) -> [String] {
            var lines = results?.summaryLines ?? []
            if let (path, regressions) = baseline {
                lines.append(
                    regressions.isEmpty
                        ? "baseline: within \(Int(tolerance * 100))% of \(path)"
                        : "baseline: REGRESSION against \(path)")
                lines += regressions.map { "  \($0)" }
            }
            return lines
        }
    }

    /// The pool, then the run: the warm-up, the measured seconds or the capacity search. `makeValidator` makes each
    /// worker's validator, given the clock the pool froze for a backend on libfaketime.
    public func run(
        first: any Validator, makeValidator: @escaping @Sendable (Millis?) throws -> any Validator
    ) throws -> Verdict {
        let made = try pool(for: first)
        let driver = LoadDriver(profile: profile, pool: made.pool) { try makeValidator(made.frozenClock) }
        driver.shouldStop = shouldStop
        if let kill { driver.periodicFault = kill }
        if !quiet { driver.progress = progressLine(seconds: Int(profile.durationSeconds), prefix: "") }
        let (workers, capacity, elapsed, rss) = try measure(driver)
        if shouldStop() && workers.allSatisfy({ $0.sent == 0 }) {
            return Verdict(results: nil, interrupted: true, elapsed: elapsed)
        }
        var r = LoadResults(profile: profile, workers: workers, seconds: elapsed)
        r.summary.capacity = capacity
        (r.summary.rssStartBytes, r.summary.rssEndBytes) = rss
        record(in: &r.summary, pool: made, driver: driver, workers: workers)
        let interrupted = shouldStop()
        if interrupted { r.summary.interrupted = true }
        var verdict = Verdict(results: r, interrupted: interrupted, elapsed: elapsed)
        verdict.gated = !interrupted && segment == nil
        if verdict.gated, let baseline {
            verdict.baseline = (
                baseline.path, r.regressions(against: baseline.summary, tolerance: profile.baselineTolerance)
            )
        }
        return verdict
    }

    /// The warm-up, then the measured run: workers, the capacity search's result, seconds measured, and iapcheck's
    /// resident memory at the start and the end of the measured run.
    func measure(
        _ driver: LoadDriver
    ) throws -> ([LoadDriver.WorkerResult], CapacitySearch.Result?, Double, (UInt64?, UInt64?)) {
        let p = profile, part = segment ?? (0, 1)
        do {
            if p.warmupSeconds > 0 { _ = try driver.run(seconds: p.warmupSeconds, record: false, segment: part) }
            let started = Date()
            let rssStart = LoadResults.residentBytes()
            var elapsed = p.durationSeconds
            let workers: [LoadDriver.WorkerResult]
            var capacity: CapacitySearch.Result?
            if case .findCapacity(let search, _) = p.executor {
                (capacity, workers) = try findCapacity(search, driver: driver)
                elapsed = search.stepSeconds
            } else {
                workers = try driver.run(seconds: p.durationSeconds, record: true, segment: part)
            }
            let rssEnd = LoadResults.residentBytes()
            if shouldStop() { elapsed = max(0.001, min(elapsed, Date().timeIntervalSince(started))) }
            return (workers, capacity, elapsed, (rssStart, rssEnd))
        } catch let e as ValidatorFailure {
            throw Failure.validator("\(e)")
        } catch let e as LoadDriver.SegmentError {
            throw Failure.usage("\(e)")
        }
    }

    /// What the summary records beyond the figures: the options, the pool, the faults and the segment.
    func record(
        in s: inout LoadResults.Summary, pool made: Pool, driver: LoadDriver, workers: [LoadDriver.WorkerResult]
    ) {
        if s.answersChecked ?? 0 > 0 { s.answersWrong = s.errors["wrong-answer"] ?? 0 }
        if !driver.faultTimes.isEmpty { s.faultSeconds = driver.faultTimes }
        s.options = "faults \(faults.isEmpty ? "none" : faultsAsGiven ?? "none"); timeout \(timeout) s"
        s.runId = String(made.pool.runId)
        s.poolItems = made.pool.items.count
        s.notSent = made.notSent.isEmpty ? nil : made.notSent
        s.answerSamples = made.samples
        if let segment {
            s.segment = "\(segment.index)/\(segment.count)"
            s.workers = workers.count  // a closed profile's segment runs its share of the workers
        }
        if !faults.isEmpty {
            s.faults =
                "\(faults)"
                + (driver.faultsInjected > 0
                    ? "; backend killed \(driver.faultsInjected) times, \(kill?.every ?? 0) s after each restart" : "")
        }
    }

    /// A `find-capacity` profile's search: a progress line per second and a line per step.
    func findCapacity(
        _ search: CapacitySearch, driver: LoadDriver
    ) throws -> (CapacitySearch.Result, [LoadDriver.WorkerResult]) {
        var index = 0
        return try search.run(
            driver, profile: profile, segment: segment ?? (0, 1),
            beforeStep: { rate in
                index += 1
                guard !quiet else { return }
                driver.progress = progressLine(
                    seconds: Int(search.stepSeconds), prefix: "step \(index) at \(Int(rate))/s: ")
            },
            onStep: { step in
                guard !quiet else { return }
                say("load \(profile.name): \(step.line)")
            })
    }

    /// The live line, at most once a second on a terminal (less often in a log).
    func progressLine(seconds total: Int, prefix: String) -> @Sendable (LoadDriver.Progress) -> Void {
        let pacing = Locked(ProgressPacing(terminalSeconds: 1))
        let (name, say, step) = (profile.name, say, !prefix.isEmpty)
        return { g in
            guard pacing.withLock({ $0.due(g.second, of: total) }) else { return }
            let sent = step ? "" : " \(g.requests) requests;"
            say(
                "load \(name): \(prefix)\(g.second) s of \(total),\(sent) last second \(g.lastSecondRequests)/s, p99 \(LoadResults.milliseconds(g.lastSecondP99Micros)), \(g.lastSecondErrors) errors"
            )
        }
    }

    /// The result folder's name: the profile, the time, and the segment.
    public func folderName(at date: Date) -> String {
        let stamp = CivilTime.iso8601(Millis(date.timeIntervalSince1970 * 1000))
            .replacingOccurrences(of: ":", with: "").replacingOccurrences(of: ".", with: "")
        let part = segment.map { "-segment-\($0.index)of\($0.count)" } ?? ""
        return "\(profile.name)-\(stamp)\(part)"
    }
}
