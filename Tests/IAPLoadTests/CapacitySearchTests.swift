import Foundation
import IAPEncoding
import IAPLoad
import IAPModel
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// The `find-capacity` executor: the search's arithmetic, and a search against a validator of known capacity.
@Suite struct CapacitySearchTests {
    static let search = CapacitySearch(
        startRate: 100, maxRate: 10_000, growth: 2, stepSeconds: 1, resolutionPercent: 5)

    static func step(_ rate: Double, _ passed: Bool) -> CapacitySearch.Step {
        CapacitySearch.Step(
            offeredRate: rate, requests: Int(rate), dropped: 0, throughputPerSecond: rate, p50Micros: 1,
            p99Micros: 1, errors: 0, errorRate: 0, passed: passed, failed: passed ? [] : ["p99 < 1ms: 2 ms"])
    }

    @Test func raisesUntilAFailureThenBisects() {
        let s = Self.search
        #expect(s.next(after: [], budgetSeconds: 60).rate == 100)
        #expect(s.next(after: [Self.step(100, true)], budgetSeconds: 60).rate == 200)
        let failedAt800 = [Self.step(100, true), Self.step(200, true), Self.step(400, true), Self.step(800, false)]
        #expect(s.next(after: failedAt800, budgetSeconds: 60).rate == 600)
        // A pass at 600 moves the low end; a failure at 700 the high end.
        #expect(s.next(after: failedAt800 + [Self.step(600, true)], budgetSeconds: 60).rate == 700)
        #expect(
            s.next(after: failedAt800 + [Self.step(600, true), Self.step(700, false)], budgetSeconds: 60).rate == 650)
        // Within 5 %: done, saying between what.
        let close = s.next(after: [Self.step(1000, true), Self.step(1040, false)], budgetSeconds: 60)
        #expect(close.rate == nil && close.ended.contains("resolution reached"))
    }

    @Test func endsOnTheFirstStepFailingTheBudgetOrTheMaximum() {
        let s = Self.search
        let first = s.next(after: [Self.step(100, false)], budgetSeconds: 60)
        #expect(first.rate == nil && first.ended.contains("lower startRate"))
        let budget = s.next(after: [Self.step(100, true), Self.step(200, true)], budgetSeconds: 2)
        #expect(budget.rate == nil && budget.ended.contains("time budget"))
        #expect(s.next(after: [Self.step(8000, true)], budgetSeconds: 60).rate == 10_000)
        #expect(s.next(after: [Self.step(10_000, true)], budgetSeconds: 60).ended.contains("raise maxRate"))
    }

    @Test func segmentsMergeIntoTheMeanRateAndSummedSteps() {
        let a = CapacitySearch.Result(
            ratePerSecond: 400, throughputPerSecond: 200, steps: [Self.step(400, true), Self.step(800, false)],
            ended: "x")
        let b = CapacitySearch.Result(
            ratePerSecond: 600, throughputPerSecond: 300, steps: [Self.step(400, true), Self.step(600, true)],
            ended: "y")
        let m = CapacitySearch.merge([a, b])
        #expect(m.ratePerSecond == 500 && m.throughputPerSecond == 500 && m.segments == 2)
        // Only the rate both segments ran is a combined step.
        #expect(m.steps.map(\.offeredRate) == [400])
        #expect(m.steps.first?.requests == 800)
    }

    /// Takes 4 ms per request, one request at a time: at most 250 per second, whatever the machine.
    final class FourMilliseconds: SynchronizedReferenceValidator, @unchecked Sendable {
        override func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            usleep(4000)
            return try super.deliver(delivery, now: now)
        }
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            usleep(4000)
            return try super.entitlements(query)
        }
    }

    @Test(.long) func findsTheRateAValidatorSustains() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"cap","mix":{"appTransaction":60,"query":40},"pool":{"size":3000},
                 "executor":{"type":"find-capacity","workers":1,"startRate":40,"stepSeconds":1,"resolutionPercent":10},
                 "warmupSeconds":0,"durationSeconds":12,"thresholds":["p99 < 100ms","errors < 1%"]}
                """#.utf8), file: "cap.json")
        guard case .findCapacity(let search, _) = profile.executor else {
            Issue.record("not a find-capacity executor: \(profile.executor)")
            return
        }
        let pool = ArtifactPool.build(profile)
        let driver = LoadDriver(profile: profile, pool: pool) { FourMilliseconds() }
        let (result, workers) = try search.run(driver, profile: profile, segment: (0, 1))
        let rate = try #require(result.ratePerSecond, "\(result.steps)")
        // Held at 40, 80 and 160/s; 320/s is beyond 250/s: the capacity lies between 160 and 250 (+ the slack one
        // second of queueing allows under a 100 ms p99).
        #expect(rate >= 150 && rate <= 280, "\(result.steps.map { ($0.offeredRate, $0.passed) })")
        #expect(result.steps.contains { !$0.passed && $0.offeredRate >= 320 })
        #expect(result.steps.count <= 12)
        #expect(workers.map(\.sent).reduce(0, +) > 0)
        // The summary records it; the report shows the knee.
        var r = LoadResults(profile: profile, workers: workers, seconds: 1)
        r.summary.capacity = result
        let dir = Scratch.directory + "iapcheck-capacity-\(UUID().uuidString)"
        try r.write(to: dir)
        let json = try String(contentsOfFile: dir + "/summary.json", encoding: .utf8)
        #expect(json.contains("\"capacity\"") && json.contains("\"offeredRate\""))
        let html = try String(contentsOfFile: dir + "/report.html", encoding: .utf8)
        #expect(html.contains("Knee: latency against offered rate") && html.contains("Capacity: <b>\(Int(rate))/s"))
    }

    /// Two segments search with half of every rate each; `load merge` gives the combined capacity and steps.
    @Test(.long) func segmentedSearchesMerge() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"cap-seg","mix":{"appTransaction":100},"pool":{"size":400},
                 "executor":{"type":"find-capacity","workers":1,"startRate":40,"stepSeconds":1},
                 "warmupSeconds":0,"durationSeconds":2,"thresholds":["errors < 1%"]}
                """#.utf8), file: "cap-seg.json")
        guard case .findCapacity(let search, _) = profile.executor else { return }
        let pool = ArtifactPool.build(profile)
        var dirs: [String] = []
        for i in 0..<2 {
            let driver = LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }
            let (result, workers) = try search.run(driver, profile: profile, segment: (i, 2))
            // Two steps in the budget: 40/s and 80/s of the whole profile, 20/s and 40/s of this segment.
            #expect(result.steps.map(\.offeredRate) == [40, 80])
            #expect(result.ratePerSecond == 80, "\(result.steps)")
            var r = LoadResults(profile: profile, workers: workers, seconds: 1)
            r.summary.capacity = result
            r.summary.segment = "\(i)/2"
            let dir = Scratch.directory + "iapcheck-capseg-\(UUID().uuidString)"
            try r.write(to: dir)
            dirs.append(dir)
        }
        let merged = try LoadResults.merge(dirs, profile: profile)
        let c = try #require(merged.summary.capacity)
        #expect(c.segments == 2 && c.ratePerSecond == 80)
        #expect(c.steps.map(\.offeredRate) == [40, 80])
        // Each segment sent half of each step: together about the whole rate.
        #expect(c.steps.last.map { $0.requests >= 70 && $0.requests <= 82 } == true, "\(c.steps)")
    }

    @Test func profileKeysAreCheckedAndOnlyForTheSearch() {
        #expect(throws: ConfigError.self) {
            try LoadProfile.decode(
                Data(#"{"executor":{"type":"closed","stepSeconds":3}}"#.utf8), file: "p.json")
        }
        #expect(throws: ConfigError.self) {
            try LoadProfile.decode(
                Data(#"{"executor":{"type":"find-capacity","startRate":500,"maxRate":100}}"#.utf8), file: "p.json")
        }
        let p = try? LoadProfile.decode(
            Data(#"{"name":"c","mix":{"query":1},"executor":{"type":"find-capacity","stepSeconds":3}}"#.utf8), file: "p"
        )
        #expect(p?.durationSeconds == 36)
    }
}
