import IAPModel
import IAPOracle
import IAPSimulator
import IAPTesting
import Foundation
import Testing

/// The two independent derivations of docs/semantics.md#three-derivations-that-must-agree must agree: the simulator's truth intervals and the oracle over
/// every fact signed so far.
@Suite struct OracleMatchesTruthTests {
    /// `IAPCHECK_LONG=1 swift test` runs ten times as many seeds.
    static let scale: UInt64 = ProcessInfo.processInfo.environment["IAPCHECK_LONG"] == nil ? 1 : 10

    static func mismatches(seed: UInt64, policy: Policy = .default) -> [String] {
        let (_, sim) = Fixtures.generated(seed: seed, policy: policy)
        var out: [String] = []
        for t in sim.interestingInstants {
            let k = Fixtures.knowledge(of: sim, signedBy: t, policy: policy)
            for p in sim.persons {
                let truth = sim.truth(person: p.index, at: t)
                let oracle = TruthView(Oracle.answer(k, user: p.accountId, at: t))
                if truth != oracle {
                    out.append("seed \(seed) \(p.name) at \(CivilTime.relative(t - (sim.origin ?? 0))):\n  truth  \(truth)\n  oracle \(oracle)\n" +
                        sim.events.map { "    \(CivilTime.relative($0.time - (sim.origin ?? 0))) \($0.summary)" }.joined(separator: "\n"))
                }
            }
            if out.count > 3 { break }
        }
        return out
    }

    @Test func oracleEqualsTruthOverManySeeds() {
        var failures: [String] = []
        for seed in UInt64(1)...(1500 * Self.scale) {
            failures += Self.mismatches(seed: seed)
            if failures.count > 3 { break }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test(arguments: [
        Policy(refundScope: .chain),
        Policy(consumableClawback: false),
        Policy(introEligibility: .neverSubscribed),
        Policy(nonRenewingStacking: true),
    ])
    func oracleEqualsTruthUnderEveryPolicy(_ policy: Policy) {
        var failures: [String] = []
        for seed in UInt64(1000)...(1000 + 500 * Self.scale) {
            failures += Self.mismatches(seed: seed, policy: policy)
            if failures.count > 3 { break }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3).joined(separator: "\n"))")
    }

    @Test func generationIsDeterministic() throws {
        let (a, _) = Fixtures.generated(seed: 42, property: .orderInsensitivity)
        let (b, _) = Fixtures.generated(seed: 42, property: .orderInsensitivity)
        #expect(a == b)
        let (c, _) = Fixtures.generated(seed: 43, property: .orderInsensitivity)
        #expect(a != c)
    }

    @Test func everyScenarioFamilyIsGenerated() {
        var seen: Set<ScenarioFamily> = []
        for seed in UInt64(1)...3000 {
            let (c, _) = Fixtures.generated(seed: seed)
            seen.formUnion(c.families)
        }
        let missing = Set(ScenarioFamily.allCases).subtracting(seen).map(\.rawValue).sorted()
        #expect(missing.isEmpty, "never generated: \(missing)")
    }
}
