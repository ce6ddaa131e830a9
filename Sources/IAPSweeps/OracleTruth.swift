import IAPConformance
import IAPModel
import IAPOracle
import IAPSimulator
import PropertyEngine

/// The two independent derivations of docs/semantics.md#three-derivations-that-must-agree, compared on the whole
/// answer (every product the person ever had with its state, expiry and ownership; groups; balances): the
/// simulator's truth segments and chain marks, and the oracle over every fact signed so far.
public enum OracleTruth {
    /// Each seed draws its own catalog (the built-in one is among the draws), as `check` does by default.
    public static func mismatches(seed: UInt64, policy: Policy = .default) -> [String] {
        let generator = CaseGenerator(catalog: .standard, policy: policy, drawsCatalogs: true)
        let (_, sim) = generator.generate(.entitlementAgreement, ChoiceSource(seed: seed))
        return mismatches(sim: sim, policy: policy, label: "seed \(seed)")
    }

    /// Every person at every instant where something changes: the truth and the oracle's answer, where they differ
    /// (at most four, each with the history that led there).
    public static func mismatches(sim: StoreSimulator, policy: Policy, label: String = "history") -> [String] {
        var out: [String] = []
        for t in sim.interestingInstants {
            let k = knowledge(of: sim, signedBy: t, policy: policy)
            for p in sim.persons {
                let truth = sim.truth(person: p.index, at: t)
                let oracle = TruthView(Oracle.answer(k, user: p.accountId, at: t))
                if truth != oracle {
                    let when = { (t: Millis) in CivilTime.relative(t - (sim.origin ?? 0)) }
                    let history = sim.events.map { "    \(when($0.time)) \($0.summary)" }.joined(separator: "\n")
                    out.append("\(label) \(p.name) at \(when(t)):\n  truth  \(truth)\n  oracle \(oracle)\n" + history)
                }
            }
            if out.count > 3 { break }
        }
        return out
    }

    /// Knowledge holding every fact the store signed at or before `t`, with every chain linked to its owner:
    /// what a validator would know at `t` had every delivery arrived at once.
    public static func knowledge(of sim: StoreSimulator, signedBy t: Millis, policy: Policy = .default) -> Knowledge {
        var k = Knowledge(config: ValidatorConfig(catalog: sim.catalog, policy: policy))
        for id in sim.txOrder {
            if let v = sim.latest(id, at: t) { k.merge(v) }
        }
        for id in sim.chainOrder {
            // Every renewal info signed by t, as a validator that got every notification has them (an extension
            // signed only in the renewal info is known from its own version, not from the newest).
            for r in sim.renewalVersions[id, default: []] where r.signedDate <= t { k.merge(r) }
            let c = sim.chains[id]!
            k.link(chain: id, to: sim.persons[c.person].accountId)
        }
        return k
    }

    /// The mismatches over `seeds` under `policy`, stopping after the fourth.
    public static func sweep(_ seeds: Range<UInt64>, policy: Policy = .default) -> [String] {
        var failures: [String] = []
        for seed in seeds {
            failures += mismatches(seed: seed, policy: policy)
            if failures.count > 3 { break }
        }
        return failures
    }
}
