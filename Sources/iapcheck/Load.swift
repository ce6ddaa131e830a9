import ArgumentParser
import Foundation
import IAPLoad
import IAPModel
import IAPValidators

/// Exit code when a load run's thresholds (or the baseline comparison) fail.
let thresholdExit: Int32 = 4

struct Load: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a load profile against a validator's hot verification path and gate on its thresholds.",
        discussion: """
        Artifacts are rendered before the clock starts; rate executors compute their intended send times up front and \
        latency counts from the intended time (coordinated omission corrected; the uncorrected figure is kept too). \
        Each worker owns its validator and its HdrHistograms, merged at the end. Results go to \
        Results/<profile>-<time>/: summary.json, latency.hgrm, latency-uncorrected.hgrm, histogram.json, report.html.

        Exit codes: 0 thresholds pass; 2 bad profile; 3 the validator failed as a program; 4 a threshold failed.
        """)

    @Argument(help: "Profile file (JSON), e.g. Profiles/smoke.json.") var profile: String
    @Option(help: "Directory for the result folder.") var results = "Results"
    @Option(help: "Seconds per request for exec: targets.") var timeout: Double = 5
    @Flag(help: "No live progress line.") var quiet = false

    func run() throws {
        let p: LoadProfile
        do {
            p = try LoadProfile.load(path: profile)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
        _ = try makeValidator(p.target, timeout: timeout)  // a bad target is a usage error before anything starts
        let target = p.target, t = timeout
        FileHandle.standardError.write(Data("load \(p.name): rendering the artifact pool…\n".utf8))
        let pool = ArtifactPool.build(p)
        let driver = LoadDriver(profile: p, pool: pool) { try makeValidator(target, timeout: t) }
        if !quiet {
            driver.progress = { s, n in FileHandle.standardError.write(Data("load \(p.name): \(s) s, \(n) requests\n".utf8)) }
        }
        let workers: [LoadDriver.WorkerResult]
        do {
            if p.warmupSeconds > 0 { _ = try driver.run(seconds: p.warmupSeconds, record: false) }
            workers = try driver.run(seconds: p.durationSeconds, record: true)
        } catch let e as ValidatorFailure {
            throw fail("validator failure: \(e)", code: Exit.validatorFailure)
        }
        let r = LoadResults(profile: p, workers: workers, seconds: p.durationSeconds)
        let stamp = CivilTime.iso8601(Millis(Date().timeIntervalSince1970 * 1000)).replacingOccurrences(of: ":", with: "").replacingOccurrences(of: ".", with: "")
        let dir = (results as NSString).appendingPathComponent("\(p.name)-\(stamp)")
        try r.write(to: dir)
        let s = r.summary
        print("\(p.name): \(s.requests) requests in \(String(format: "%.1f", s.durationSeconds)) s = \(Int(s.throughputPerSecond))/s; latency p50 \(Self.ms(s.latencyMicros["p50"])) p99 \(Self.ms(s.latencyMicros["p99"])) p99.9 \(Self.ms(s.latencyMicros["p99.9"])) max \(Self.ms(s.latencyMicros["max"])) (uncorrected p99 \(Self.ms(s.uncorrectedLatencyMicros["p99"]))); errors \(s.errors.isEmpty ? "none" : s.errors.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")); dropped \(s.dropped)")
        for t in s.thresholds { print("  \(t.passed ? "pass" : "FAIL")  \(t.rule)  (observed \(String(format: "%.4g", t.observed)))") }
        print("results: \(dir)/report.html")
        if !s.passed { throw ExitCode(thresholdExit) }
    }

    static func ms(_ us: UInt64?) -> String { String(format: "%.2f ms", Double(us ?? 0) / 1000) }
}
