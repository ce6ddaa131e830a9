import Dispatch
import Foundation
import Histogram
import IAPModel
import IAPOracle
import IAPSupport
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
        /// Per second of the run: requests, errors, latency (corrected). A run keeps each finished second as its
        /// recorded buckets only (`perSecondBuckets`, a few hundred bytes rather than a histogram's 20 KB, so memory
        /// stays flat through an hours-long soak); `load merge` reads whole histograms back into `perSecond`.
        public var perSecond: [Histogram<UInt64>] = []
        public var perSecondBuckets: [[Bucket]] = []
        public struct Bucket: Sendable {
            public var value: UInt64
            public var count: UInt64
        }
        public var errorsPerSecond: [Int] = []
        public var errors: [String: Int] = [:]
        public var sent = 0
        public var dropped = 0
        /// Questions whose answer was compared with the oracle's (`answerSamplePercent`).
        public var answersChecked = 0
        /// Requests that sent a pool artifact a second time (byte-identical): the run outlasted the pool.
        public var repeats = 0
        /// The highest pool position this worker used, plus one (where the next run starts).
        var itemsUsed = 0
        /// By operation, in ``LoadProfile/Operation`` order (mutated in place: each holds a histogram).
        public var operations = [OperationResult](
            repeating: OperationResult(), count: LoadProfile.Operation.allCases.count)
    }

    public let profile: LoadProfile
    public let pool: ArtifactPool
    public let makeValidator: @Sendable () throws -> any Validator
    /// Progress: (seconds elapsed, requests so far).
    public var progress: (@Sendable (Progress) -> Void)?

    /// Once a second of a measured run: how far it is, and the last second's rate, p99 and errors.
    public struct Progress: Sendable {
        public var second: Int
        public var requests: Int
        public var lastSecondRequests: Int
        public var lastSecondErrors: Int
        /// Of the requests finished in the last second (from their intended send), microseconds; 0 when none.
        public var lastSecondP99Micros: UInt64
    }

    /// What the workers publish for progress, every 64 requests or 200 ms each.
    struct Live {
        var requests = 0
        var errors = 0
        var second = LoadResults.perSecondHistogram()
    }
    /// Polled by the workers (every few requests): true stops the run early, keeping what was measured (Ctrl-C).
    public var shouldStop: @Sendable () -> Bool = { false }
    /// A fault injected periodically during the measured run (fault profile `kill`: the backend killed and restarted
    /// every `every` seconds); requests it breaks count as errors, and the per-second series shows the dip.
    public var periodicFault: (every: Double, action: @Sendable () -> Void)?
    /// How many times `periodicFault` fired in the last run.
    public private(set) var faultsInjected = 0
    /// When each of them fired, seconds into the run.
    public private(set) var faultTimes: [Double] = []
    /// Where in the pool the next run starts: past what the warm-up sent, so the measured run sends artifacts of its
    /// own (a backend that remembers what it saw would otherwise get the warm-up's again).
    public private(set) var nextItem = 0

    public init(profile: LoadProfile, pool: ArtifactPool, makeValidator: @escaping @Sendable () throws -> any Validator)
    {
        self.profile = profile
        self.pool = pool
        self.makeValidator = makeValidator
    }

    /// The validators of the workers, made on the first run and kept for the next (a warm-up warms the validators
    /// that are then measured); stopped at the end of a recorded run.
    private var prepared: [Int: any Validator] = [:]

    public struct SegmentError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `segment` (i of n) runs a deterministic slice of the profile — every n-th intended send starting at i, or
    /// every n-th worker of a closed executor — so n processes or machines together send the whole profile (k6's
    /// execution segments). Artifacts keep their place in the whole profile: send k uses pool item k in every segment.
    ///
    /// `executor` replaces the profile's for this run (a step of ``CapacitySearch``); `keepValidators` keeps them
    /// for the next run after a recorded one (``finish()`` stops them).
    public func run(
        seconds: Double, record: Bool, segment: (index: Int, count: Int) = (0, 1),
        executor: LoadProfile.Executor? = nil, keepValidators: Bool = false
    ) throws -> [WorkerResult] {
        let executor = executor ?? profile.executor
        let ids = Self.workers(of: executor, segment: segment)
        guard !ids.isEmpty else {
            throw SegmentError(
                description:
                    "segment \(segment.index)/\(segment.count) has no worker: the closed executor has \(profile.executor.workers) workers, fewer than \(segment.count) segments"
            )
        }
        let schedule: [(index: Int, offset: UInt64)]? = Self.schedule(executor, seconds: seconds).map { full in
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
        let counter = Locked(Live())
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        let maxLag = UInt64(profile.maxLagSeconds * 1e9)
        let items = pool.items
        let base = nextItem
        let reporter = record ? progress : nil
        let done = Locked(0)
        let progressThread = Thread {
            var s = 0, before = (0, 0)
            while done.value == 0 {
                Thread.sleep(forTimeInterval: 1)
                s += 1
                let (requests, errors, p99) = counter.withLock { live -> (Int, Int, UInt64) in
                    let p = live.second.totalCount > 0 ? live.second.valueAtPercentile(99) : 0
                    live.second = LoadResults.perSecondHistogram()
                    return (live.requests, live.errors, p)
                }
                reporter?(
                    Progress(
                        second: s, requests: requests, lastSecondRequests: requests - before.0,
                        lastSecondErrors: errors - before.1, lastSecondP99Micros: p99))
                before = (requests, errors)
            }
        }
        if reporter != nil { progressThread.start() }
        let injected = Locked<[Double]>([])
        if record, let fault = periodicFault {
            Thread.detachNewThread {
                var next = Date().addingTimeInterval(fault.every)
                while done.value == 0 {
                    Thread.sleep(forTimeInterval: 0.05)
                    if Date() >= next && done.value == 0 {
                        let at = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                        fault.action()
                        injected.withLock { $0.append(at) }
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
                    w, executor: executor, slot: slot, of: ids.count, validator: vs[slot], schedule: schedule,
                    start: start, end: end,
                    maxLag: maxLag, items: items, base: base, counter: counter, stop: stop)
                results.withLock { $0[slot] = r }
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        done.add(1)
        faultTimes = injected.value
        faultsInjected = faultTimes.count
        // The next run starts past every position this one could have used: the whole schedule (every segment
        // computes the same), or for the closed executor the next multiple of the workers past the furthest used.
        if let full = Self.schedule(executor, seconds: seconds) {
            nextItem = base + full.count
        } else {
            let used = results.value.map(\.itemsUsed).max() ?? base
            let w = profile.executor.workers
            nextItem = (max(used, base) + w - 1) / w * w
        }
        if record && !keepValidators { finish() }
        return results.value
    }

    /// Stops the workers' validators (a recorded run does it itself unless told to keep them).
    public func finish() {
        for v in prepared.values { v.shutdown() }
        prepared = [:]
    }

    /// One worker's loop; everything it records is its own until the end. Worker `w` of the profile is the
    /// `slot`-th of the segment's `slots` workers: it takes every `slots`-th send of the segment's schedule, and on
    /// the closed executor the items w, w + W, w + 2W, … (W the profile's workers), whichever segment runs it.
    func work(
        _ w: Int, executor: LoadProfile.Executor, slot: Int, of slots: Int, validator v: any Validator,
        schedule: [(index: Int, offset: UInt64)]?,
        start: UInt64,
        end: UInt64, maxLag: UInt64, items: [ArtifactPool.Item], base: Int, counter: Locked<Live>,
        stop: @Sendable () -> Bool
    ) -> WorkerResult {
        let workers = executor.workers
        var r = WorkerResult()
        let questions = pool.samples.questions
        let sampleEvery =
            questions.isEmpty || profile.answerSamplePercent <= 0
            ? Int.max : max(1, Int((100 / profile.answerSamplePercent).rounded()))
        var queriesSent = 0
        /// For a wrong answer: the sampled question asked in place of the pool's (the error's first request names it).
        var sampleLabel: String?
        /// nil, or the error's class and its reason.
        func perform(_ item: ArtifactPool.Item) -> (kind: String, reason: String)? {
            do {
                if let d = item.delivery {
                    let verdict = try v.deliver(d, now: item.now)
                    if case .rejected(let why) = verdict {
                        return ("rejected", "refused: " + OperationResult.reason(why))
                    }
                    return nil
                }
                if let q = item.query {
                    queriesSent += 1
                    if queriesSent % sampleEvery == 0 {
                        // A question with a known answer in place of this one.
                        let (sq, expected) = questions[(queriesSent / sampleEvery + w) % questions.count]
                        r.answersChecked += 1
                        // The fields the validator declares, its dates to its precision (as `check` compares).
                        let observed = try v.entitlements(sq).snappingDates(
                            to: expected.answer, within: v.profile.datePrecision)
                        let wrong = observed.answerDifferences(from: expected.answer, ignoring: expected.undetermined)
                            .filter { v.profile.compares($0.key) }
                        guard let first = wrong.first else { return nil }
                        sampleLabel =
                            "answer sample in its place, about user \(sq.userId) at \(CivilTime.iso8601(sq.at)): \(first.text)"
                        return ("wrong-answer", "wrong answer: " + OperationResult.reason(first.text))
                    }
                    _ = try v.entitlements(q)
                }
                return nil
            } catch {
                return OperationResult.classify(error)
            }
        }
        // The second being recorded, whole; finished ones are kept as their buckets.
        var current = LoadResults.perSecondHistogram()
        var currentSecond = 0
        func closeSecond() {
            while r.perSecondBuckets.count <= currentSecond { r.perSecondBuckets.append([]) }
            guard current.totalCount > 0 else { return }
            r.perSecondBuckets[currentSecond] += current.recordedValues().map {
                .init(value: $0.value, count: UInt64($0.count))
            }
            current.reset()
        }
        var batch: [UInt64] = []
        batch.reserveCapacity(64)
        var batchErrors = 0
        var published = start
        func publish() {
            published = DispatchTime.now().uptimeNanoseconds
            counter.withLock { live in
                live.requests += batch.count
                live.errors += batchErrors
                for us in batch { _ = live.second.record(min(us, 120_000_000)) }
            }
            batch.removeAll(keepingCapacity: true)
            batchErrors = 0
        }
        func note(
            _ latency: UInt64, _ uncorrected: UInt64, _ at: UInt64, _ error: (kind: String, reason: String)?,
            _ item: ArtifactPool.Item, position: Int
        ) {
            let us = max(latency / 1000, 1), uus = max(uncorrected / 1000, 1)
            _ = r.corrected.record(min(us, 120_000_000))
            _ = r.uncorrected.record(min(uus, 120_000_000))
            let second = Int((at - start) / 1_000_000_000)
            while r.errorsPerSecond.count <= second { r.errorsPerSecond.append(0) }
            if second > currentSecond {
                closeSecond()
                currentSecond = second
            }
            if second == currentSecond {
                _ = current.record(min(us, 120_000_000))
            } else {
                // A worker's seconds only move forward (it sends in schedule order); kept exact all the same.
                while r.perSecondBuckets.count <= second { r.perSecondBuckets.append([]) }
                r.perSecondBuckets[second].append(.init(value: min(us, 120_000_000), count: 1))
            }
            let o = item.operation.index
            _ = r.operations[o].corrected.record(min(us, 120_000_000))
            r.operations[o].requests += 1
            if let error {
                r.errors[error.kind, default: 0] += 1
                r.errorsPerSecond[second] += 1
                r.operations[o].error(
                    error.reason,
                    sample:
                        "request at \(String(format: "%.3f", Double(at - start) / 1e9)) s, pool item \(position): \(sampleLabel ?? item.label)"
                )
                sampleLabel = nil
            }
            r.sent += 1
            // Progress is published every 64 requests or 200 ms, not on each (workers would contend on it); a slow
            // rate would otherwise show seconds without a request.
            batch.append(us)
            if error != nil { batchErrors += 1 }
            if batch.count == 64 || DispatchTime.now().uptimeNanoseconds - published > 200_000_000 { publish() }
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
                    let o = items[(base + schedule[k].index) % items.count].operation.index
                    r.operations[o].dropped += 1
                    _ = r.operations[o].corrected.record(min(max((now - intended) / 1000, 1), 120_000_000))
                } else {
                    let position = base + schedule[k].index
                    if position >= items.count { r.repeats += 1 }
                    r.itemsUsed = max(r.itemsUsed, position + 1)
                    let item = items[position % items.count]
                    let error = perform(item)
                    let finished = DispatchTime.now().uptimeNanoseconds
                    note(finished - intended, finished - now, intended, error, item, position: position)
                }
                k += slots
            }
        } else {
            var k = w
            while true {
                let sent = DispatchTime.now().uptimeNanoseconds
                if sent >= end || ((k / workers) % 32 == 0 && stop()) { break }
                let position = base + k
                if position >= items.count { r.repeats += 1 }
                r.itemsUsed = max(r.itemsUsed, position + 1)
                let item = items[position % items.count]
                let error = perform(item)
                let finished = DispatchTime.now().uptimeNanoseconds
                note(finished - sent, finished - sent, sent, error, item, position: position)
                k += workers
            }
        }
        publish()
        closeSecond()
        return r
    }
}
