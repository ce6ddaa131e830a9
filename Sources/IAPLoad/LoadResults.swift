import Foundation
import Histogram
import IAPEncoding
import IAPModel

/// The merged outcome of a load run and everything written to its result folder.
public struct LoadResults: Sendable {
    public struct Summary: Codable, Sendable {
        public var profile: String
        public var target: String
        public var executor: String
        public var workers: Int
        public var durationSeconds: Double
        public var requests: Int
        public var throughputPerSecond: Double
        /// Latency from the intended send time (coordinated omission corrected), microseconds.
        public var latencyMicros: [String: UInt64]
        /// Latency from the actual send, microseconds.
        public var uncorrectedLatencyMicros: [String: UInt64]
        public var errors: [String: Int]
        public var errorRate: Double
        public var dropped: Int
        public var droppedRate: Double
        public var thresholds: [ThresholdResult]
        public var passed: Bool
        public var environment: [String: String]
        public var perSecond: [SecondSummary]
        /// Questions compared with the oracle's answer during the run (a mismatch is a `wrong-answer` error).
        public var answersChecked: Int? = nil
        /// The fault profile the run was under, if any.
        public var faults: String? = nil
        /// Set when the run was stopped early (Ctrl-C): the figures cover `durationSeconds` only.
        public var interrupted: Bool? = nil
        /// `i/N` when this is one segment of a run split with `--segment`.
        public var segment: String? = nil
        /// The profile's ``LoadProfile/workload``: what the run sent, which the segments of one run share.
        public var workload: String? = nil
        /// The command-line options that change what a run measures (`--faults`, `--timeout`): the segments of one
        /// run share them too.
        public var options: String? = nil
        /// The run id the pool's ids were made from (`--run-id` sends the same ids again).
        public var runId: String? = nil
        /// Requests that sent a pool artifact again, byte-identical, because the run outlasted the pool.
        public var repeats: Int? = nil
        /// Artifacts and questions in the pool.
        public var poolItems: Int? = nil
        /// Operations of the mix that were not sent, each with why (a channel the target does not take).
        public var notSent: [String]? = nil
        /// How the answer samples were asked and compared, or why there were none.
        public var answerSamples: String? = nil
        /// Per operation type: requests, throughput, latency and errors by reason.
        public var operations: [OperationSummary]? = nil
        /// A `find-capacity` run's result: the rate found and every step; the run's other figures are those of the
        /// step at that rate (of the first step when none held).
        public var capacity: CapacitySearch.Result? = nil
        /// iapcheck's own resident memory (bytes) when the measured run started and when it ended: a soak shows
        /// whether it stays flat. Nil where the system does not say (read from /proc on Linux).
        public var rssStartBytes: UInt64? = nil
        public var rssEndBytes: UInt64? = nil
        /// When an injected fault fired (the backend killed and restarted), seconds into the run.
        public var faultSeconds: [Double]? = nil
        /// Answer samples whose answer differed from the oracle's (each also a `wrong-answer` error).
        public var answersWrong: Int? = nil
    }

    /// This process's resident set size in bytes (Linux: /proc/self/statm), nil elsewhere.
    public static func residentBytes() -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = UInt64(fields[1]) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

    public struct ThresholdResult: Codable, Sendable {
        public var rule: String
        /// Microseconds for latencies, a fraction for errors and dropped requests, per second for throughput.
        public var observed: Double
        /// `observed` in the rule's units (`0.298 ms`).
        public var shown: String? = nil
        public var passed: Bool
    }

    public struct SecondSummary: Codable, Sendable {
        public var second: Int
        public var requests: Int
        public var errors: Int
        public var p50Micros: UInt64
        public var p99Micros: UInt64
    }

    public var summary: Summary

    /// An earlier run's `summary.json` for `--baseline`, or a ConfigError naming the file and the key.
    public static func loadBaseline(path: String) throws(ConfigError) -> Summary {
        let data = try StrictJSON.readFile(path)
        _ = try StrictJSON(file: path).root(data)  // not UTF-8, not JSON, not an object, nested too deep
        return try StrictJSON.decode(Summary.self, from: data, file: path, what: "a summary.json of iapcheck load")
    }
    public var corrected: Histogram<UInt64>
    public var uncorrected: Histogram<UInt64>

    /// Relative regressions against an earlier summary beyond `tolerance`: lower throughput, higher p50/p99/p99.9,
    /// a higher error rate. Empty when within tolerance.
    public func regressions(against baseline: Summary, tolerance: Double) -> [String] {
        var out: [String] = []
        let s = summary
        if s.throughputPerSecond < baseline.throughputPerSecond * (1 - tolerance) {
            out.append(
                String(
                    format: "throughput %.0f/s is more than %.0f%% below the baseline's %.0f/s", s.throughputPerSecond,
                    tolerance * 100, baseline.throughputPerSecond))
        }
        for k in ["p50", "p99", "p99.9"] {
            if let now = s.latencyMicros[k], let then = baseline.latencyMicros[k], then > 0,
                Double(now) > Double(then) * (1 + tolerance)
            {
                out.append(
                    String(
                        format: "%@ %.3f ms is more than %.0f%% above the baseline's %.3f ms", k, Double(now) / 1000,
                        tolerance * 100, Double(then) / 1000))
            }
        }
        if s.errorRate > baseline.errorRate + 0.001 {
            out.append(
                String(
                    format: "error rate %.3f%% is above the baseline's %.3f%%", s.errorRate * 100,
                    baseline.errorRate * 100))
        }
        return out
    }

    static let percentiles: [(String, Double)] = [
        ("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9), ("p99.99", 99.99),
    ]

    /// The histograms a run records, in microseconds up to two minutes: latency (3 significant digits), and latency
    /// per second of the run (2). `load merge` reads back only these configurations.
    public static func latencyHistogram() -> Histogram<UInt64> {
        Histogram(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
    }

    public static func perSecondHistogram() -> Histogram<UInt64> {
        Histogram(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .two)
    }

    public init(profile: LoadProfile, workers: [LoadDriver.WorkerResult], seconds: Double) {
        var corrected = Self.latencyHistogram()
        var uncorrected = corrected
        var errors: [String: Int] = [:]
        var perSecond: [Histogram<UInt64>] = []
        var errorsPerSecond: [Int] = []
        var sent = 0, dropped = 0, checked = 0, repeats = 0
        var operations = [OperationResult](repeating: OperationResult(), count: LoadProfile.Operation.allCases.count)
        for w in workers {
            checked += w.answersChecked
            repeats += w.repeats
            for (i, o) in w.operations.enumerated() { operations[i].add(o) }
            corrected.add(w.corrected)
            uncorrected.add(w.uncorrected)
            for (k, v) in w.errors { errors[k, default: 0] += v }
            sent += w.sent
            dropped += w.dropped
            let secondsOfWorker = max(w.perSecond.count, w.perSecondBuckets.count, w.errorsPerSecond.count)
            while perSecond.count < secondsOfWorker {
                perSecond.append(Self.perSecondHistogram())
                errorsPerSecond.append(0)
            }
            for (i, h) in w.perSecond.enumerated() { perSecond[i].add(h) }
            for (i, buckets) in w.perSecondBuckets.enumerated() {
                for b in buckets { _ = perSecond[i].record(b.value, count: b.count) }
            }
            for (i, e) in w.errorsPerSecond.enumerated() { errorsPerSecond[i] += e }
        }
        let errorCount = errors.values.reduce(0, +)
        let throughput = Double(sent) / seconds
        let attempted = sent + dropped
        let errorRate = sent > 0 ? Double(errorCount) / Double(sent) : 0
        let droppedRate = attempted > 0 ? Double(dropped) / Double(attempted) : 0
        let results = profile.thresholds.map { t -> ThresholdResult in
            // A rule for one operation reads that operation's figures.
            let o = t.operation.map { operations[$0.index] }
            let h = o?.corrected ?? corrected
            let (n, failed, lost) =
                o.map { ($0.requests, $0.errors.values.reduce(0, +), $0.dropped) } ?? (sent, errorCount, dropped)
            let observed: Double =
                switch t.metric {
                case .percentile(let p): Double(h.totalCount > 0 ? h.valueAtPercentile(p) : 0)
                case .max: Double(h.totalCount > 0 ? h.max : 0)
                case .errors: n > 0 ? Double(failed) / Double(n) : 0
                case .dropped: n + lost > 0 ? Double(lost) / Double(n + lost) : 0
                case .throughput: Double(n) / seconds
                }
            return ThresholdResult(
                rule: t.description, observed: observed, shown: t.show(observed), passed: t.holds(observed))
        }
        let series = perSecond.enumerated().map { i, h in
            SecondSummary(
                second: i, requests: Int(h.totalCount), errors: errorsPerSecond[i],
                p50Micros: h.totalCount > 0 ? h.valueAtPercentile(50) : 0,
                p99Micros: h.totalCount > 0 ? h.valueAtPercentile(99) : 0)
        }
        summary = Summary(
            profile: profile.name, target: profile.target, executor: "\(profile.executor)",
            workers: profile.executor.workers,
            durationSeconds: seconds, requests: sent, throughputPerSecond: throughput,
            latencyMicros: Self.spectrum(corrected),
            uncorrectedLatencyMicros: Self.spectrum(uncorrected), errors: errors, errorRate: errorRate,
            dropped: dropped,
            droppedRate: droppedRate, thresholds: results, passed: results.allSatisfy(\.passed),
            environment: [
                "iapcheck": IAPCheckVersion.current, "cores": String(ProcessInfo.processInfo.activeProcessorCount),
                "os": ProcessInfo.processInfo.operatingSystemVersionString,
            ],
            perSecond: series)
        summary.answersChecked = checked
        summary.repeats = repeats
        summary.operations = Self.operationSummaries(operations, seconds: seconds)
        self.operations = operations
        summary.workload = profile.workload
        self.corrected = corrected
        self.uncorrected = uncorrected
        self.perSecondHistograms = perSecond
    }

    var perSecondHistograms: [Histogram<UInt64>] = []
    /// By operation, in ``LoadProfile/Operation`` order: written to operations.json for `load merge`.
    var operations: [OperationResult] = []

    /// Writes summary.json, latency.hgrm (corrected, milliseconds), latency-uncorrected.hgrm, histogram.json and
    /// report.html into `directory`, each atomically.
    public func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
        try JSONFormat.write(summary, to: path("summary.json"))
        var hgrm = "", raw = ""
        corrected.outputPercentileDistribution(to: &hgrm, outputValueUnitScalingRatio: 1000)
        uncorrected.outputPercentileDistribution(to: &raw, outputValueUnitScalingRatio: 1000)
        try hgrm.write(toFile: path("latency.hgrm"), atomically: true, encoding: .utf8)
        try raw.write(toFile: path("latency-uncorrected.hgrm"), atomically: true, encoding: .utf8)
        try JSONFormat.write(corrected, to: path("histogram.json"))
        try JSONFormat.write(uncorrected, to: path("histogram-uncorrected.json"))
        try JSONFormat.write(perSecondHistograms, to: path("per-second.json"))
        try JSONFormat.write(
            Dictionary(
                uniqueKeysWithValues: LoadProfile.Operation.allCases.compactMap { op in
                    operations.indices.contains(op.index) && operations[op.index].corrected.totalCount > 0
                        ? (op.rawValue, operations[op.index].corrected) : nil
                }), to: path("operations.json"))
        try LoadReportHTML.render(self).write(toFile: path("report.html"), atomically: true, encoding: .utf8)
    }
}

extension LoadResults {
    /// A latency of the summaries (µs) as the text reports print it: milliseconds with two decimals.
    public static func milliseconds(_ us: UInt64?) -> String { String(format: "%.2f ms", Double(us ?? 0) / 1000) }
}
