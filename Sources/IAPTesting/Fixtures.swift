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
