import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSimulator
import IAPSupport

/// Options shared by the commands that build cases.
struct CaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            Catalog: an iapcheck catalog JSON, an Xcode .storekit file, or `builtin` (the built-in catalog). \
            Default: every case draws its own catalog (groups, levels, durations, offers, family sharing), the built-in \
            catalog being one of the draws; see docs/catalog.md.
            """)
    var catalog: String?

    @Option(
        name: .long,
        help:
            "The app's bundle id: required with a .storekit catalog (it has none of its own); overrides an iapcheck catalog's."
    )
    var bundleId: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The app's App Store id (appAppleId), as the backend is configured; overrides the catalog's (a .storekit file has none of its own: 1234567890; the run's header names the id a synced file carries).",
            valueName: "ID"))
    var appAppleId: Int64?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Production or Sandbox: the environment the app's artifacts are signed for, as the backend is configured; overrides the catalog's (Production for a .storekit file).",
            valueName: "NAME"))
    var environment: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            Entitlements file: {"entitlements": [{"id": "pro", "products": ["pro.monthly", "lifetime"]}]}, each \
            entitlement unlocked by any of its products (for a .storekit catalog; an iapcheck catalog can carry the \
            same key). Needs --catalog. See docs/catalog.md#entitlements.
            """, valueName: "file"))
    var entitlements: String?

    @Option(
        name: .long, help: "Policy file (JSON) for the ambiguous points of Apple's semantics; see docs/policies.md.")
    var policy: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The app's Billing Grace Period in App Store Connect, over what the catalog says: off (no case has grace), on (each case draws 3, 16 or 28 days, all renewals or paid ones), drawn (each case draws off or on). See docs/catalog.md#billing-grace-period.",
            valueName: "off|on|drawn"))
    var grace: String?

    @Option(name: .long, help: "Seed of the run; the same seed and version reproduce the same cases.")
    var seed: UInt64 = 1

    @Option(
        name: .long,
        help: ArgumentHelp(
            """
            Largest case of the long tail: the most periods one "time passes" action renews and the most purchases one \
            spree makes. Cases start small and grow; one in ten may reach this size, the rest stay at 8 or less \
            (default 72, a monthly subscriber of six years; 8 keeps every case small).
            """, valueName: "N"))
    var maxSize: Int = HistoryGenerator.defaultMaxSize

    @Flag(
        name: .long,
        help:
            "Keep the {tmp} folder of a backend iapcheck starts (its output, its data, its clock) after a run that passed; a failed run keeps it anyway and prints where."
    )
    var keepTmp = false

    func validate() throws {
        if keepTmp { ManagedBackend.keepDirectories.withLock { $0 = true } }
    }

    /// No catalog was given: each case draws its own, with the built-in catalog (and `--bundle-id`) as its base.
    var drawsCatalogs: Bool { catalog == nil }

    /// The run's selection as the user wrote it (``RunSelection``): its catalog, policy and size options; the command
    /// adds what else it takes.
    func selection(validator: String) -> RunSelection {
        var s = RunSelection(validator: validator)
        s.seed = seed
        (s.catalogFile, s.bundleId, s.appAppleId) = (catalog, bundleId, appAppleId)
        (s.environment, s.entitlementsFile, s.policyFile) = (environment, entitlements, policy)
        s.grace = grace
        s.maxSize = maxSize
        return s
    }

    /// The catalog and policy, or exit code 2 with every problem named.
    func loadOrExit() throws -> (Catalog, Policy) {
        guard maxSize >= 1 else { throw fail("error: --max-size must be at least 1", code: Exit.usage) }
        do {
            let (catalog, policy) = try load()
            // What reading the catalog assumed or left out: said before anything runs, as a run's header.
            for note in catalog.notes {
                try? FileHandle.standardError.write(
                    contentsOf: Data("catalog \(self.catalog ?? "builtin"): \(note)\n".utf8))
            }
            return (catalog, policy)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    func load() throws(ConfigError) -> (Catalog, Policy) {
        try Self.resolve(
            catalog: catalog, bundleId: bundleId, appAppleId: appAppleId, environment: environment,
            entitlements: entitlements, policy: policy, grace: grace)
    }

    /// The catalog and policy these names give (`check`'s options, a load profile's `app` keys): a catalog file with
    /// the bundle id, App Apple ID and environment given in place of its own, an entitlements file added.
    static func resolve(
        catalog: String?, bundleId: String?, appAppleId: Int64?, environment: String?, entitlements: String?,
        policy: String?, grace: String? = nil
    ) throws(ConfigError) -> (Catalog, Policy) {
        var (c, p) = try Self.load(catalog: catalog, bundleId: bundleId, policy: policy)
        if let grace, !c.stateGrace(grace) {
            throw ConfigError(file: "--grace", key: "grace", "\"\(grace)\" is not off, on or drawn")
        }
        if let appAppleId {
            guard appAppleId > 0 else {
                throw ConfigError(
                    file: "--app-apple-id", key: "appAppleId", "must be a positive number, not \(appAppleId)")
            }
            c.appAppleId = appAppleId
            // Stated: the note on the file's own id has nothing left to say.
            c.skipped.removeAll { $0.hasPrefix("App Apple ID: ") }
        }
        if let environment {
            guard [Environment.production, .sandbox].map(\.rawValue).contains(environment) else {
                throw ConfigError(
                    file: "--environment", key: "environment", "\"\(environment)\" is not Production or Sandbox")
            }
            c.environment = Environment(rawValue: environment)
        }
        if let entitlements {
            guard catalog != nil else {
                throw ConfigError(
                    file: entitlements,
                    problems: [
                        .init(
                            key: "entitlements",
                            message:
                                "entitlements name products of one catalog: give it with --catalog (without one, every case draws its own catalog and gets entitlements made from it)"
                        )
                    ])
            }
            c = try CatalogLoader.addingEntitlements(path: entitlements, to: c)
        }
        return (c, p)
    }

    /// The catalog and policy named by these options (any command that takes them).
    static func load(catalog: String?, bundleId: String?, policy: String? = nil) throws(ConfigError) -> (
        Catalog, Policy
    ) {
        if let b = bundleId, let why = CatalogLoader.bundleIdProblem(b) {
            throw ConfigError(file: "--bundle-id", key: "bundleId", why)
        }
        var defaults = Catalog.standard
        if let b = bundleId { defaults.bundleId = b }
        let catalogPath = catalog
        var catalog = defaults
        if let path = catalogPath, path != "builtin" {
            catalog = try CatalogLoader.load(path: path, defaults: defaults)
            // A .storekit file names no app: checking it under a made-up bundle id would test the wrong thing.
            if bundleId == nil && CatalogLoader.isStoreKit(path: path) {
                throw ConfigError(
                    file: path,
                    problems: [
                        .init(
                            key: "bundleId",
                            message: "a .storekit file has no bundle id; give the app's with --bundle-id com.your.app")
                    ])
            }
        }
        if let b = bundleId { catalog.bundleId = b }
        var loaded = Policy.default
        if let path = policy { loaded = try Policy.load(path: path) }
        return (catalog, loaded)
    }
}

/// The names of a comma-separated option (`--answers`, `--channels`, `--known-divergences`), trimmed, empty ones
/// dropped.
func commaList(_ s: String) -> [String] {
    s.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}

/// `--known-divergences NAMES`: forgery classes and properties, or a usage error naming the unknown one.
func declaredDivergences(_ text: String?) throws -> (classes: Set<ForgeryClass>, properties: [PropertyName]) {
    var classes: Set<ForgeryClass> = []
    var properties: [PropertyName] = []
    for name in commaList(text ?? "") {
        if let f = ForgeryClass(rawValue: name) {
            classes.insert(f)
        } else if let p = PropertyName(rawValue: name) {
            properties.append(p)
        } else {
            throw ValidationError(
                "--known-divergences: \"\(name)\" is neither a forgery class (\(ForgeryClass.allCases.map(\.rawValue).joined(separator: ", "))) nor a property"
            )
        }
    }
    return (classes, properties)
}
