import Dispatch
import Foundation
import Histogram
import IAPModel
import IAPOracle
import IAPSupport
import IAPValidatorAPI

/// One worker of a load run: its validator, its histograms and its counters, all its own until the end. Worker `w`
/// of the profile is the `slot`-th of the segment's `slots` workers. How it paces its sends is its executor's
/// (``sendOnSchedule(_:)`` for the rate executors, ``sendInClosedLoop(workers:)`` for the closed one).
struct LoadWorker {
    let w: Int
    let slot: Int
    let slots: Int
    let validator: any Validator
    let items: [ArtifactPool.Item]
    /// Pool position of this run's first send.
    let base: Int
    /// The run's start and end, and how late a rate executor's send may be before it is dropped (nanoseconds).
    let start: UInt64
    let end: UInt64
    let maxLag: UInt64
    let counter: Locked<LoadDriver.Live>
    let stop: @Sendable () -> Bool
    /// The sampled questions with known answers, and every how many queries one is asked in a query's place.
    let questions: [(EntitlementQuery, Oracle.Judgement)]
    let sampleEvery: Int

    var r = LoadDriver.WorkerResult()
    var queriesSent = 0
    /// For a wrong answer: the sampled question asked in place of the pool's (the error's first request names it).
    var sampleLabel: String?
    /// The second being recorded, whole; finished ones are kept as their buckets.
    var current = LoadResults.perSecondHistogram()
    var currentSecond = 0
    /// Latencies not yet published for progress, and errors among them.
    var batch: [UInt64] = []
    var batchErrors = 0
    var published: UInt64

    init(
        _ w: Int, slot: Int, of slots: Int, validator: any Validator, driver: LoadDriver, base: Int,
        window: (start: UInt64, end: UInt64, maxLag: UInt64), counter: Locked<LoadDriver.Live>,
        stop: @escaping @Sendable () -> Bool
    ) {
        (self.w, self.slot, self.slots, self.validator) = (w, slot, slots, validator)
        (self.items, self.base, self.counter, self.stop) = (driver.pool.items, base, counter, stop)
        (start, end, maxLag) = window
        published = start
        questions = driver.pool.samples.questions
        let percent = driver.profile.answerSamplePercent
        sampleEvery = questions.isEmpty || percent <= 0 ? Int.max : max(1, Int((100 / percent).rounded()))
        batch.reserveCapacity(64)
    }

    /// Sends one pool item: nil, or the error's class and its reason. Every `sampleEvery`-th query is replaced by a
    /// sampled question whose answer is compared with the oracle's.
    mutating func perform(_ item: ArtifactPool.Item) -> (kind: String, reason: String)? {
        do {
            if let d = item.delivery {
                if case .rejected(let why) = try validator.deliver(d, now: item.now) {
                    return ("rejected", "refused: " + OperationResult.reason(why))
                }
                return nil
            }
            guard let q = item.query else { return nil }
            queriesSent += 1
            guard queriesSent % sampleEvery == 0 else {
                _ = try validator.entitlements(q)
                return nil
            }
            return try askSample()
        } catch {
            return OperationResult.classify(error)
        }
    }

    /// A question with a known answer in place of the pool's, compared on the fields the validator declares, its
    /// dates to its precision (as `check` compares).
    mutating func askSample() throws(ValidatorFailure) -> (kind: String, reason: String)? {
        let (sq, expected) = questions[(queriesSent / sampleEvery + w) % questions.count]
        r.answersChecked += 1
        let observed = try validator.entitlements(sq).snapping(to: expected.answer, profile: validator.profile)
        let wrong = observed.answerDifferences(from: expected.answer, ignoring: expected.undetermined)
            .filter { validator.profile.compares($0.key) }
        guard let first = wrong.first else { return nil }
        sampleLabel =
            "answer sample in its place, about user \(sq.userId) at \(CivilTime.iso8601(sq.at)): \(first.text)"
        return ("wrong-answer", "wrong answer: " + OperationResult.reason(first.text))
    }

    /// Keeps the finished second as its recorded buckets.
    mutating func closeSecond() {
        while r.perSecondBuckets.count <= currentSecond { r.perSecondBuckets.append([]) }
        guard current.totalCount > 0 else { return }
        r.perSecondBuckets[currentSecond] += current.recordedValues().map {
            .init(value: $0.value, count: UInt64($0.count))
        }
        current.reset()
    }

    /// The batch, into the run's live counters for progress.
    mutating func publish() {
        published = DispatchTime.now().uptimeNanoseconds
        let (latencies, errors) = (batch, batchErrors)
        counter.withLock { live in
            live.requests += latencies.count
            live.errors += errors
            for us in latencies { _ = live.second.record(min(us, 120_000_000)) }
        }
        batch.removeAll(keepingCapacity: true)
        batchErrors = 0
    }

    /// Records one sent request: its latency from the intended send and from the actual one (nanoseconds), the
    /// second it was intended for, its operation and its error.
    mutating func note(
        _ latency: UInt64, _ uncorrected: UInt64, _ at: UInt64, _ error: (kind: String, reason: String)?,
        _ item: ArtifactPool.Item, position: Int
    ) {
        let us = max(latency / 1000, 1), uus = max(uncorrected / 1000, 1)
        _ = r.corrected.record(min(us, 120_000_000))
        _ = r.uncorrected.record(min(uus, 120_000_000))
        let second = Int((at - start) / 1_000_000_000)
        recordSecond(second, us)
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
        // Progress is published every 64 requests or 200 ms, not on each (workers would contend on it); a slow rate
        // would otherwise show seconds without a request.
        batch.append(us)
        if error != nil { batchErrors += 1 }
        if batch.count == 64 || DispatchTime.now().uptimeNanoseconds - published > 200_000_000 { publish() }
    }

    /// The latency in its second's histogram (a worker's seconds only move forward; kept exact all the same).
    mutating func recordSecond(_ second: Int, _ us: UInt64) {
        while r.errorsPerSecond.count <= second { r.errorsPerSecond.append(0) }
        if second > currentSecond {
            closeSecond()
            currentSecond = second
        }
        if second == currentSecond {
            _ = current.record(min(us, 120_000_000))
        } else {
            while r.perSecondBuckets.count <= second { r.perSecondBuckets.append([]) }
            r.perSecondBuckets[second].append(.init(value: min(us, 120_000_000), count: 1))
        }
    }
}
