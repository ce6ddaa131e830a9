import Dispatch
import Foundation
import Histogram
import IAPModel
import IAPOracle
import IAPValidatorAPI

/// Runs a profile: intended send times computed up front, one validator and one set of HdrHistograms per worker
/// (merged at the end, never shared while running), latency from the intended time (coordinated omission
/// corrected) and from the actual send.
///
/// Sendable: configured before `run`; while it runs, workers own their validators and share only `Locked` values.
public final class LoadDriver: @unchecked Sendable {
    public struct WorkerResult: Sendable {
        public var corrected = LoadResults.latencyHistogram()
        public var uncorrected = LoadResults.latencyHistogram()
        /// Per second of the run: requests, errors, latency (corrected).
        public var perSecond: [Histogram<UInt64>] = []
        public var errorsPerSecond: [Int] = []
        public var errors: [String: Int] = [:]
        public var sent = 0
        public var dropped = 0
        /// Questions whose answer was compared with the oracle's (`answerSamplePercent`).
        public var answersChecked = 0
    }

    public let profile: LoadProfile
    public let pool: ArtifactPool
    public let makeValidator: @Sendable () throws -> any Validator
    /// Progress: (seconds elapsed, requests so far).
    public var progress: (@Sendable (Int, Int) -> Void)?
    /// Polled by the workers (every few requests): true stops the run early, keeping what was measured (Ctrl-C).
    public var shouldStop: @Sendable () -> Bool = { false }
    /// A fault injected periodically during the measured run (fault profile `kill`: the backend killed and restarted
    /// every `every` seconds); requests it breaks count as errors, and the per-second series shows the dip.
    public var periodicFault: (every: Double, action: @Sendable () -> Void)?
    /// How many times `periodicFault` fired in the last run.
    public private(set) var faultsInjected = 0

    public init(profile: LoadProfile, pool: ArtifactPool, makeValidator: @escaping @Sendable () throws -> any Validator)
    {
        self.profile = profile
        self.pool = pool
        self.makeValidator = makeValidator
    }

    /// Intended send offsets (ns from the start) for the rate executors; nil for the closed executor.
    public static func schedule(_ executor: LoadProfile.Executor, seconds: Double) -> [UInt64]? {
        switch executor {
        case .closed: return nil
        case .constantRate(let rate, _):
            let n = Int(rate * seconds)
            return (0..<n).map { UInt64(Double($0) / rate * 1e9) }
        case .rampingRate(let stages, _):
            var out: [UInt64] = []
            var t = 0.0, stageStart = 0.0
            var from = stages.first?.rate ?? 0
            for s in stages {
                let end = stageStart + s.seconds
                while t < end {
                    let rate = max(from + (s.rate - from) * (t - stageStart) / s.seconds, 0.5)
                    if rate >= 1 { out.append(UInt64(t * 1e9)) }
                    t += 1 / max(rate, 1)
                }
                from = s.rate
                stageStart = end
            }
            return out
        }
    }

    /// The validators of the workers, made on the first run and kept for the next (a warm-up warms the validators
    /// that are then measured); stopped at the end of a recorded run.
    private var prepared: [Int: any Validator] = [:]

    /// The workers a segment runs: all of a rate executor's (they share the segment's slice of the schedule); for
    /// the closed executor, worker w belongs to segment w mod n, so n segments together run the profile's workers.
    public static func workers(of executor: LoadProfile.Executor, segment: (index: Int, count: Int)) -> [Int] {
        let all = Array(0..<executor.workers)
        guard case .closed = executor else { return all }
        return all.filter { $0 % segment.count == segment.index }
    }

    public struct SegmentError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `segment` (i of n) runs a deterministic slice of the profile — every n-th intended send starting at i, or
    /// every n-th worker of a closed executor — so n processes or machines together send the whole profile (k6's
    /// execution segments). Artifacts keep their place in the whole profile: send k uses pool item k in every segment.
    public func run(seconds: Double, record: Bool, segment: (index: Int, count: Int) = (0, 1)) throws -> [WorkerResult]
    {
        let ids = Self.workers(of: profile.executor, segment: segment)
        guard !ids.isEmpty else {
            throw SegmentError(
                description:
                    "segment \(segment.index)/\(segment.count) has no worker: the closed executor has \(profile.executor.workers) workers, fewer than \(segment.count) segments"
            )
        }
        let schedule: [(index: Int, offset: UInt64)]? = Self.schedule(profile.executor, seconds: seconds).map { full in
            stride(from: segment.index, to: full.count, by: segment.count).map { ($0, full[$0]) }
        }
        for w in ids where prepared[w] == nil {
            let v = try makeValidator()
            try v.reset(pool.config)
            // The sampled histories, before the clock: their questions are checked against the oracle while loaded.
            for (d, now) in pool.samples.deliveries { _ = try v.deliver(d, now: now) }
            prepared[w] = v
        }
        let validators = ids.map { prepared[$0]! }
        // Safe: worker k calls only `vs[k]`.
        nonisolated(unsafe) let vs = validators
        let results = Locked([WorkerResult](repeating: WorkerResult(), count: ids.count))
        let counter = Locked(0)
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        let maxLag = UInt64(profile.maxLagSeconds * 1e9)
        let items = pool.items
        let reporter = record ? progress : nil
        let done = Locked(0)
        let progressThread = Thread {
            var s = 0
            while done.value == 0 {
                Thread.sleep(forTimeInterval: 1)
                s += 1
                reporter?(s, counter.value)
            }
        }
        if reporter != nil { progressThread.start() }
        let injected = Locked(0)
        if record, let fault = periodicFault {
            Thread.detachNewThread {
                var next = Date().addingTimeInterval(fault.every)
                while done.value == 0 {
                    Thread.sleep(forTimeInterval: 0.05)
                    if Date() >= next && done.value == 0 {
                        fault.action()
                        injected.add(1)
                        next = Date().addingTimeInterval(fault.every)
                    }
                }
            }
        }
        let stop = shouldStop
        // One thread per worker: a worker blocks on its connection, so the pool must not be limited to the cores
        // (DispatchQueue.concurrentPerform would run only as many workers at once as there are cores).
        let group = DispatchGroup()
        for (slot, w) in ids.enumerated() {
            group.enter()
            let thread = Thread {
                let r = self.work(
                    w, slot: slot, of: ids.count, validator: vs[slot], schedule: schedule, start: start, end: end,
                    maxLag: maxLag,
                    items: items, counter: counter, stop: stop)
                results.withLock { $0[slot] = r }
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        done.add(1)
        faultsInjected = injected.value
        if record {
            for v in validators { v.shutdown() }
            prepared = [:]
        }
        return results.value
    }

    /// One worker's loop; everything it records is its own until the end. Worker `w` of the profile is the
    /// `slot`-th of the segment's `slots` workers: it takes every `slots`-th send of the segment's schedule, and on
    /// the closed executor the items w, w + W, w + 2W, … (W the profile's workers), whichever segment runs it.
    func work(
        _ w: Int, slot: Int, of slots: Int, validator v: any Validator, schedule: [(index: Int, offset: UInt64)]?,
        start: UInt64,
        end: UInt64, maxLag: UInt64, items: [ArtifactPool.Item], counter: Locked<Int>, stop: @Sendable () -> Bool
    ) -> WorkerResult {
        let workers = profile.executor.workers
        var r = WorkerResult()
        let questions = pool.samples.questions
        let sampleEvery =
            questions.isEmpty || profile.answerSamplePercent <= 0
            ? Int.max : max(1, Int((100 / profile.answerSamplePercent).rounded()))
        var queriesSent = 0
        func perform(_ item: ArtifactPool.Item) -> String? {
            do {
                if let d = item.delivery {
                    let verdict = try v.deliver(d, now: item.now)
                    return verdict.isAccepted ? nil : "rejected"
                }
                if let q = item.query {
                    queriesSent += 1
                    if queriesSent % sampleEvery == 0 {
                        // A question with a known answer in place of this one.
                        let (sq, expected) = questions[(queriesSent / sampleEvery + w) % questions.count]
                        r.answersChecked += 1
                        let observed = try v.entitlements(sq)
                        return observed.answerDifferences(from: expected.answer, ignoring: expected.undetermined)
                            .isEmpty ? nil : "wrong-answer"
                    }
                    _ = try v.entitlements(q)
                }
                return nil
            } catch {
                return error.kind == .timedOut ? "timeout" : "transport-error"
            }
        }
        func note(_ latency: UInt64, _ uncorrected: UInt64, _ at: UInt64, _ error: String?) {
            let us = max(latency / 1000, 1), uus = max(uncorrected / 1000, 1)
            _ = r.corrected.record(min(us, 120_000_000))
            _ = r.uncorrected.record(min(uus, 120_000_000))
            let second = Int((at - start) / 1_000_000_000)
            while r.perSecond.count <= second {
                r.perSecond.append(
                    LoadResults.perSecondHistogram())
                r.errorsPerSecond.append(0)
            }
            _ = r.perSecond[second].record(min(us, 120_000_000))
            if let error {
                r.errors[error, default: 0] += 1
                r.errorsPerSecond[second] += 1
            }
            r.sent += 1
            // The shared progress counter is touched every 64 requests, not on each (workers would contend on it).
            if r.sent & 63 == 0 { counter.add(64) }
        }
        if let schedule {
            var k = slot
            while k < schedule.count {
                if (k / slots) % 32 == 0 && stop() { break }
                let intended = start + schedule[k].offset
                var now = DispatchTime.now().uptimeNanoseconds
                while now < intended {
                    let wait = intended - now
                    if wait > 200_000 { usleep(UInt32((wait - 100_000) / 1000)) }
                    now = DispatchTime.now().uptimeNanoseconds
                }
                if now - intended > maxLag {
                    // Too late to send: not sent, but its wait is real, so it is in the corrected histogram at the
                    // latency it already has (as wrk2 counts it), and counted as dropped.
                    r.dropped += 1
                    _ = r.corrected.record(min(max((now - intended) / 1000, 1), 120_000_000))
                } else {
                    let error = perform(items[schedule[k].index % items.count])
                    let finished = DispatchTime.now().uptimeNanoseconds
                    note(finished - intended, finished - now, intended, error)
                }
                k += slots
            }
        } else {
            var k = w
            while true {
                let sent = DispatchTime.now().uptimeNanoseconds
                if sent >= end || ((k / workers) % 32 == 0 && stop()) { break }
                let error = perform(items[k % items.count])
                let finished = DispatchTime.now().uptimeNanoseconds
                note(finished - sent, finished - sent, sent, error)
                k += workers
            }
        }
        return r
    }
}
