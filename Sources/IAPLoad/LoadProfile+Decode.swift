import Foundation
import IAPEncoding
import IAPValidatorAPI

/// Reading a profile: every key checked, every problem named with its key path (all of them, not the first).
extension LoadProfile {
    public static func decode(_ data: Data, file: String) throws(ConfigError) -> LoadProfile {
        let r = StrictJSON(file: file)
        let o = try r.root(data)
        let name = o.string("name") ?? "profile"
        let target = o.string("target", required: false) ?? "reference"
        do { _ = try ValidatorSpec(parsing: target) } catch { r.problem(o.keyPath("target"), error.description) }
        var mix: [Operation: Int] = [:]
        if let m = o.object("mix") { mix = Self.mix(m, r, at: o.keyPath("mix")) }
        var poolSize = 1000, poolSeed: UInt64 = 1, distinct = 0.0
        if let p = o.object("pool", required: false) {
            poolSize = Int(p.int("size", required: false, range: 1...1_000_000) ?? 1000)
            poolSeed = UInt64(p.int("seed", required: false, range: 0...Int64.max) ?? 1)
            if let d = p.int("distinctChainsPercent", required: false, range: 0...100) { distinct = Double(d) / 100 }
            p.rejectUnknownKeys()
        }
        var executor = Executor.closed(workers: 1)
        if let e = o.object("executor") { executor = Self.executor(e, r) }
        let warmup = Double(o.int("warmupSeconds", required: false, range: 0...3600) ?? 1)
        let duration = Self.duration(o, r, executor)
        let maxLag = Double(o.int("maxLagMilliseconds", required: false, range: 1...600_000) ?? 1000) / 1000
        let thresholds = Self.thresholds(o, r)
        let tolerance = Double(o.int("baselineTolerancePercent", required: false, range: 0...1000) ?? 10) / 100
        let sample = Double(o.int("answerSamplePercent", required: false, range: 0...100) ?? 1)
        let app = Self.app(o)
        o.rejectUnknownKeysExcept(["thresholds"])
        try r.finish()
        var profile = LoadProfile(
            name: name, target: target, mix: mix, poolSize: poolSize, poolSeed: poolSeed, distinctChains: distinct,
            executor: executor, warmupSeconds: warmup, durationSeconds: duration, maxLagSeconds: maxLag,
            thresholds: thresholds, baselineTolerance: tolerance, answerSamplePercent: sample)
        profile.app = app
        return profile
    }

    /// `mix`: a weight per operation, not all 0.
    static func mix(_ m: StrictJSON.Object, _ r: StrictJSON, at path: String) -> [Operation: Int] {
        var mix: [Operation: Int] = [:]
        for op in Operation.allCases {
            if let w = m.int(op.rawValue, required: false, range: 0...1_000_000) { mix[op] = Int(w) }
        }
        m.rejectUnknownKeys()
        if mix.values.reduce(0, +) == 0 { r.problem(path, "the weights add up to 0") }
        return mix
    }

    /// `executor`: its type, its workers and the keys of that type only.
    static func executor(_ e: StrictJSON.Object, _ r: StrictJSON) -> Executor {
        let workers = Int(e.int("workers", required: false, range: 1...1024) ?? 1)
        var executor = Executor.closed(workers: workers)
        switch e.choice("type", ["closed", "constant-rate", "ramping-rate", "find-capacity"]) {
        case "constant-rate"?:
            executor = .constantRate(rate: Double(e.int("rate", range: 1...10_000_000) ?? 1), workers: workers)
        case "ramping-rate"?:
            var stages: [(rate: Double, seconds: Double)] = []
            for s in e.objects("stages") ?? [] {
                let rate = s.int("rate", range: 0...10_000_000), secs = s.int("seconds", range: 1...86_400)
                s.rejectUnknownKeys()
                if let rate, let secs { stages.append((Double(rate), Double(secs))) }
            }
            if stages.isEmpty { r.problem(e.keyPath("stages"), "at least one stage is needed") }
            executor = .rampingRate(stages: stages, workers: workers)
        case "find-capacity"?:
            executor = .findCapacity(capacitySearch(e, r), workers: workers)
        default: break
        }
        if case .findCapacity = executor {
        } else {
            for key in ["startRate", "maxRate", "growthPercent", "stepSeconds", "resolutionPercent"] where e.has(key) {
                r.problem(e.keyPath(key), "only for find-capacity")
            }
        }
        if case .rampingRate = executor {
        } else if e.has("stages") {
            r.problem(e.keyPath("stages"), "only for ramping-rate")
        }
        e.rejectUnknownKeys()
        return executor
    }

    /// A `find-capacity` executor's search: where it starts, how it grows, its steps and its resolution.
    static func capacitySearch(_ e: StrictJSON.Object, _ r: StrictJSON) -> CapacitySearch {
        let start = Double(e.int("startRate", required: false, range: 1...10_000_000) ?? 50)
        let max = Double(e.int("maxRate", required: false, range: 1...10_000_000) ?? 1_000_000)
        let growth = Double(e.int("growthPercent", required: false, range: 10...1000) ?? 100)
        let step = Double(e.int("stepSeconds", required: false, range: 1...3600) ?? 5)
        let resolution = Double(e.int("resolutionPercent", required: false, range: 1...50) ?? 5)
        if max < start { r.problem(e.keyPath("maxRate"), "below startRate \(Int(start))") }
        return CapacitySearch(
            startRate: start, maxRate: max, growth: 1 + growth / 100, stepSeconds: step, resolutionPercent: resolution)
    }

    /// `durationSeconds`: 10 by default, a dozen steps for a capacity search, the stages' sum for a ramp.
    static func duration(_ o: StrictJSON.Object, _ r: StrictJSON, _ executor: Executor) -> Double {
        var duration = Double(o.int("durationSeconds", required: false, range: 1...86_400) ?? 0)
        if duration == 0 {
            if case .findCapacity(let c, _) = executor { duration = c.stepSeconds * 12 } else { duration = 10 }
        }
        if case .findCapacity(let c, _) = executor, duration < c.stepSeconds {
            r.problem(o.keyPath("durationSeconds"), "shorter than one step (stepSeconds \(Int(c.stepSeconds)))")
        }
        if case .rampingRate(let stages, _) = executor { duration = stages.map(\.seconds).reduce(0, +) }
        return duration
    }

    /// `thresholds`: each string a rule, each one that is not named with its index.
    static func thresholds(_ o: StrictJSON.Object, _ r: StrictJSON) -> [Threshold] {
        guard let list = o.dict["thresholds"] else { return [] }
        _ = o.has("thresholds")
        guard let strings = list as? [String] else {
            r.problem("thresholds", "expected an array of strings")
            return []
        }
        var thresholds: [Threshold] = []
        for (i, s) in strings.enumerated() {
            if let t = Threshold(s) {
                thresholds.append(t)
            } else {
                r.problem(
                    "thresholds[\(i)]",
                    "\"\(s)\" is not a threshold like \"p99 < 20ms\", \"errors < 0.1%\", \"throughput >= 5000/s\", \"p99{op:notification} < 200ms\" (operations: appTransaction, notification, query, legacyReceipt)"
                )
            }
        }
        return thresholds
    }

    /// The app under load: its catalog, bundle id, App Store id, environment, entitlements and policy.
    static func app(_ o: StrictJSON.Object) -> App {
        var app = App()
        app.catalog = o.string("catalog", required: false)
        app.bundleId = o.string("bundleId", required: false)
        app.appAppleId = o.int("appAppleId", required: false, range: 1...Int64.max)
        app.environment = o.choice("environment", ["Production", "Sandbox"], required: false)
        app.entitlements = o.string("entitlements", required: false)
        app.policy = o.string("policy", required: false)
        return app
    }
}
