import Dispatch
import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// The parallel-delivery property (`check --parallel`): half of a history delivered by two concurrent clients.
extension CaseRunner {
    /// The two clients of the race: an in-process validator that takes concurrent calls is both; a backend over a
    /// connection gets two clients of its own. Nil for a validator that takes one call at a time (a subprocess).
    static func raceSides(_ v: any Validator) -> (any Validator, any Validator)? {
        if v is any ConcurrentValidator { return (v, v) }
        if let r = v as? any RaceableValidator { return (r.raceCaller(), r.raceCaller()) }
        return nil
    }

    /// Parallel delivery: the first half of the deliveries in order, then the rest sent by two concurrent clients
    /// that both deliver every remaining artifact (as an app and a webhook can). Merging is idempotent and
    /// order-free, so every sequential order gives the oracle's final answer; a race shows as a different one.
    ///
    /// A delivery that fails in the race (a 5xx of a backend that lost a write conflict, a dropped connection) is
    /// not yet the backend's failure: Apple sends a notification again when it got no 2xx, and an app offers a
    /// transaction again until it is finished. Each is sent again alone after the race, and only a failure then
    /// counts. A hang or a crash stops the race; the rest is then sent alone, in order.
    static func runParallel(
        _ c: GeneratedCase, against v: any Validator, sides: (any Validator, any Validator), signed: Bool,
        race tally: inout RaceTally
    ) -> CaseOutcome {
        let pki = TestPKI.harness
        if let failure = reset(v, for: c) { return failure }
        let profile = v.profile
        let deliveries: [(Int, PlannedDelivery)] = c.steps.enumerated().compactMap { i, s in
            if case .deliver(let d) = s, d.forgery == nil, profile.accepts(d.delivery.channel) {
                return (i, d)
            } else {
                return nil
            }
        }
        let renderer = ArtifactRenderer(pki: pki, appAppleId: c.config.catalog.appAppleId)
        let rendered = deliveries.map { renderer.render($0.1.delivery) }
        // Safe: each side is called from one thread, or is a ConcurrentValidator, which promises concurrent calls;
        // the compiler cannot see either through `any`.
        nonisolated(unsafe) let callers = [v, sides.0, sides.1]
        @Sendable func send(_ k: Int, by caller: Int) throws(ValidatorFailure) -> DeliveryVerdict {
            let d = deliveries[k].1
            if !signed, let decoded = callers[caller] as? any DecodedDeliveryValidator {
                return try decoded.deliver(decoded: d.delivery, now: d.now)
            }
            return try callers[caller].deliver(rendered[k], now: d.now)
        }
        var knowledge = Knowledge(config: c.config)
        let end = (deliveries.map(\.1.arrival).max() ?? c.origin) + CivilTime.msPerMinute
        // A backend that asks the API meanwhile learns what Apple knows once every delivery is made, as the oracle
        // does by the question.
        let api = APIService(c, for: v)
        api?.serve(v, at: end)
        defer { api?.serve(nil, on: v) }
        let mid = deliveries.count / 2
        for k in 0..<mid {
            do {
                _ = try send(k, by: 0)
            } catch {
                return .validatorFailed(error, step: deliveries[k].0)
            }
            knowledge.learn(deliveries[k].1.delivery)
        }
        (v as? any RaceableValidator)?.releaseConnection()
        let race = raceTwoClients(over: mid..<deliveries.count) { k, side throws(ValidatorFailure) in
            try send(k, by: 1 + side)
        }
        for k in race.sendAlone {
            do {
                _ = try send(k, by: 0)
            } catch {
                return .validatorFailed(race.explain(error), step: deliveries[k].0)
            }
        }
        if !race.sendAlone.isEmpty {
            tally.merge(RaceTally(sentAlone: race.sendAlone.count, first: race.first?.description))
        }
        for k in mid..<deliveries.count { knowledge.learn(deliveries[k].1.delivery) }
        api?.learnServed(from: v, into: &knowledge)
        let raceFrom = deliveries.indices.contains(mid) ? (mid + 1, deliveries[mid].0) : nil
        return askAfterTheRace(c, v, knowledge, at: end, raceFrom: raceFrom, sentAlone: race.sendAlone.count)
    }

    /// What the race left to send again alone.
    struct RaceOutcome {
        /// The first failure in the race, if any.
        var first: ValidatorFailure?
        /// The artifacts (indices) that failed in the race, and every one after a hang or a crash stopped it, in
        /// order.
        var sendAlone: [Int] = []

        /// A failure of a delivery sent alone, saying what happened to it in the race first.
        func explain(_ e: ValidatorFailure) -> ValidatorFailure {
            let before = first.map { "; in the race before, \($0.description)" } ?? ""
            return ValidatorFailure(
                e.kind, "\(e.message) (sent alone after the two-client race of --parallel\(before))",
                transcript: e.transcript, fix: e.fix)
        }
    }

    /// Two real threads, not `concurrentPerform` (which may run both iterations on one busy thread and so never race):
    /// they meet at a barrier before every artifact, so both deliver the same one at the same moment. A hang, a
    /// crash or a refused connection stops the race (more of them would only multiply the waits).
    static func raceTwoClients(
        over indices: Range<Int>, _ send: @escaping @Sendable (Int, Int) throws(ValidatorFailure) -> DeliveryVerdict
    ) -> RaceOutcome {
        let failures = Locked<[(Int, ValidatorFailure)]>([])
        let stoppedAt = Locked<Int?>(nil)
        let barrier = Barrier(parties: 2)
        let done = DispatchGroup()
        for side in 0..<2 {
            done.enter()
            let client = Thread {
                for k in indices {
                    barrier.arrive()
                    guard stoppedAt.value == nil else { continue }  // keep meeting the other client, send nothing
                    do {
                        _ = try send(k, side)
                    } catch {
                        let f = (error as? ValidatorFailure) ?? ValidatorFailure(.crashed, "\(error)")
                        failures.withLock { $0.append((k, f)) }
                        if [.timedOut, .crashed, .unavailable].contains(f.kind) {
                            stoppedAt.withLock { $0 = min($0 ?? k, k) }
                        }
                    }
                }
                done.leave()
            }
            client.stackSize = 1 << 20
            client.start()
        }
        done.wait()
        let failed = failures.value.sorted { $0.0 < $1.0 }
        var alone = Set(failed.map(\.0))
        if let stop = stoppedAt.value { alone.formUnion((stop + 1)..<indices.upperBound) }
        return RaceOutcome(first: failed.first?.1, sendAlone: alone.sorted())
    }

    /// After the race, every person's answer at `end` against the oracle's over everything delivered. `raceFrom`:
    /// the first raced delivery, counted from 1 among those sent, and its index in the case's steps, for the report.
    static func askAfterTheRace(
        _ c: GeneratedCase, _ v: any Validator, _ knowledge: Knowledge, at end: Millis, raceFrom: (Int, Int)?,
        sentAlone: Int
    ) -> CaseOutcome {
        let profile = v.profile
        for (person, p) in c.persons.enumerated() {
            let q = EntitlementQuery(userId: p.accountId, at: end)
            let judgement = Oracle.judge(knowledge, user: q.userId, at: q.at)
            let expected = judgement.answer
            let observed: EntitlementAnswer, diffs: [AnswerDifference], lines: [String]
            do {
                // Every artifact of the race's half arrived twice.
                (observed, diffs, lines) = try settledAnswer(q, v, judgement, profile: profile, deliveredAgain: true)
            } catch {
                return .validatorFailed(error, step: c.steps.count - 1)
            }
            if !diffs.isEmpty {
                let from =
                    raceFrom.map { n, step in
                        guard case .deliver(let d) = c.steps[step] else { return "" }
                        return ", from delivery \(n) (at \(CivilTime.relative(d.arrival - c.origin))) on,"
                    } ?? ""
                let resent =
                    sentAlone == 0
                    ? "" : "; \(sentAlone) of them sent again alone afterwards, after failing in the race or after it"
                var d = Discrepancy(
                    property: .parallelDelivery, kind: .answer, step: c.steps.count - 1,
                    expected: summary(expected, profile: profile),
                    observed: summary(observed, profile: profile),
                    differences: lines + [
                        "(after the second half\(from) was delivered by two concurrent clients, each artifact by both at once\(resent))"
                    ],
                    expectedAnswer: expected, observedAnswer: observed, differenceKeys: diffs.map(Self.key))
                d.race = Discrepancy.Race(
                    firstStep: raceFrom?.1 ?? c.steps.count,
                    question: PlannedQuery(appleTime: end, query: q, person: person))
                return .discrepancy(d)
            }
        }
        return .passed(questions: c.persons.count)
    }
}

/// Where the two clients of a parallel delivery wait for each other before each artifact.
///
/// Sendable: `waiting` and `generation` change under `condition` only.
final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let parties: Int
    private var waiting = 0
    private var generation = 0
    init(parties: Int) { self.parties = parties }

    func arrive() {
        condition.lock()
        defer { condition.unlock() }
        let mine = generation
        waiting += 1
        if waiting == parties {
            waiting = 0
            generation += 1
            condition.broadcast()
            return
        }
        while generation == mine { condition.wait() }
    }
}
