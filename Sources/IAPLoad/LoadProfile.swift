import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

/// A load profile (`Profiles/*.json`), decoded strictly: every problem is reported with the file and key.
public struct LoadProfile: Sendable {
    public enum Executor: Sendable, Equatable {
        /// N workers, each sending its next request as soon as the previous one is answered.
        case closed(workers: Int)
        /// Requests at a fixed arrival rate (per second), spread over the workers; latency counts from the intended
        /// send time (coordinated omission corrected).
        case constantRate(rate: Double, workers: Int)
        /// Piecewise-linear arrival rate through the stages.
        case rampingRate(stages: [(rate: Double, seconds: Double)], workers: Int)
        /// Constant-rate steps, raised then bisected, for the highest rate at which the thresholds hold
        /// (``CapacitySearch``); `durationSeconds` bounds the search.
        case findCapacity(CapacitySearch, workers: Int)

        public static func == (a: Executor, b: Executor) -> Bool { "\(a)" == "\(b)" }

        public var workers: Int {
            switch self {
            case .closed(let w), .constantRate(_, let w), .rampingRate(_, let w), .findCapacity(_, let w): w
            }
        }
    }

    public var name: String
    /// `reference`, `mutant:NAME`, `exec:COMMAND` or `http:TARGET.json` (one connection per worker).
    public var target: String
    public var mix: [Operation: Int]
    public var poolSize: Int
    public var poolSeed: UInt64
    /// Share of artifacts signed by leaves outside the validator's warm chains (0 cache-friendly … 1 cache-hostile).
    public var distinctChains: Double
    public var executor: Executor
    public var warmupSeconds: Double
    public var durationSeconds: Double
    /// Requests later than this behind their intended send time are not sent and count as dropped.
    public var maxLagSeconds: Double
    public var thresholds: [Threshold]
    /// Allowed relative regression against `--baseline` (0.10 = 10 %).
    public var baselineTolerance: Double
    /// Share of questions (percent) replaced by a question whose answer is known from the oracle: a different answer
    /// counts as a `wrong-answer` error. 0 turns the check off.
    public var answerSamplePercent: Double = 1
    /// The app whose artifacts the pool holds (``App``); the built-in catalog when it names none.
    public var app = App()

    /// The app under load, as `check`'s `--catalog`, `--bundle-id`, `--app-apple-id`, `--environment`,
    /// `--entitlements` and `--policy` name it (the same options of `load` override these keys). Paths are relative to
    /// the working directory, as `target`'s is.
    public struct App: Sendable, Equatable {
        public var catalog: String?
        public var bundleId: String?
        public var appAppleId: Int64?
        public var environment: String?
        public var entitlements: String?
        public var policy: String?
        public init() {}

        /// `catalog X, bundle id Y, …`: the keys given, for the workload line; empty for the built-in catalog.
        public var description: String {
            [
                catalog.map { "catalog \($0)" }, bundleId.map { "bundle id \($0)" },
                appAppleId.map { "app apple id \($0)" }, environment.map { "environment \($0)" },
                entitlements.map { "entitlements \($0)" }, policy.map { "policy \($0)" },
            ].compactMap { $0 }.joined(separator: ", ")
        }

        /// These keys with every key `other` gives in their place.
        public func overridden(by other: App) -> App {
            var a = self
            a.catalog = other.catalog ?? catalog
            a.bundleId = other.bundleId ?? bundleId
            a.appAppleId = other.appAppleId ?? appAppleId
            a.environment = other.environment ?? environment
            a.entitlements = other.entitlements ?? entitlements
            a.policy = other.policy ?? policy
            return a
        }
    }

    /// Everything that decides what a run sends and when, in one line: the segments of one run must share it to be
    /// merged (thresholds and the baseline tolerance only judge the figures, and may differ).
    public var workload: String {
        let ops = Operation.allCases.map { "\($0.rawValue) \(mix[$0] ?? 0)" }.joined(separator: ", ")
        let app = app.description.isEmpty ? "" : "app \(app.description); "
        return
            "target \(target); \(app)mix \(ops); pool \(poolSize) seed \(poolSeed); distinct chains \(distinctChains); \(executor); warm-up \(warmupSeconds) s; duration \(durationSeconds) s; max lag \(maxLagSeconds) s; answer sample \(answerSamplePercent)%"
    }

    public enum Operation: String, CaseIterable, Sendable {
        case appTransaction, notification, query, legacyReceipt

        /// Its place in `allCases`.
        public var index: Int {
            switch self {
            case .appTransaction: 0
            case .notification: 1
            case .query: 2
            case .legacyReceipt: 3
            }
        }

        /// The channel a delivery of this kind travels on; nil for a question.
        public var channel: DeliveryChannel? {
            switch self {
            case .appTransaction: .app
            case .notification: .notification
            case .legacyReceipt: .legacy
            case .query: nil
            }
        }
    }

    public init(
        name: String, target: String, mix: [Operation: Int], poolSize: Int, poolSeed: UInt64, distinctChains: Double,
        executor: Executor, warmupSeconds: Double, durationSeconds: Double, maxLagSeconds: Double,
        thresholds: [Threshold], baselineTolerance: Double, answerSamplePercent: Double = 1
    ) {
        self.name = name
        self.target = target
        self.mix = mix
        self.poolSize = poolSize
        self.poolSeed = poolSeed
        self.distinctChains = distinctChains
        self.executor = executor
        self.warmupSeconds = warmupSeconds
        self.durationSeconds = durationSeconds
        self.maxLagSeconds = maxLagSeconds
        self.thresholds = thresholds
        self.baselineTolerance = baselineTolerance
        self.answerSamplePercent = answerSamplePercent
    }

    /// A `.json` profile, or a `.yaml`/`.yml` one (the same keys; read into the same strict decoder, so problems are
    /// reported with the same key paths).
    public static func load(path: String) throws(ConfigError) -> LoadProfile {
        var data = try StrictJSON.readFile(path)
        if path.hasSuffix(".yaml") || path.hasSuffix(".yml") { data = try YAMLProfile.json(from: data, file: path) }
        return try decode(data, file: path)
    }
}

/// A pass/fail rule on the merged results: `p99 < 20ms`, `p99.9 <= 50ms`, `max < 1s`, `errors < 0.1%`,
/// `dropped < 1%`, `throughput >= 5000/s`; any of them for one operation: `p99{op:notification} < 200ms`.
public struct Threshold: Sendable, CustomStringConvertible {
    public enum Metric: Sendable, Equatable { case percentile(Double), max, errors, dropped, throughput }
    public enum Comparison: String, Sendable { case lt = "<", le = "<=", gt = ">", ge = ">=" }
    public var metric: Metric
    public var comparison: Comparison
    /// Microseconds for latencies, a fraction for errors/dropped, per second for throughput.
    public var value: Double
    public var description: String
    /// `p99{op:notification} < 200ms`: the rule holds for that operation's requests alone.
    public var operation: LoadProfile.Operation?

    public init?(_ text: String) {
        let parts = text.split(separator: " ").map(String.init)
        guard parts.count == 3, let cmp = Comparison(rawValue: parts[1]) else { return nil }
        description = text
        comparison = cmp
        var lhs = parts[0].lowercased()
        let rhs = parts[2].lowercased()
        if let open = lhs.firstIndex(of: "{") {
            guard lhs.hasSuffix("}") else { return nil }
            let inner = lhs[lhs.index(after: open)..<lhs.index(before: lhs.endIndex)]
            guard inner.hasPrefix("op:"),
                let op = LoadProfile.Operation.allCases.first(where: { $0.rawValue.lowercased() == inner.dropFirst(3) })
            else { return nil }
            operation = op
            lhs = String(lhs[..<open])
        }
        switch lhs {
        case "max": metric = .max
        case "errors": metric = .errors
        case "dropped": metric = .dropped
        case "throughput": metric = .throughput
        default:
            guard lhs.hasPrefix("p"), let p = Double(lhs.dropFirst()), p > 0, p < 100 else { return nil }
            metric = .percentile(p)
        }
        switch metric {
        case .percentile, .max:
            let units: [(String, Double)] = [("us", 1), ("µs", 1), ("ms", 1000), ("s", 1_000_000)]
            guard let (suffix, scale) = units.first(where: { rhs.hasSuffix($0.0) }),
                let v = Double(rhs.dropLast(suffix.count))
            else { return nil }
            value = v * scale
        case .errors, .dropped:
            guard rhs.hasSuffix("%"), let v = Double(rhs.dropLast()) else { return nil }
            value = v / 100
        case .throughput:
            guard rhs.hasSuffix("/s"), let v = Double(rhs.dropLast(2)) else { return nil }
            value = v
        }
    }

    /// An observed value in the rule's own units: `0.298 ms`, `0.5%`, `428/s`.
    public func show(_ observed: Double) -> String {
        switch metric {
        case .percentile, .max: String(format: "%.3f ms", observed / 1000)
        case .errors, .dropped: String(format: "%.3g%%", observed * 100)
        case .throughput: String(format: "%.0f/s", observed)
        }
    }

    public func holds(_ observed: Double) -> Bool {
        switch comparison {
        case .lt: observed < value
        case .le: observed <= value
        case .gt: observed > value
        case .ge: observed >= value
        }
    }
}
