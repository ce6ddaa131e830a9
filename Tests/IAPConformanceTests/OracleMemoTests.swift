import IAPConformance
import IAPModel
import IAPOracle
import IAPReference
import IAPSimulator
import IAPTesting
import Testing

/// The oracle keeps what it derives from the facts between questions, and after a new transaction prepares again
/// only that transaction's chain. Asked along the way, as `check` asks it (other users between deliveries, copies
/// of the facts kept while the original learns more), it must answer exactly as facts learned at once and never
/// asked before.
@Suite struct OracleMemoTests {
    @Test(.long) func anOracleAskedAlongTheWayAnswersAsOneThatLearnedAtOnce() {
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

    static let t0: Millis = 1_772_323_260_000  // 2026-03-01T00:01Z
    static let day = CivilTime.msPerDay

    static func monthly(_ id: String, chain: String, signed: Millis) -> JWSTransactionDecodedPayload {
        var tx = Build.transaction(id, chain: chain, purchased: t0, expires: t0 + 30 * day, signed: signed)
        tx.appAccountToken = "u1"
        return tx
    }

    static func judged(_ k: Knowledge) -> EntitlementAnswer {
        Oracle.judge(k, user: "u1", at: t0 + day).answer
    }

    /// A newer version of a transaction that names another chain (no genuine history does; a validator may still be
    /// sent one) leaves the chain the older version named: the prepared chains of both are made again.
    @Test func aVersionThatMovesToAnotherChainLeavesTheOldOne() {
        let config = ValidatorConfig(catalog: .standard, policy: .default)
        var k = Knowledge(config: config)
        let first = Self.monthly("2000000000000005", chain: "2000000000000001", signed: Self.t0)
        var moved = Self.monthly("2000000000000005", chain: "2000000000000002", signed: Self.t0 + 1000)
        moved.revocationDate = Self.t0 + 500
        // The first chain stays the user's (the app submitted it) when the transaction leaves it.
        k.link(chain: first.originalTransactionId, to: "u1")
        k.merge(first)
        _ = Self.judged(k)
        k.merge(moved)
        var fresh = Knowledge(config: config)
        fresh.link(chain: first.originalTransactionId, to: "u1")
        fresh.merge(first)
        fresh.merge(moved)
        #expect(Self.judged(k) == Self.judged(fresh))
        #expect(Self.judged(k).products.first?.active == false)
    }

    /// A chain linked to its user before any of its transactions is known gets them when they arrive.
    @Test func aChainLinkedBeforeItsTransactionsGetsThem() {
        let config = ValidatorConfig(catalog: .standard, policy: .default)
        var k = Knowledge(config: config)
        k.link(chain: "2000000000000003", to: "u2")
        #expect(Oracle.judge(k, user: "u2", at: Self.t0 + Self.day).answer.products.isEmpty)
        var tx = Self.monthly("2000000000000003", chain: "2000000000000003", signed: Self.t0)
        tx.appAccountToken = nil
        k.merge(tx)
        let answer = Oracle.judge(k, user: "u2", at: Self.t0 + Self.day).answer
        #expect(answer.products.map(\.productId) == ["pro.monthly"])
        #expect(answer.products.first?.active == true)
    }
}
