import ArgumentParser
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPSimulator
import IAPStore
import IAPSubprocess
import IAPValidatorAPI

/// Exit codes, documented in `--help` and the README.
enum Exit {
    static let pass: Int32 = 0
    static let discrepancy: Int32 = 1
    static let usage: Int32 = 2
    static let validatorFailure: Int32 = 3
    /// `merge-reports`: a shard is missing or was interrupted (and none of those present failed).
    static let incomplete: Int32 = 5
}

struct IAPCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iapcheck",
        abstract: "Property-based conformance checking of App Store purchase validators.",
        discussion: """
            iapcheck generates random App Store histories (purchases, renewals, billing retry and grace, upgrades, \
            refunds, Family Sharing, offers, …), delivers them to a validator as Apple would (late, twice, out of \
            order), and compares the validator's entitlement answers with a reference oracle. Failures are shrunk to a \
            minimal history and printed as a timeline with the command that replays them.

            Exit codes: 0 all properties hold; 1 a discrepancy was found; 2 usage or configuration error; \
            3 the validator failed as a program (crash, timeout, malformed answer); 4 a load threshold failed; \
            5 merge-reports found a shard missing or interrupted; 130 interrupted (Ctrl-C), after printing what the run had found.
            """,
        version: IAPCheckVersion.current,
        subcommands: [
            Check.self, Mutants.self, Replay.self, Certify.self, Load.self, Store.self, PKI.self, Bench.self,
            Serve.self, MergeReports.self,
        ],
        defaultSubcommand: Check.self)
}

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
        name: .long, help: "Policy file (JSON) for the ambiguous points of Apple's semantics; see docs/policies.md.")
    var policy: String?

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

    /// No catalog was given: each case draws its own, with the built-in catalog (and `--bundle-id`) as its base.
    var drawsCatalogs: Bool { catalog == nil }

    /// The options that select the same catalog and policy again, for replay commands.
    var selectionArguments: String {
        var s = ""
        if let catalog { s += " --catalog \(catalog)" }
        if let bundleId { s += " --bundle-id \(bundleId)" }
        if let policy { s += " --policy \(policy)" }
        if maxSize != HistoryGenerator.defaultMaxSize { s += " --max-size \(maxSize)" }
        return s
    }

    /// The catalog and policy, or exit code 2 with every problem named.
    func loadOrExit() throws -> (Catalog, Policy) {
        guard maxSize >= 1 else { throw fail("error: --max-size must be at least 1", code: Exit.usage) }
        do {
            return try load()
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    func load() throws(ConfigError) -> (Catalog, Policy) {
        try Self.load(catalog: catalog, bundleId: bundleId, policy: policy)
    }

    /// The catalog and policy named by these options (any command that takes them).
    static func load(catalog: String?, bundleId: String?, policy: String? = nil) throws(ConfigError) -> (
        Catalog, Policy
    ) {
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

/// `--jobs`: as asked, or one per core for validators that live in this process. A program (`exec:`) runs N copies
/// only when asked, since copies of a correct validator that share a file would fail each other; an `http:` target is
/// one backend, so one job.
func resolveJobs(_ asked: Int?, for spec: String) throws -> Int {
    let inProcess = spec == "reference" || spec.hasPrefix("mutant:") || spec.hasPrefix("variant:")
    if let asked {
        guard asked >= 1 else { throw ValidationError("--jobs must be at least 1") }
        if asked > 1 && spec.hasPrefix("http:") {
            throw ValidationError("--jobs > 1 is not available for http: targets (one backend, one job)")
        }
        return asked
    }
    return inProcess ? max(1, ProcessInfo.processInfo.activeProcessorCount) : 1
}

func makeValidator(_ spec: String, timeout: Double = 5, faults: FaultProfile = FaultProfile()) throws -> any Validator {
    if spec == "reference" { return ReferenceValidator() }
    if spec.hasPrefix("http:") {
        let path = String(spec.dropFirst("http:".count))
        do {
            let target = try HTTPValidator.Target.load(path: path)
            var store: MockAppStore?
            if let settings = target.store {
                store = try startStore(settings, for: target)
                store?.faults = faults
            }
            if (faults.webhook5xxEvery != nil || faults.storeDelayMillis != nil) && store == nil {
                throw ValidationError(
                    "faults webhook-5xx and slow-store act in the mock App Store: \(path) has no \"store\" section")
            }
            return try HTTPValidator.make(
                target: target, name: "http:\(target.host):\(target.port)", timeout: timeout, store: store,
                faults: faults)
        } catch let e as ValidationError {
            throw e
        } catch let e as ValidatorFailure {
            throw fail("error: \(e.message)", code: Exit.validatorFailure)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }
    if faults.resetEvery != nil || faults.webhook5xxEvery != nil || faults.storeDelayMillis != nil {
        throw ValidationError(
            "faults reset, webhook-5xx and slow-store need an http: target (they act on HTTP connections and the mock App Store)"
        )
    }
    if spec.hasPrefix("exec:") {
        let command = String(spec.dropFirst("exec:".count))
        guard !command.isEmpty else {
            throw ValidationError("exec: needs a command, e.g. exec:'python3 my_validator.py'")
        }
        return SubprocessValidator(command: command, timeout: timeout)
    }
    if spec.hasPrefix("mutant:") {
        let name = String(spec.dropFirst("mutant:".count))
        guard let m = IAPMutants.Mutants.named(name) else {
            throw ValidationError("no mutant named \"\(name)\"; `iapcheck mutants --list` lists them")
        }
        return m.make()
    }
    if spec.hasPrefix("variant:") {
        let name = String(spec.dropFirst("variant:".count))
        guard let v = Variants.named(name) else {
            throw ValidationError(
                "no variant named \"\(name)\"; variants: \(Variants.all.map(\.name).joined(separator: ", "))")
        }
        return v.make()
    }
    throw ValidationError(
        "unknown validator \"\(spec)\": use reference, variant:NAME, mutant:NAME, exec:'COMMAND' or http:TARGET.json")
}

/// Before a run: the place its results go must be writable (created if missing), or exit 2 naming it — a long run
/// must not end with nowhere to put what it found.
func requireWritable(directory: String) throws {
    let probe = (directory as NSString).appendingPathComponent(".iapcheck-write-probe-\(getpid())")
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("probe".utf8).write(to: URL(fileURLWithPath: probe))
        try FileManager.default.removeItem(atPath: probe)
    } catch {
        throw fail("error: cannot write results to \(directory): \(StrictJSON.reason(error))", code: Exit.usage)
    }
}

func requireWritable(file: String) throws {
    let dir = (file as NSString).deletingLastPathComponent
    try requireWritable(directory: dir.isEmpty ? "." : dir)
}

/// After a run: a failed write (a full disk, a directory removed meanwhile) is reported with the path; what was
/// printed stays the record of the run.
func writeResults(_ what: String, to path: String, _ write: () throws -> Void) throws {
    do { try write() } catch {
        throw fail(
            "error: could not write \(what) to \(path): \(StrictJSON.reason(error)); the summary printed above is the record of this run",
            code: Exit.usage)
    }
}

/// `--faults LIST`, or a usage error naming the unknown fault.
func parseFaults(_ text: String?) throws -> FaultProfile {
    guard let text else { return FaultProfile() }
    switch FaultProfile.parse(text) {
    case .success(let f): return f
    case .failure(let e): throw ValidationError(e.message)
    }
}

/// The mock App Store an HTTP target asks for, started once per process on its port; TEST notifications are signed
/// with the harness's PKI and posted to the target's notification route.
func startStore(_ settings: StoreSettings, for target: HTTPValidator.Target?) throws -> MockAppStore {
    let store = try MockAppStore.shared(settings)
    if let target, let route = target.routes["notification"] {
        store.webhook = (target.host, target.port, route.path, target.clockHeader)
    }
    store.testNotificationSigner = { now, catalog in
        ArtifactRenderer(pki: TestPKI.harness, appAppleId: catalog.appAppleId).notification(
            ResponseBodyV2DecodedPayload(
                notificationType: .test, subtype: nil, notificationUUID: UUID().uuidString.lowercased(),
                signedDate: now,
                data: NotificationData(
                    appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                    transactionInfo: nil, renewalInfo: nil, status: nil)))
    }
    return store
}

func fail(_ message: String, code: Int32) -> ExitCode {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    return ExitCode(code)
}

/// Progress on standard error for runs longer than a moment.
final class Progress {
    let label: String
    var last = Date()
    let started = Date()
    let quiet: Bool
    init(_ label: String, quiet: Bool) {
        self.label = label
        self.quiet = quiet
    }
    func update(_ done: Int, _ total: Int) {
        guard !quiet, Date().timeIntervalSince(last) >= 2 else { return }
        last = Date()
        let rate = Double(done) / max(Date().timeIntervalSince(started), 0.001)
        FileHandle.standardError.write(Data("\(label): \(done)/\(total) cases, \(Int(rate))/s\n".utf8))
    }
}
