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
    public internal(set) var faultsInjected = 0
    /// When each of them fired, seconds into the run.
    public internal(set) var faultTimes: [Double] = []
    /// Where in the pool the next run starts: past what the warm-up sent, so the measured run sends artifacts of its
    /// own (a backend that remembers what it saw would otherwise get the warm-up's again).
    public internal(set) var nextItem = 0

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
        // Safe: worker k calls only `vs[k]`.
        nonisolated(unsafe) let vs = try validators(ids)
        let results = Locked([WorkerResult](repeating: WorkerResult(), count: ids.count))
        let counter = Locked(Live())
        let start = DispatchTime.now().uptimeNanoseconds
        let window = (start, start + UInt64(seconds * 1e9), UInt64(profile.maxLagSeconds * 1e9))
        let base = nextItem
        let done = Locked(0)
        if record, let progress { reportProgress(counter, to: progress, until: done) }
        let injected = Locked<[Double]>([])
        if record, let periodicFault { inject(periodicFault, from: start, into: injected, until: done) }
        let stop = shouldStop
        // One thread per worker: a worker blocks on its connection, so the pool must not be limited to the cores
        // (DispatchQueue.concurrentPerform would run only as many workers at once as there are cores).
        let group = DispatchGroup()
        for (slot, w) in ids.enumerated() {
            group.enter()
            let thread = Thread {
                var worker = LoadWorker(
                    w, slot: slot, of: ids.count, validator: vs[slot], driver: self, base: base, window: window,
                    counter: counter, stop: stop)
                if let schedule {
                    worker.sendOnSchedule(schedule)
                } else {
                    worker.sendInClosedLoop(workers: executor.workers)
                }
                worker.publish()
                worker.closeSecond()
                results.withLock { [r = worker.r] in $0[slot] = r }
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        done.add(1)
        faultTimes = injected.value
        faultsInjected = faultTimes.count
        advance(past: base, executor: executor, seconds: seconds, used: results.value.map(\.itemsUsed).max())
        if record && !keepValidators { finish() }
        return results.value
    }

    /// The workers' validators, made (reset, the sampled histories delivered) on the first run and kept.
    func validators(_ ids: [Int]) throws -> [any Validator] {
        for w in ids where prepared[w] == nil {
            let v = try makeValidator()
            try v.reset(pool.config)
            // The sampled histories, before the clock: their questions are checked against the oracle while loaded.
            for (d, now) in pool.samples.deliveries { _ = try v.deliver(d, now: now) }
            prepared[w] = v
        }
        return ids.map { prepared[$0]! }
    }

    /// A thread that reports progress once a second until `done`: requests so far, and the last second's rate,
    /// errors and p99.
    func reportProgress(
        _ counter: Locked<Live>, to reporter: @escaping @Sendable (Progress) -> Void, until done: Locked<Int>
    ) {
        Thread.detachNewThread {
            var s = 0, before = (0, 0)
            while done.value == 0 {
                Thread.sleep(forTimeInterval: 1)
                s += 1
                let (requests, errors, p99) = counter.withLock { live -> (Int, Int, UInt64) in
                    let p = live.second.totalCount > 0 ? live.second.valueAtPercentile(99) : 0
                    live.second = LoadResults.perSecondHistogram()
                    return (live.requests, live.errors, p)
                }
                reporter(
                    Progress(
                        second: s, requests: requests, lastSecondRequests: requests - before.0,
                        lastSecondErrors: errors - before.1, lastSecondP99Micros: p99))
                before = (requests, errors)
            }
        }
    }

    /// A thread that fires the periodic fault every `every` seconds until `done`, noting when (seconds into the run).
    func inject(
        _ fault: (every: Double, action: @Sendable () -> Void), from start: UInt64, into injected: Locked<[Double]>,
        until done: Locked<Int>
    ) {
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

    /// The next run starts past every position this one could have used: the whole schedule (every segment computes
    /// the same), or for the closed executor the next multiple of the workers past the furthest used.
    func advance(past base: Int, executor: LoadProfile.Executor, seconds: Double, used: Int?) {
        if let full = Self.schedule(executor, seconds: seconds) {
            nextItem = base + full.count
        } else {
            let w = profile.executor.workers
            nextItem = (max(used ?? base, base) + w - 1) / w * w
        }
    }

    /// Stops the workers' validators (a recorded run does it itself unless told to keep them).
    public func finish() {
        for v in prepared.values { v.shutdown() }
        prepared = [:]
    }
}
