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
        @Flag(
            help:
                "Keep the {tmp} folder of a backend iapcheck starts (its output, its data, its clock) after the run, as check --keep-tmp does."
        ) var keepTmp = false
        @OptionGroup(title: "The app under load") var app: LoadAppOptions

        func run() throws {
            let p = try Load.profile(profile, app: app)
            let (catalog, policy) = try Load.app(p)
            try requireWritable(directory: results)
            if keepTmp { ManagedBackend.keepDirectories.withLock { $0 = true } }
            // Before the run: a baseline that cannot be read would fail it only at the end.
            let base = try baseline.map { try Load.readBaseline($0, for: p, note: false) }
            let faultProfile = try parseFaults(faults)
            // a bad target is a usage error before anything starts
            let first = try makeValidator(p.target, timeout: timeout, faults: faultProfile, forLoad: true)
            let run = try loadRun(
                p, catalog: catalog, policy: policy, faults: faultProfile, first: first, baseline: base)
            try? FileHandle.standardError.write(contentsOf: Data("load \(p.name): rendering the artifact pool…\n".utf8))
            // Ctrl-C: the workers stop after their current request; what was measured is written and reported.
            Interrupt.install()
            let (target, t) = (p.target, timeout)
            let verdict = try Load.exiting {
                try run.run(first: first) { frozen in
                    let v = try makeValidator(target, timeout: t, faults: faultProfile, forLoad: true)
                    (v as? HTTPValidator)?.frozenClock = frozen
                    return v
                }
            }
            guard let r = verdict.results else {
                print("interrupted during warm-up, before any measured request; nothing written")
                throw ExitCode(130)
            }
            try finish(r, of: run, verdict: verdict)
        }
    }

    /// A profile with the app's options over its keys, or exit code 2 with every problem named.
    static func profile(_ path: String, app: LoadAppOptions) throws -> LoadProfile {
        do {
            var p = try LoadProfile.load(path: path)
            p.app = p.app.overridden(by: app.app)
            return p
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    /// A library run's failure as its message and exit code.
    static func exiting<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as LoadRun.Failure { throw fail("\(e)", code: e.exitCode) }
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
            try? FileHandle.standardError.write(
                contentsOf:
                    Data(
                        "note: the baseline \(path) ran another workload than the profile now describes (\(w)); the comparison may not be like for like\n"
                            .utf8))
        }
        return b
    }

    static func report(_ r: LoadResults, dir: String, profile p: LoadProfile, baseline: String?) throws {
        let s = r.summary
        for line in r.summaryLines { print(line) }
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
            let p = try Load.profile(profile, app: app)
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
