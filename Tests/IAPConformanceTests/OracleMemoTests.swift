import IAPConformance
import IAPModel
import IAPOracle
import IAPReference
import IAPSimulator
import Testing

/// The oracle keeps what it derives from the facts between questions, and after a new transaction prepares again
/// only that transaction's chain. Asked along the way, as `check` asks it (other users between deliveries, copies
/// of the facts kept while the original learns more), it must answer exactly as facts learned at once and never
/// asked before.
@Suite struct OracleMemoTests {
    @Test func anOracleAskedAlongTheWayAnswersAsOneThatLearnedAtOnce() {
        var options = CheckOptions()
        options.seed = 7
        let checker = Checker(options: options, validator: ReferenceValidator())
        var mismatches: [String] = []
        var questions = 0
        for i in 0..<300 {
            let (c, _) = checker.generate(caseIndex: i)
            var k = Knowledge(config: c.config)
            var learned: [Delivery] = []
            // A copy taken before the last delivery, and what it had learned: it shares what was derived until
            // the original learns something.
            var earlier: (Knowledge, [Delivery])?
            func fresh(_ deliveries: [Delivery]) -> Knowledge {
                var f = Knowledge(config: c.config)
                for d in deliveries { f.learn(d) }
                return f
            }
            func same(_ a: Oracle.Judgement, _ b: Oracle.Judgement) -> Bool {
                a.answer == b.answer && a.undetermined == b.undetermined
            }
            for (n, step) in c.steps.enumerated() {
                switch step {
                case .deliver(let d):
                    guard d.forgery == nil else { continue }
                    let before = k
                    guard k.learn(d.delivery) else { continue }
                    earlier = (before, learned)
                    learned.append(d.delivery)
                case .query(let q):
                    questions += 1
                    let user = q.query.userId, t = q.query.at
                    if !same(Oracle.judge(k, user: user, at: t), Oracle.judge(fresh(learned), user: user, at: t)) {
                        mismatches.append("case \(i), step \(n): \(user) at \(t)")
                    }
                    if let (old, had) = earlier,
                        !same(Oracle.judge(old, user: user, at: t), Oracle.judge(fresh(had), user: user, at: t))
                    {
                        mismatches.append("case \(i), step \(n): the copy before the last delivery, \(user) at \(t)")
                    }
                }
            }
        }
        #expect(questions > 1000)
        #expect(mismatches.count == 0, "first ones:\n\(mismatches.prefix(5).joined(separator: "\n"))")
    }
}
