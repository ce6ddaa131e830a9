import IAPConformance
import IAPModel
import IAPOracle
import IAPSimulator
import IAPSubprocess
import IAPValidatorAPI
import PropertyEngine

/// Test support shared by the test targets: generated cases and histories from seeds.
public enum Fixtures {
    public static func generator(catalog: Catalog = .standard, policy: Policy = .default, drawsCatalogs: Bool = false)
        -> CaseGenerator
    {
        CaseGenerator(catalog: catalog, policy: policy, drawsCatalogs: drawsCatalogs)
    }

    /// The case and simulator of `seed` for `property` (with a catalog drawn for the case when `drawsCatalogs`).
    public static func generated(
        seed: UInt64, property: PropertyName = .entitlementAgreement, catalog: Catalog = .standard,
        policy: Policy = .default,
        drawsCatalogs: Bool = false
    ) -> (GeneratedCase, StoreSimulator) {
        generator(catalog: catalog, policy: policy, drawsCatalogs: drawsCatalogs).generate(
            property, ChoiceSource(seed: seed))
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
}

extension Fixtures {
    /// Runs `body` against a subprocess validator started from `command`, stops it, and returns the failure it
    /// reported (nil when `body` succeeded).
    public static func subprocessFailure(
        _ command: String, timeout: Double, _ body: (SubprocessValidator) throws(ValidatorFailure) -> Void
    ) -> ValidatorFailure? {
        let v = SubprocessValidator(command: command, timeout: timeout)
        defer { v.stop() }
        do {
            try body(v)
            return nil
        } catch {
            return error
        }
    }
}
