import Foundation
import IAPSupport
import Testing

/// The time left is read from the run's recent pace: a backend that slows down as it goes gets an estimate that
/// grows with it instead of standing still.
@Suite struct RemainingTimeTests {
    let start = Date(timeIntervalSince1970: 0)

    /// Runs `total` cases whose `i`-th takes `cost(i)` seconds, recording each, and gives the estimate after `at`.
    func estimate(total: Int, at: Int, cost: (Int) -> Double) -> (left: Double?, truth: Double) {
        var clock = 0.0
        var r = RemainingTime(window: 30, now: start)
        for i in 1...at {
            clock += cost(i)
            r.record(i, now: start.addingTimeInterval(clock))
        }
        let truth = (at + 1...total).map(cost).reduce(0, +)
        return (r.seconds(at, of: total, now: start.addingTimeInterval(clock)), truth)
    }

    @Test func aSteadyRunIsEstimatedAtItsPace() throws {
        let (left, truth) = estimate(total: 1000, at: 400) { _ in 0.25 }
        let l = try #require(left)
        #expect(abs(l - truth) < 1, "\(l) s against \(truth) s")
    }

    /// Each case slower than the one before (0.05 s more per hundred): the average of the whole run would say about
    /// 100 s are left after 600 cases, where 200 s are; the recent pace says nearly that.
    @Test func aSlowingRunIsEstimatedAtItsRecentPace() throws {
        let cost = { (i: Int) in 0.1 + Double(i) / 2000 }
        let (left, truth) = estimate(total: 1000, at: 600, cost: cost)
        let l = try #require(left)
        let elapsed = (1...600).map(cost).reduce(0, +)
        let byAverage = 400 / (600 / elapsed)
        #expect(l > byAverage * 1.4, "\(l) s, the average's \(byAverage) s")
        #expect(abs(l - truth) / truth < 0.3, "\(l) s against \(truth) s")
    }

    /// A minute's shrink among cases of a quarter second: left out, the estimate is the cases' pace; left in, it
    /// would be several times too long (the gate trial read "about 3 h 24 min left" for a run of 8 minutes).
    @Test func aShrinkLeftOutDoesNotSlowThePace() throws {
        var r = RemainingTime(window: 30, now: start)
        var clock = 0.0
        for i in 1...200 {
            clock += 0.25
            if i == 190 {
                clock += 60
                r.leaveOut(60)
            }
            r.record(i, now: start.addingTimeInterval(clock))
        }
        let left = try #require(r.seconds(200, of: 1000, now: start.addingTimeInterval(clock)))
        #expect(abs(left - 200) < 5, "\(left) s against 200 s")
    }

    @Test func nothingIsSaidBeforeACaseIsDoneOrAfterTheLast() {
        var r = RemainingTime(window: 30, now: start)
        #expect(r.seconds(0, of: 10, now: start.addingTimeInterval(5)) == nil)
        r.record(10, now: start.addingTimeInterval(6))
        #expect(r.seconds(10, of: 10, now: start.addingTimeInterval(6)) == nil)
    }

    /// A run of thousands of cases a second keeps a handful of samples, not one per case.
    @Test func aFastRunKeepsFewSamples() throws {
        var r = RemainingTime(window: 30, now: start)
        for i in 1...200_000 { r.record(i, now: start.addingTimeInterval(Double(i) / 2000)) }
        let left = try #require(r.seconds(200_000, of: 300_000, now: start.addingTimeInterval(100)))
        #expect(abs(left - 50) < 1, "\(left) s")
        #expect(r.sampleCount <= 32, "\(r.sampleCount) samples")
    }
}
