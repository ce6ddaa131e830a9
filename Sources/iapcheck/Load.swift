import ArgumentParser
import Foundation
import IAPEncoding
import IAPHTTP
import IAPLoad
import IAPModel
import IAPSupport
import IAPValidatorAPI

/// Exit code when a load run's thresholds (or the baseline comparison) fail.
let thresholdExit: Int32 = 4

struct Load: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a load profile against a validator's hot verification path and gate on its thresholds.",
        subcommands: [Run.self, Merge.self],
        defaultSubcommand: Run.self)

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a load profile (the default: `iapcheck load PROFILE`).",
            discussion: """
                Artifacts are rendered before the clock starts; rate executors compute their intended send times up front and \
                latency counts from the intended time (coordinated omission corrected; the uncorrected figure is kept too). \
                Each worker owns its validator and its HdrHistograms, merged at the end. Results go to \
                Results/<profile>-<time>/: summary.json, latency.hgrm, latency-uncorrected.hgrm, histogram.json, report.html.

                Exit codes: 0 thresholds pass; 2 bad profile; 3 the validator failed as a program; 4 a threshold failed.
                """)

        @Argument(
            help:
                "Profile file, JSON or YAML (.yaml/.yml, same keys), e.g. Profiles/smoke.json or Profiles/cache-hostile.yaml."
        ) var profile: String
        @Option(help: "Directory for the result folder.") var results = "Results"
        @Option(help: "Seconds per request for exec: targets.") var timeout: Double = 5
        @Flag(help: "No live progress line.") var quiet = false
        @Option(
            help:
                "Compare with an earlier summary.json and fail (exit 4) on a regression beyond the profile's baselineTolerancePercent."
        ) var baseline: String?
        @Option(
            help: ArgumentHelp(
                "Fault profile, as for check: kill (an http: target with a start command: the backend is killed and restarted every --kill-every seconds of the run), reset, webhook-5xx, slow-store.",
                valueName: "LIST"))
        var faults: String?
        @Option(
            help:
                "With --faults kill: seconds between a restart and the next kill (default 5; a soak takes longer, e.g. 30)."
        ) var killEvery: Double = 5
        @Option(
            help:
                "Run segment i of N (e.g. 0/4): every N-th intended send starting at i; merge the folders with `iapcheck load merge`."
        ) var segment: String?
        @Option(
            help:
                "The run's id, from which every pool history's ids are made (0 to 9999999999; default random, recorded in summary.json): give the segments of one run the same id so they send one pool; a later run gets ids of its own."
        ) var runId: Int64?
        @OptionGroup(title: "The app under load") var app: LoadAppOptions

        func run() throws {
            var given = try Load.profile(profile)
            given.app = given.app.overridden(by: app.app)
            let p = given
            if let runId, !(0..<10_000_000_000).contains(runId) {
                throw fail("error: --run-id takes 0 to 9999999999, not \(runId)", code: Exit.usage)
            }
            let (catalog, policy) = try Load.app(p)
            try requireWritable(directory: results)
            // Before the run: a baseline that cannot be read would fail it only at the end.
            if let baseline { _ = try Load.readBaseline(baseline, for: p, note: false) }
            let faultProfile = try parseFaults(faults)
            guard killEvery >= 0.5 && killEvery <= 86_400 else {
                throw fail("error: --kill-every takes 0.5 to 86400 seconds, not \(killEvery)", code: Exit.usage)
            }
            // a bad target is a usage error before anything starts
            let first = try makeValidator(p.target, timeout: timeout, faults: faultProfile, forLoad: true)
            if faultProfile.kill && !(first is ManagedHTTPValidator) {
                throw ValidationError(
                    "load --faults kill needs an http: target with a \"start\" command (iapcheck kills and restarts that backend)"
                )
            }
            let target = p.target, t = timeout
            FileHandle.standardError.write(Data("load \(p.name): rendering the artifact pool…\n".utf8))
            let (pool, frozen, notSent, samples) = try Load.pool(
                p, catalog: catalog, policy: policy, first: first, runId: runId)
            let driver = LoadDriver(profile: p, pool: pool) {
                let v = try makeValidator(target, timeout: t, faults: faultProfile, forLoad: true)
                (v as? HTTPValidator)?.frozenClock = frozen
                return v
            }
            if faultProfile.kill, let backend = (first as? ManagedHTTPValidator)?.backend {
                driver.periodicFault = (
                    killEvery,
                    {
                        FileHandle.standardError.write(
                            Data("load \(p.name): killing the backend (fault profile kill)\n".utf8))
                        do { try backend.killAndRestart() } catch {
                            FileHandle.standardError.write(
                                Data("load \(p.name): the backend did not come back: \(error)\n".utf8))
                        }
                    }
                )
            }
            if !quiet {
                let total = Int(p.durationSeconds)
                let pacing = Locked(ProgressPacing(terminalSeconds: 1))
                driver.progress = { g in
                    guard pacing.withLock({ $0.due(g.second, of: total) }) else { return }
                    FileHandle.standardError.write(
                        Data(
                            "load \(p.name): \(g.second) s of \(total), \(g.requests) requests; last second \(g.lastSecondRequests)/s, p99 \(LoadResults.milliseconds(g.lastSecondP99Micros)), \(g.lastSecondErrors) errors\n"
                                .utf8))
                }
            }
            var seg = (index: 0, count: 1)
            if let segment {
                let parts = segment.split(separator: "/").compactMap { Int($0) }
                guard parts.count == 2, parts[1] >= 1, parts[0] >= 0, parts[0] < parts[1] else {
                    throw ValidationError("--segment takes i/N with 0 ≤ i < N, e.g. 0/4")
                }
                seg = (parts[0], parts[1])
            }
            let workers: [LoadDriver.WorkerResult]
            // Ctrl-C: the workers stop after their current request; what was measured is written and reported.
            driver.shouldStop = { Interrupt.requested }
            Interrupt.install()
            var elapsed = p.durationSeconds
            var capacity: CapacitySearch.Result?
            var rss: (start: UInt64?, end: UInt64?) = (nil, nil)
            do {
                if p.warmupSeconds > 0 { _ = try driver.run(seconds: p.warmupSeconds, record: false, segment: seg) }
                let started = Date()
                rss.start = LoadResults.residentBytes()
                if case .findCapacity(let search, _) = p.executor {
                    (capacity, workers) = try Load.findCapacity(
                        search, driver: driver, profile: p, segment: seg, quiet: quiet)
                    elapsed = search.stepSeconds
                } else {
                    workers = try driver.run(seconds: p.durationSeconds, record: true, segment: seg)
                }
                rss.end = LoadResults.residentBytes()
                if Interrupt.requested {
                    elapsed = max(0.001, min(elapsed, Date().timeIntervalSince(started)))
                }
            } catch let e as ValidatorFailure {
                throw fail("validator failure: \(e)", code: Exit.validatorFailure)
            } catch let e as LoadDriver.SegmentError {
                throw fail("error: \(e)", code: Exit.usage)
            }
            if Interrupt.requested && workers.allSatisfy({ $0.sent == 0 }) {
                print("interrupted during warm-up, before any measured request; nothing written")
                throw ExitCode(130)
            }
            var r = LoadResults(profile: p, workers: workers, seconds: elapsed)
            if Interrupt.requested { r.summary.interrupted = true }
            r.summary.capacity = capacity
            (r.summary.rssStartBytes, r.summary.rssEndBytes) = rss
            if r.summary.answersChecked ?? 0 > 0 { r.summary.answersWrong = r.summary.errors["wrong-answer"] ?? 0 }
            if !driver.faultTimes.isEmpty { r.summary.faultSeconds = driver.faultTimes }
            r.summary.options = "faults \(faultProfile.isEmpty ? "none" : faults ?? "none"); timeout \(timeout) s"
            r.summary.runId = String(pool.runId)
            r.summary.poolItems = pool.items.count
            r.summary.notSent = notSent.isEmpty ? nil : notSent
            r.summary.answerSamples = samples
            if segment != nil {
                r.summary.segment = "\(seg.index)/\(seg.count)"
                r.summary.workers = workers.count  // a closed profile's segment runs its share of the workers
            }
            if !faultProfile.isEmpty {
                r.summary.faults =
                    "\(faultProfile)"
                    + (driver.faultsInjected > 0
                        ? "; backend killed \(driver.faultsInjected) times, \(killEvery) s after each restart" : "")
            }
            let stamp = CivilTime.iso8601(Millis(Date().timeIntervalSince1970 * 1000)).replacingOccurrences(
                of: ":", with: ""
            ).replacingOccurrences(of: ".", with: "")
            let dir = (results as NSString).appendingPathComponent(
                "\(p.name)-\(stamp)\(segment.map { "-segment-" + $0.replacingOccurrences(of: "/", with: "of") } ?? "")")
            do { try r.write(to: dir) } catch {
                Load.printSummary(r)
                throw fail(
                    "error: could not write the results to \(dir): \(StrictJSON.reason(error)); the summary above is the record of this run",
                    code: Exit.usage)
            }
            if Interrupt.requested {
                // What it had, then the exit code of an interrupted run; thresholds are not gated on a partial run,
                // and `load merge` refuses an interrupted segment.
                do { try Load.report(r, dir: dir, profile: p, baseline: nil) } catch {}
                print(
                    "interrupted after \(String(format: "%.1f", elapsed)) s of \(p.durationSeconds) s; partial results above. Run again: iapcheck \(CommandLine.arguments.dropFirst().map(Shell.quote).joined(separator: " "))"
                )
                throw ExitCode(130)
            }
            if segment != nil {
                // A segment sends only its share: its gates are evaluated on the merge (`iapcheck load merge`).
                print("segment \(segment!): thresholds and baselines are gated on the merged result, not per segment")
                do { try Load.report(r, dir: dir, profile: p, baseline: nil) } catch let e as ExitCode
                    where e.rawValue == thresholdExit
                {}
                return
            }
            try Load.report(r, dir: dir, profile: p, baseline: baseline)
        }
    }

    /// A profile, or exit code 2 with every problem named.
    static func profile(_ path: String) throws -> LoadProfile {
        do {
            return try LoadProfile.load(path: path)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    static func printSummary(_ r: LoadResults) {
        let s = r.summary
        print(
            "\(s.profile): \(s.requests) requests in \(String(format: "%.1f", s.durationSeconds)) s = \(Int(s.throughputPerSecond))/s; latency p50 \(LoadResults.milliseconds(s.latencyMicros["p50"])) p99 \(LoadResults.milliseconds(s.latencyMicros["p99"])) p99.9 \(LoadResults.milliseconds(s.latencyMicros["p99.9"])) max \(LoadResults.milliseconds(s.latencyMicros["max"])) (uncorrected p99 \(LoadResults.milliseconds(s.uncorrectedLatencyMicros["p99"]))); errors \(s.errors.isEmpty ? "none" : s.errors.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")); dropped \(s.dropped); answer samples checked against the oracle \(s.answersChecked ?? 0)"
        )
        if let items = s.poolItems {
            let repeats = s.repeats ?? 0
            print(
                "  pool: \(items) artifacts and questions, run id \(s.runId ?? "?")"
                    + (repeats > 0
                        ? "; \(repeats) requests sent an artifact again, byte-identical (the run outlasted the pool: raise pool.size)"
                        : "; every request sent an artifact of its own"))
        }
        for o in s.operations ?? [] where (s.operations?.count ?? 0) > 1 || !o.errors.isEmpty {
            print(
                "  \(o.operation): \(o.requests) requests, \(String(format: "%.0f", o.throughputPerSecond))/s, p50 \(LoadResults.milliseconds(o.latencyMicros["p50"])) p99 \(LoadResults.milliseconds(o.latencyMicros["p99"])), errors \(String(format: "%.3g", o.errorRate * 100))%"
            )
            for (reason, n) in o.errors.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) {
                print("    \(n) × \(reason)")
                if let sample = o.errorSamples[reason] { print("        first: \(sample)") }
            }
        }
        if let c = s.capacity { printCapacity(c) }
        if let a = s.rssStartBytes, let b = s.rssEndBytes, a > 0 {
            print(
                String(
                    format:
                        "  memory: iapcheck's RSS %.1f MB at the start of the measured run, %.1f MB at its end (%+.1f%%)",
                    Double(a) / 1e6, Double(b) / 1e6, (Double(b) - Double(a)) / Double(a) * 100))
        }
        if let wrong = s.answersWrong, let restarts = s.faultSeconds?.count {
            print(
                "  acknowledged deliveries: \(s.answersChecked ?? 0) answer samples checked against the oracle across \(restarts) restarts of the backend, \(wrong) disagreeing"
            )
        }
        for line in s.notSent ?? [] { print("  not sent: \(line)") }
        if let samples = s.answerSamples {
            // One count, one name: the headline's samples, and the distinct questions they were drawn from.
            let checked = s.answersChecked ?? 0
            print("  answer samples: \(checked) checked\(checked > 0 ? ", each one of " : "; ")\(samples)")
        }
        for t in s.thresholds {
            print(
                "  \(t.passed ? "pass" : "FAIL")  \(t.rule)  (observed \(t.shown ?? String(format: "%.4g", t.observed)))"
            )
        }
    }

    /// An earlier summary of this profile, or exit 2: another profile's figures say nothing of a regression. With
    /// `note`, says so when the baseline ran another workload of this profile.
    static func readBaseline(_ path: String, for p: LoadProfile, note: Bool = true) throws -> LoadResults.Summary {
        let b: LoadResults.Summary
        do {
            b = try LoadResults.loadBaseline(path: path)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
        guard b.profile == p.name else {
            throw fail(
                "error: --baseline \(path) is a summary of profile \(b.profile), not of \(p.name)", code: Exit.usage)
        }
        if note, let w = b.workload, w != p.workload {
            FileHandle.standardError.write(
                Data(
                    "note: the baseline \(path) ran another workload than the profile now describes (\(w)); the comparison may not be like for like\n"
                        .utf8))
        }
        return b
    }

    static func report(_ r: LoadResults, dir: String, profile p: LoadProfile, baseline: String?) throws {
        let s = r.summary
        printSummary(r)
        var regressions: [String] = []
        if let baseline {
            let b = try readBaseline(baseline, for: p)
            regressions = r.regressions(against: b, tolerance: p.baselineTolerance)
            print(
                regressions.isEmpty
                    ? "baseline: within \(Int(p.baselineTolerance * 100))% of \(baseline)"
                    : "baseline: REGRESSION against \(baseline)")
            for line in regressions { print("  \(line)") }
        }
        print("results: \(dir)/report.html")
        if !s.passed || !regressions.isEmpty { throw ExitCode(thresholdExit) }
    }

    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Merge the result folders of the segments of one profile (histograms, not averages) into one result folder."
        )
        @Argument(help: "The profile the segments ran.") var profile: String
        @Argument(help: "Segment result folders.") var directories: [String]
        @Option(help: "Directory for the merged result folder.") var results = "Results"
        @Option(help: "Compare the merged result with an earlier summary.json.") var baseline: String?
        @OptionGroup(title: "The app the segments ran (as given to them)") var app: LoadAppOptions

        func run() throws {
            var given = try Load.profile(profile)
            given.app = given.app.overridden(by: app.app)
            let p = given
            if let baseline { _ = try Load.readBaseline(baseline, for: p, note: false) }
            let r: LoadResults
            do {
                r = try LoadResults.merge(directories, profile: p)
            } catch {
                throw fail("error: cannot merge \(directories.joined(separator: ", ")): \(error)", code: Exit.usage)
            }
            let dir = (results as NSString).appendingPathComponent("\(p.name)-merged-\(directories.count)-segments")
            try writeResults("the merged results", to: dir) { try r.write(to: dir) }
            try Load.report(r, dir: dir, profile: p, baseline: baseline)
        }
    }

}
