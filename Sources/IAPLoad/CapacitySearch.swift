import Foundation
import IAPModel

/// The `find-capacity` executor: how many requests per second the target sustains while every threshold of the
/// profile holds. Open loop (each step a constant-rate run, latency from the intended send), the rate raised by
/// `growth` from `startRate` until a step fails, then bisected between the last passing and the first failing rate
/// until they are within `resolutionPercent`. The profile's `durationSeconds` bounds the whole search.
public struct CapacitySearch: Sendable, Equatable, CustomStringConvertible {
    public var startRate: Double
    public var maxRate: Double
    public var growth: Double
    public var stepSeconds: Double
    /// The search stops when the failing rate is within this share of the passing one (5 = 5 %).
    public var resolutionPercent: Double

    public init(startRate: Double, maxRate: Double, growth: Double, stepSeconds: Double, resolutionPercent: Double) {
        self.startRate = startRate
        self.maxRate = maxRate
        self.growth = growth
        self.stepSeconds = stepSeconds
        self.resolutionPercent = resolutionPercent
    }

    /// `from 50/s, growth ×2, steps of 5 s, resolution 5%, at most 1000000/s` (in the workload line).
    public var description: String {
        "from \(Self.rate(startRate)), growth ×\(growth), steps of \(Int(stepSeconds)) s, resolution \(resolutionPercent)%, at most \(Self.rate(maxRate))"
    }

    /// One step of the search, as `summary.json` records it (`capacity.steps`).
    public struct Step: Codable, Sendable {
        /// Offered rate, requests per second of the whole profile (all segments).
        public var offeredRate: Double
        public var requests: Int
        public var dropped: Int
        public var throughputPerSecond: Double
        public var p50Micros: UInt64
        public var p99Micros: UInt64
        public var errors: Int
        public var errorRate: Double
        public var passed: Bool
        /// The rules this step broke, with the observed value (`p99 < 50ms: 61.2 ms`).
        public var failed: [String]

        public init(
            offeredRate: Double, requests: Int, dropped: Int, throughputPerSecond: Double, p50Micros: UInt64,
            p99Micros: UInt64, errors: Int, errorRate: Double, passed: Bool, failed: [String]
        ) {
            self.offeredRate = offeredRate
            self.requests = requests
            self.dropped = dropped
            self.throughputPerSecond = throughputPerSecond
            self.p50Micros = p50Micros
            self.p99Micros = p99Micros
            self.errors = errors
            self.errorRate = errorRate
            self.passed = passed
            self.failed = failed
        }
    }

    /// `summary.json`'s `capacity`.
    public struct Result: Codable, Sendable {
        /// The highest offered rate at which every threshold held; nil when even the first step failed.
        public var ratePerSecond: Double?
        /// The throughput measured in that step.
        public var throughputPerSecond: Double?
        public var steps: [Step]
        /// Why the search ended: resolution reached, the maximum rate passed, the time budget spent, or interrupted.
        public var ended: String
        /// How many segments' searches were merged into this one (nil for a single run).
        public var segments: Int? = nil

        public init(
            ratePerSecond: Double?, throughputPerSecond: Double?, steps: [Step], ended: String, segments: Int? = nil
        ) {
            self.ratePerSecond = ratePerSecond
            self.throughputPerSecond = throughputPerSecond
            self.steps = steps
            self.ended = ended
            self.segments = segments
        }
    }

    /// The rate of the next step after `steps`, or nil with why the search ends. Raise by `growth` while every step
    /// passed; after the first failure, bisect between the highest pass and the lowest failure above it.
    public func next(after steps: [Step], budgetSeconds: Double) -> (rate: Double?, ended: String) {
        guard !steps.isEmpty else { return (startRate, "") }
        if Double(steps.count + 1) * stepSeconds > budgetSeconds + 1e-9 {
            return (nil, "time budget spent (durationSeconds \(Int(budgetSeconds)) s, \(steps.count) steps)")
        }
        let passing = steps.filter(\.passed).map(\.offeredRate).max()
        let failing = steps.filter { !$0.passed && $0.offeredRate > (passing ?? 0) }.map(\.offeredRate).min()
        switch (passing, failing) {
        case (nil, _):
            return (nil, "the first step (\(Self.rate(startRate))) failed: lower startRate")
        case (let lo?, nil):
            if lo >= maxRate { return (nil, "maxRate \(Self.rate(maxRate)) held: raise maxRate") }
            return (min(lo * growth, maxRate), "")
        case (let lo?, let hi?):
            if (hi - lo) / lo <= resolutionPercent / 100 {
                return (nil, "resolution reached (\(Self.rate(lo)) holds, \(Self.rate(hi)) does not)")
            }
            return ((lo + hi) / 2, "")
        }
    }

    static func rate(_ r: Double) -> String { String(format: "%.0f/s", r) }

    /// Judges one step by the profile's thresholds (a throughput rule is judged on the capacity found, not per step)
    /// and by whether the target kept up: a step whose throughput is below 90 % of the rate it was offered fails.
    public static func judge(_ r: LoadResults, offered: Double, profile: LoadProfile, segments: Int) -> Step {
        let s = r.summary
        var failed: [String] = []
        for (t, result) in zip(profile.thresholds, s.thresholds) where t.metric != .throughput && !result.passed {
            failed.append("\(t.description): \(result.shown ?? "\(result.observed)")")
        }
        let share = offered / Double(segments)
        if s.throughputPerSecond < 0.9 * share {
            failed.append(
                String(format: "kept up: %.0f/s of the %.0f/s offered (below 90 %%)", s.throughputPerSecond, share))
        }
        let errors = s.errors.values.reduce(0, +)
        return Step(
            offeredRate: offered, requests: s.requests, dropped: s.dropped, throughputPerSecond: s.throughputPerSecond,
            p50Micros: s.latencyMicros["p50"] ?? 0, p99Micros: s.latencyMicros["p99"] ?? 0, errors: errors,
            errorRate: s.errorRate, passed: failed.isEmpty, failed: failed)
    }

    /// Runs the search on `driver` (validators kept across steps; the caller warmed them). Returns the result and
    /// the workers' figures of the capacity step (or of the first step when none passed) for the run's summary.
    public func run(
        _ driver: LoadDriver, profile: LoadProfile, segment: (index: Int, count: Int),
        beforeStep: (Double) -> Void = { _ in }, onStep: (Step) -> Void = { _ in }
    ) throws -> (Result, [LoadDriver.WorkerResult]) {
        var steps: [Step] = []
        var best: (rate: Double, workers: [LoadDriver.WorkerResult])?
        var first: [LoadDriver.WorkerResult] = []
        var ended = ""
        while true {
            let (rate, why) = next(after: steps, budgetSeconds: profile.durationSeconds)
            guard let rate else {
                ended = why
                break
            }
            if driver.shouldStop() {
                ended = "interrupted"
                break
            }
            beforeStep(rate)
            let workers = try driver.run(
                seconds: stepSeconds, record: true, segment: segment,
                executor: .constantRate(rate: rate, workers: profile.executor.workers), keepValidators: true)
            var stepProfile = profile
            stepProfile.executor = .constantRate(rate: rate, workers: profile.executor.workers)
            let r = LoadResults(profile: stepProfile, workers: workers, seconds: stepSeconds)
            let step = Self.judge(r, offered: rate, profile: profile, segments: segment.count)
            steps.append(step)
            onStep(step)
            if first.isEmpty { first = workers }
            if step.passed && rate >= (best?.rate ?? 0) { best = (rate, workers) }
        }
        driver.finish()
        let chosen = steps.first { $0.passed && $0.offeredRate == best?.rate }
        return (
            Result(
                ratePerSecond: best?.rate, throughputPerSecond: chosen?.throughputPerSecond, steps: steps,
                ended: ended),
            best?.workers ?? first
        )
    }

    /// The segments' searches as one: the combined capacity is the sum of each segment's share at its own capacity
    /// (the mean of their rates, each a whole-profile rate); steps at the same offered rate in every segment are
    /// added (requests, throughput, errors; p50 and p99 the highest of the segments', as percentiles cannot be added).
    public static func merge(_ parts: [Result]) -> Result {
        let n = Double(parts.count)
        let rates = parts.map(\.ratePerSecond)
        let rate: Double? = rates.contains(where: { $0 == nil }) ? nil : rates.compactMap { $0 }.reduce(0, +) / n
        let throughput = parts.map { $0.throughputPerSecond ?? 0 }.reduce(0, +)
        var steps: [Step] = []
        let offered = Set(parts.flatMap { $0.steps.map(\.offeredRate) }).sorted()
        for o in offered {
            let at = parts.compactMap { p in p.steps.first { $0.offeredRate == o } }
            guard at.count == parts.count else { continue }
            let requests = at.map(\.requests).reduce(0, +), errors = at.map(\.errors).reduce(0, +)
            steps.append(
                Step(
                    offeredRate: o, requests: requests, dropped: at.map(\.dropped).reduce(0, +),
                    throughputPerSecond: at.map(\.throughputPerSecond).reduce(0, +),
                    p50Micros: at.map(\.p50Micros).max() ?? 0, p99Micros: at.map(\.p99Micros).max() ?? 0,
                    errors: errors, errorRate: requests > 0 ? Double(errors) / Double(requests) : 0,
                    passed: at.allSatisfy(\.passed), failed: at.flatMap(\.failed)))
        }
        let ended = Set(parts.map(\.ended)).sorted().joined(separator: "; ")
        return Result(
            ratePerSecond: rate, throughputPerSecond: rate == nil ? nil : throughput, steps: steps, ended: ended,
            segments: parts.count)
    }
}
