import Foundation
import IAPModel
import IAPValidatorAPI

extension LoadRun {
    /// The artifact pool for one target, the clock it froze, the operations it could not send and the answer
    /// samples' line for the summary.
    public struct Pool: Sendable {
        public var pool: ArtifactPool
        /// For a backend on libfaketime: the one instant its clock stands at for the run.
        public var frozenClock: Millis?
        public var notSent: [String]
        public var samples: String
    }

    /// The pool for the validator `first` stands for: only the operations its channels take (the rest said and
    /// recorded), answer samples on the fields it declares, and for a backend on libfaketime one clock for the run,
    /// frozen after every artifact's own instant, at which the samples are asked.
    public func pool(for first: any Validator) throws -> Pool {
        let p = profile
        do { try first.prepare() } catch { throw Failure.validator("\(error)") }
        let target = first.profile
        let ops = ArtifactPool.operations(p, for: target)
        let notSent = ops.dropped.map {
            "\($0.rawValue): the target takes no \($0.channel?.protocolName ?? "") channel (its channels: \(target.channels.map(\.protocolName).joined(separator: ", ")))"
        }
        for line in notSent { say("load \(p.name): not sent: \(line)") }
        guard !ops.sent.isEmpty else { throw Failure.usage("\(p.name): nothing of the mix can be sent to this target") }
        var setup = ArtifactPool.Setup()
        setup.catalog = catalog
        setup.policy = policy
        setup.validator = target
        if let runId { setup.runId = runId }
        if clock == .wall {
            // The backend answers at the real time, which runs on through the run: questions at the start, about
            // answers that stay the same until well after the end.
            setup.answersAt = Millis(Date().timeIntervalSince1970 * 1000)
            setup.answersWindow = Millis((p.warmupSeconds + p.durationSeconds + 600) * 1000)
        }
        var pool = ArtifactPool.build(p, setup: setup)
        var frozen: Millis?
        if clock == .fake {
            // One clock for every worker: it stands a day after the latest artifact, and questions are asked then.
            let t = ((pool.items.map(\.now) + pool.samples.deliveries.map(\.1)).max() ?? 0) + CivilTime.msPerDay
            setup.answersAt = t
            if !pool.samples.questions.isEmpty { pool.samples = .build(seed: p.poolSeed, setup: setup) }
            frozen = t
        }
        return Pool(pool: pool, frozenClock: frozen, notSent: notSent, samples: samplesLine(pool, target, frozen))
    }

    /// What the answer samples are, as the summary says it.
    func samplesLine(_ pool: ArtifactPool, _ target: ValidatorProfile, _ frozen: Millis?) -> String {
        let questions = pool.samples.questions
        guard !questions.isEmpty else {
            return profile.answerSamplePercent <= 0 ? "off (answerSamplePercent 0)" : "none (no questions in the mix)"
        }
        return
            "\(questions.count) questions about \(Set(questions.map(\.0.userId)).count) users, compared on \(target.answers.map(\.rawValue).joined(separator: ", "))"
            + (frozen.map { " at the backend's frozen clock \(CivilTime.iso8601($0))" } ?? "")
            + (clock == .wall ? " at the real time (the backend's clock), each answer steady through the run" : "")
    }
}
