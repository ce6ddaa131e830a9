import Foundation
import IAPEncoding
import IAPLoad
import IAPModel
import IAPMutants
import IAPReference
import IAPSupport
import IAPTesting
import IAPValidatorAPI
import Testing

@Suite struct LoadProfileTests {
    func decode(_ json: String) throws(ConfigError) -> LoadProfile {
        try LoadProfile.decode(Data(json.utf8), file: "test.json")
    }

    @Test func theShippedProfilesDecode() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.hasSuffix(".json") || $0.hasSuffix(".yaml")
        }
        #expect(files.count >= 5)
        #expect(files.contains { $0.hasSuffix(".yaml") })
        for f in files { _ = try LoadProfile.load(path: dir.appendingPathComponent(f).path) }
    }

    @Test func everyProblemIsReportedWithItsKey() {
        #expect {
            try decode(
                #"{"name":"x","target":"nginx","mix":{"appTransaction":"lots"},"executor":{"type":"open","workers":0},"thresholds":["p99 under 2ms"],"colour":1}"#
            )
        } throws: { error in
            let keys = Set((error as? ConfigError)?.problems.map(\.key) ?? [])
            return keys.isSuperset(of: [
                "target", "mix.appTransaction", "executor.type", "executor.workers", "thresholds[0]", "colour",
            ])
        }
    }

    /// YAML profiles go through the same strict decoder: the same problems, with the same key paths.
    @Test func yamlProfilesAreAsStrictAsJSON() throws {
        let path = Scratch.directory + "profile-\(UUID().uuidString).yaml"
        try Data("name: x\ntarget: nginx\nmix:\n  appTransaction: lots\nexecutor:\n  type: open\ncolour: 1\n".utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect {
            try LoadProfile.load(path: path)
        } throws: { error in
            let e = error as? ConfigError
            let keys = Set(e?.problems.map(\.key) ?? [])
            return e?.file == path && keys.isSuperset(of: ["target", "mix.appTransaction", "executor.type", "colour"])
        }
        try Data("name: y\nmix: {query: 1}\nexecutor: {type: closed, workers: 3}\nthresholds: [\"p99 < 5ms\"]\n".utf8)
            .write(to: URL(fileURLWithPath: path))
        let p = try LoadProfile.load(path: path)
        #expect(p.name == "y" && p.mix[.query] == 1 && p.executor == .closed(workers: 3) && p.thresholds.count == 1)
    }

    @Test func thresholdsParseUnitsAndCompare() throws {
        let t = try #require(Threshold("p99.9 <= 20ms"))
        #expect(t.metric == .percentile(99.9) && t.value == 20_000 && t.holds(20_000) && !t.holds(20_001))
        #expect(Threshold("errors < 0.1%")?.value == 0.001)
        #expect(Threshold("throughput >= 5000/s")?.holds(4999) == false)
        #expect(Threshold("p100 < 1ms") == nil)
    }

    @Test func rateSchedulesAreComputedUpFront() {
        let constant = LoadDriver.schedule(.constantRate(rate: 1000, workers: 2), seconds: 2)!
        #expect(constant.count == 2000 && constant[1] == 1_000_000)
        let ramp = LoadDriver.schedule(
            .rampingRate(stages: [(rate: 100, seconds: 1), (rate: 300, seconds: 1)], workers: 1), seconds: 2)!
        #expect(ramp.count > 250 && ramp.count < 320)  // 100 in the first second, ~200 on average in the second
        #expect(LoadDriver.schedule(.closed(workers: 2), seconds: 1) == nil)
    }
}

@Suite struct LoadRunTests {
    @Test(.long) func aShortConstantRateRunAgainstTheReferenceMeetsItsRateAndWritesResults() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"t","mix":{"appTransaction":60,"notification":20,"query":20},"pool":{"size":100},
                 "executor":{"type":"constant-rate","rate":500,"workers":2},"warmupSeconds":0,"durationSeconds":2,
                 "thresholds":["errors < 1%","throughput >= 400/s","p99 < 1ms"]}
                """#.utf8), file: "t.json")
        let pool = ArtifactPool.build(profile)
        #expect(
            pool.items.contains { $0.operation == .appTransaction } && pool.items.contains { $0.operation == .query })
        let workers = try LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }.run(
            seconds: 2, record: true)
        let r = LoadResults(profile: profile, workers: workers, seconds: 2)
        #expect(r.summary.requests + r.summary.dropped == 1000)
        #expect(r.summary.errors.isEmpty)
        #expect(r.summary.thresholds.count == 3)
        #expect(r.summary.thresholds[0].passed && r.summary.thresholds[1].passed)
        let dir = Scratch.directory + "iapcheck-load-\(UUID().uuidString)"
        try r.write(to: dir)
        let hgrm = try String(contentsOfFile: dir + "/latency.hgrm", encoding: .utf8)
        #expect(hgrm.contains("Percentile"))
        let html = try String(contentsOfFile: dir + "/report.html", encoding: .utf8)
        #expect(
            html.contains("<svg") && html.contains("Percentile spectrum")
                && html.contains("answer samples checked against the oracle"))
    }
}

@Suite struct LoadCorrectnessTests {
    static func profile() throws -> LoadProfile {
        try LoadProfile.decode(
            Data(
                #"""
                {"name":"t","mix":{"appTransaction":50,"query":50},"pool":{"size":60},"answerSamplePercent":50,
                 "executor":{"type":"closed","workers":2},"warmupSeconds":0,"durationSeconds":1}
                """#.utf8), file: "t.json")
    }

    /// Sampled questions about histories delivered before the clock are checked against the oracle while the pool's
    /// traffic runs: the reference agrees; a mutant that answers wrong is counted as `wrong-answer` errors.
    @Test(.long) func sampledAnswersAreCheckedAgainstTheOracleUnderLoad() throws {
        let profile = try Self.profile()
        let pool = ArtifactPool.build(profile)
        #expect(!pool.samples.questions.isEmpty && !pool.samples.deliveries.isEmpty)
        let good = LoadResults(
            profile: profile,
            workers: try LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }.run(
                seconds: 1, record: true), seconds: 1)
        #expect((good.summary.answersChecked ?? 0) > 10)
        #expect(good.summary.errors["wrong-answer"] == nil)
        let bad = LoadResults(
            profile: profile,
            workers: try LoadDriver(profile: profile, pool: pool) { Mutants.named("static-grace")!.make() }.run(
                seconds: 1, record: true), seconds: 1)
        #expect((bad.summary.errors["wrong-answer"] ?? 0) > 0)
    }

    /// Closed-loop workers each hold a connection and block on it: all of them must be in flight at once, not only
    /// as many as there are cores.
    @Test func everyWorkerRunsConcurrently() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"t","mix":{"query":1},"pool":{"size":10},"answerSamplePercent":0,
                 "executor":{"type":"closed","workers":8},"warmupSeconds":0,"durationSeconds":1}
                """#.utf8), file: "t.json")
        let pool = ArtifactPool.build(profile)
        #expect(pool.samples.questions.isEmpty)  // answerSamplePercent 0: no sampling
        let gauge = InFlight()
        _ = try LoadDriver(profile: profile, pool: pool) { SlowValidator(gauge) }.run(seconds: 0.5, record: true)
        #expect(gauge.peak == 8)
    }
}

/// Requests in flight, and the most there were at once.
final class InFlight: Sendable {
    private let state = Locked((now: 0, peak: 0))
    var peak: Int { state.value.peak }
    func enter() {
        state.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
    }
    func leave() { state.withLock { $0.now -= 1 } }
}

/// Answers every question after 20 ms, like a backend on the other end of a connection.
final class SlowValidator: Validator {
    let gauge: InFlight
    init(_ gauge: InFlight) { self.gauge = gauge }
    var name: String { "slow" }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {}
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict { .accepted }
    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        gauge.enter()
        defer { gauge.leave() }
        Thread.sleep(forTimeInterval: 0.02)
        return EntitlementAnswer(products: [], groups: [], consumables: [])
    }
}

@Suite struct LoadSegmentTests {
    @Test(.long) func segmentsSplitTheScheduleAndMergeBackToTheWhole() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"seg","mix":{"query":100},"pool":{"size":50},"executor":{"type":"constant-rate","rate":300,"workers":1},
                 "warmupSeconds":0,"durationSeconds":1,"thresholds":["throughput >= 250/s"]}
                """#.utf8), file: "seg.json")
        let pool = ArtifactPool.build(profile)
        var dirs: [String] = []
        var total = 0, dropped = 0
        for i in 0..<3 {
            let w = try LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }.run(
                seconds: 1, record: true, segment: (i, 3))
            var r = LoadResults(profile: profile, workers: w, seconds: 1)
            r.summary.segment = "\(i)/3"
            #expect(r.summary.requests + r.summary.dropped == 100)
            total += r.summary.requests
            dropped += r.summary.dropped
            let dir = Scratch.directory + "iapcheck-seg-\(UUID().uuidString)"
            try r.write(to: dir)
            dirs.append(dir)
        }
        let merged = try LoadResults.merge(dirs, profile: profile)
        #expect(merged.summary.requests == total)
        #expect(merged.corrected.totalCount == UInt64(total + dropped))
        // Per-operation rows are summed too (operations.json of each segment).
        let rows = merged.summary.operations ?? []
        #expect(rows.map(\.operation) == ["query"])
        #expect(rows.first.map { $0.requests + $0.dropped } == total + dropped)
        // Only the complete set of this profile's segments merges.
        #expect(throws: LoadResults.MergeError.self) { try LoadResults.merge(Array(dirs.prefix(2)), profile: profile) }
        #expect(throws: LoadResults.MergeError.self) { try LoadResults.merge(dirs + [dirs[0]], profile: profile) }
        var other = profile
        other.name = "another"
        #expect(throws: LoadResults.MergeError.self) { try LoadResults.merge(dirs, profile: other) }
        do {
            _ = try LoadResults.merge(Array(dirs.prefix(2)), profile: profile)
        } catch {
            #expect("\(error)".contains("missing segment 2/3"), "\(error)")
        }
        #expect(merged.summary.thresholds.first?.passed == true)
        // A baseline far better than this run is a regression; itself is not.
        var better = merged.summary
        better.throughputPerSecond *= 2
        #expect(!merged.regressions(against: better, tolerance: 0.1).isEmpty)
        #expect(merged.regressions(against: merged.summary, tolerance: 0.1).isEmpty)
    }

    static func profile(_ executor: String, extra: String = "") throws -> LoadProfile {
        try LoadProfile.decode(
            Data(
                #"""
                {"name":"seg","mix":{"query":50,"notification":50},"pool":{"size":40},"executor":\#(executor),
                 "warmupSeconds":0,"durationSeconds":1\#(extra)}
                """#.utf8), file: "seg.json")
    }

    /// A closed executor's workers are split between the segments (each segment used to run all of them).
    @Test func aClosedExecutorSplitsItsWorkersBetweenSegments() throws {
        let profile = try Self.profile(#"{"type":"closed","workers":3}"#)
        let pool = ArtifactPool.build(profile)
        let made = Locked(0)
        for i in 0..<2 {
            let driver = LoadDriver(profile: profile, pool: pool) {
                made.add(1); return ReferenceValidator()
            }
            let w = try driver.run(seconds: 0.2, record: true, segment: (i, 2))
            #expect(w.count == (i == 0 ? 2 : 1))
        }
        #expect(made.value == 3)
        #expect(throws: LoadDriver.SegmentError.self) {
            _ = try LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }.run(
                seconds: 0.1, record: true, segment: (3, 4))
        }
    }

    /// Segments send, between them, exactly the artifacts one whole run sends (each used to start from item 0).
    @Test(.long) func segmentsSendTheArtifactsOfTheWholeRun() throws {
        var profile = try Self.profile(
            #"{"type":"constant-rate","rate":120,"workers":2}"#, extra: #","maxLagMilliseconds":60000"#)
        profile.answerSamplePercent = 0  // sampled questions replace questions per worker, differently per segment
        let pool = ArtifactPool.build(profile)
        let preparation = pool.samples.deliveries.map { "\($0.0)@\($0.1)" }
        func sent(_ segment: (Int, Int)) throws -> [String] {
            let log = RecordingReference.Log()
            _ = try LoadDriver(profile: profile, pool: pool) { RecordingReference(log) }.run(
                seconds: 1, record: true, segment: segment)
            var items = log.items
            for _ in 0..<2 {  // each worker's validator first gets the sampled histories
                for p in preparation { if let i = items.firstIndex(of: p) { items.remove(at: i) } }
            }
            return items
        }
        let whole = try sent((0, 1)).sorted()
        let parts = try (0..<3).flatMap { try sent(($0, 3)) }.sorted()
        #expect(whole.count == 120)
        #expect(parts == whole)
    }

    /// The warm-up warms the validators that are then measured (it used to make throwaway ones).
    @Test func theWarmUpWarmsTheMeasuredValidators() throws {
        let profile = try Self.profile(#"{"type":"constant-rate","rate":50,"workers":2}"#)
        let pool = ArtifactPool.build(profile)
        let made = Locked(0)
        let driver = LoadDriver(profile: profile, pool: pool) {
            made.add(1); return ReferenceValidator()
        }
        _ = try driver.run(seconds: 0.2, record: false)
        _ = try driver.run(seconds: 0.2, record: true)
        #expect(made.value == 2)
    }

    /// A request dropped for lag is in the corrected histogram at the latency it already had (as wrk2 counts it),
    /// not in the uncorrected one, and still counted as dropped.
    @Test(.long) func droppedRequestsAreInTheCorrectedHistogram() throws {
        let profile = try Self.profile(
            #"{"type":"constant-rate","rate":100,"workers":1}"#, extra: #","maxLagMilliseconds":5"#)
        let pool = ArtifactPool.build(profile)
        let w = try LoadDriver(profile: profile, pool: pool) { SlowReference() }.run(seconds: 0.5, record: true)
        let r = LoadResults(profile: profile, workers: w, seconds: 0.5)
        #expect(r.summary.dropped > 0)
        #expect(r.corrected.totalCount == UInt64(r.summary.requests + r.summary.dropped))
        #expect(r.uncorrected.totalCount == UInt64(r.summary.requests))
    }
}

/// The reference, writing down every artifact and question it gets (in the load driver's threads).
final class RecordingReference: Validator, @unchecked Sendable {
    final class Log: Sendable {
        private let entries = Locked<[String]>([])
        var items: [String] { entries.value }
        func add(_ s: String) { entries.withLock { $0.append(s) } }
    }
    let log: Log
    let inner = SynchronizedReferenceValidator()  // the load driver calls it from several workers at once
    init(_ log: Log) { self.log = log }
    var name: String { "recording" }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
    func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        log.add("\(d)@\(now)")
        return try inner.deliver(d, now: now)
    }
    func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        log.add("\(q)")
        return try inner.entitlements(q)
    }
}

/// The reference, 30 ms late on every question and notification: at 100 requests/s with a 5 ms lag allowance it falls behind.
final class SlowReference: Validator, @unchecked Sendable {
    let inner = SynchronizedReferenceValidator()  // the load driver calls it from several workers at once
    var name: String { "slow" }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
    func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        if case .notification = d { usleep(30_000) }
        return try inner.deliver(d, now: now)
    }
    func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        usleep(30_000)
        return try inner.entitlements(q)
    }
}
