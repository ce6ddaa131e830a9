import ArgumentParser
import Foundation
import IAPHTTP
import IAPLoad
import IAPModel
import IAPValidatorAPI

/// The app under load: a profile's `catalog`, `bundleId`, `appAppleId`, `environment`, `entitlements` and `policy`
/// keys, each replaced by the option of the same name (as `check` takes them).
struct LoadAppOptions: ParsableArguments {
    @Option(
        help:
            "The app's catalog (iapcheck JSON or an Xcode .storekit file): the pool's histories are of its products. Overrides the profile's \"catalog\"; default the built-in catalog."
    ) var catalog: String?
    @Option(help: "The app's bundle id (required with a .storekit catalog); overrides the profile's \"bundleId\".")
    var bundleId: String?
    @Option(help: "The app's App Store id, as the backend is configured; overrides the profile's \"appAppleId\".")
    var appAppleId: Int64?
    @Option(help: "Production or Sandbox, as the backend is configured; overrides the profile's \"environment\".")
    var environment: String?
    @Option(help: "Entitlements file for a .storekit catalog; overrides the profile's \"entitlements\".")
    var entitlements: String?
    @Option(help: "Policy file (docs/policies.md); overrides the profile's \"policy\".") var policy: String?

    var app: LoadProfile.App {
        var a = LoadProfile.App()
        a.catalog = catalog
        a.bundleId = bundleId
        a.appAppleId = appAppleId
        a.environment = environment
        a.entitlements = entitlements
        a.policy = policy
        return a
    }
}

extension Load {
    /// The catalog and policy of the profile's app, its notes said first; exit 2 with every problem named.
    static func app(_ p: LoadProfile) throws -> (Catalog, Policy) {
        do {
            let (catalog, policy) = try CaseOptions.resolve(
                catalog: p.app.catalog, bundleId: p.app.bundleId, appAppleId: p.app.appAppleId,
                environment: p.app.environment, entitlements: p.app.entitlements, policy: p.app.policy)
            for note in catalog.notes {
                try? FileHandle.standardError.write(
                    contentsOf: Data("catalog \(p.app.catalog ?? "builtin"): \(note)\n".utf8))
            }
            return (catalog, policy)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }
}
