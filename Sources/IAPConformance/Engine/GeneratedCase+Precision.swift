import IAPModel
import IAPOracle
import IAPSimulator

extension GeneratedCase {
    /// The case as a validator whose dates are exact only to `precision` milliseconds can be asked it
    /// (docs/http-target.md#precision): a question closer than that to an instant where the oracle's answer changes
    /// moves a whole precision earlier or later, to an instant on the same side of every change (the same answer),
    /// or is dropped when neither is. A backend that keeps seconds is then never asked about the second in which
    /// it cannot tell an expiry from its truncation. Cases stay as they are at 1 ms.
    public func holdingQuestions(at precision: Millis, profile: ValidatorProfile) -> GeneratedCase {
        if !profile.questionsInHindsight {
            var asked = profile
            asked.questionsInHindsight = true
            return withoutHindsight.holdingQuestions(at: precision, profile: asked)
        }
        guard precision > 1 else { return self }
        var knowledge = Knowledge(config: config)
        var out: [CaseStep] = []
        out.reserveCapacity(steps.count)
        for step in steps {
            switch step {
            case .deliver(let d):
                // What the runner will have delivered and the oracle learned by then (CaseRunner.run).
                if profile.accepts(d.delivery.channel), d.forgery == nil, knowledge.rejection(d.delivery) == nil {
                    _ = knowledge.learn(d.delivery)
                }
                out.append(step)
            case .query(let q):
                let user = q.query.userId
                func answer(_ t: Millis) -> (EntitlementAnswer, Set<AnswerDifference.Key>) {
                    let j = Oracle.judge(knowledge, user: user, at: t)
                    return (j.answer, j.undetermined)
                }
                /// No change of the answer within `precision` on either side.
                func steady(_ t: Millis) -> Bool {
                    let here = answer(t)
                    return answer(t - (precision - 1)) == here && answer(t + (precision - 1)) == here
                }
                let at = q.query.at
                if steady(at) {
                    out.append(step)
                    continue
                }
                let here = answer(at)
                for shift in [-precision, precision, -2 * precision, 2 * precision]
                where answer(at + shift) == here && steady(at + shift) {
                    var moved = q
                    // A question in hindsight stays where it is asked; only the instant it asks about moves.
                    if !q.isHindsight { moved.appleTime += shift }
                    moved.query.at += shift
                    moved.query.deviceTime = q.query.deviceTime.map { $0 + shift }
                    out.append(.query(moved))
                    break
                }
            }
        }
        var c = self
        c.steps = out
        return c
    }

    /// The case without its questions in hindsight: for a validator asked only about its present
    /// (``ValidatorProfile/questionsInHindsight``).
    var withoutHindsight: GeneratedCase {
        var c = self
        c.steps = steps.filter {
            guard case .query(let q) = $0 else { return true }
            return !q.isHindsight
        }
        return c
    }
}
