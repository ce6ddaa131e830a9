import IAPSimulator
import IAPSupport

/// What a user selected for a run, as they wrote it on the command line: the validator, the seed and cases, the
/// catalog and policy files, the properties, faults and declared divergences. The command line fills it once; every
/// command that runs the same cases again — a failing case's rerun, a saved counterexample's replay, the same run
/// after an interrupt, the doctor's "usable" line — is built from it here, and nowhere else.
public struct RunSelection: Sendable, Equatable {
    /// The validator as the user named it (`reference`, `mutant:NAME`, `exec:'…'`, `http:FILE`).
    public var validator: String
    public var seed: UInt64 = 1
    public var cases = 1000
    public var shard: Shard?
    /// The catalog options as given (`--catalog`, `--bundle-id`, `--app-apple-id`, `--environment`,
    /// `--entitlements`), the policy file and the history size.
    public var catalogFile: String?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: String?
    public var entitlementsFile: String?
    public var policyFile: String?
    /// `--grace`, as given.
    public var grace: String?
    public var maxSize = HistoryGenerator.defaultMaxSize
    /// `--known-divergences`, `--faults` and `--property` as given.
    public var knownDivergences: String?
    public var faults: String?
    public var properties: [String] = []
    public var parallel = false
    public var unsigned = false
    /// `--no-corpus`: a rerun of a run without the corpus must not start writing one.
    public var noCorpus = false
    /// `--timeout` when the user gave one other than the default: a slow backend's rerun must get as long.
    public var timeout: Double?

    public init(validator: String) {
        self.validator = validator
    }

    /// The options that select the same histories (catalog, policy, size), each with a leading space.
    public var catalogArguments: String {
        var s = ""
        if let catalogFile { s += " --catalog \(Shell.quote(catalogFile))" }
        if let bundleId { s += " --bundle-id \(Shell.quote(bundleId))" }
        if let appAppleId { s += " --app-apple-id \(appAppleId)" }
        if let environment { s += " --environment \(Shell.quote(environment))" }
        if let entitlementsFile { s += " --entitlements \(Shell.quote(entitlementsFile))" }
        if let policyFile { s += " --policy \(Shell.quote(policyFile))" }
        if let grace { s += " --grace \(Shell.quote(grace))" }
        if maxSize != HistoryGenerator.defaultMaxSize { s += " --max-size \(maxSize)" }
        return s
    }

    /// Every option that makes a case the same case again, each with a leading space: the catalog's, then what is
    /// checked and how it is delivered.
    public var arguments: String {
        var s = catalogArguments
        if let k = knownDivergences { s += " --known-divergences \(Shell.quote(k))" }
        if let f = faults { s += " --faults \(Shell.quote(f))" }
        for p in properties { s += " --property \(Shell.quote(p))" }
        if parallel { s += " --parallel" }
        if unsigned { s += " --unsigned" }
        if noCorpus { s += " --no-corpus" }
        return s + timeoutArgument
    }

    /// ` --timeout S`, or nothing.
    var timeoutArgument: String {
        guard let timeout else { return "" }
        return " --timeout " + (timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout))
    }

    private var checkPrefix: String { "iapcheck check --validator \(Shell.quote(validator)) --seed \(seed)" }

    /// Runs case `index` of this run alone (unshrunk).
    public func rerun(case index: Int) -> String { "\(checkPrefix) --case \(index)\(arguments)" }

    /// The whole run again (after an interrupt), the same shard included.
    public var sameRun: String {
        "\(checkPrefix) --cases \(cases)\(arguments)\(shard.map { " --shard \($0)" } ?? "")"
    }

    /// Replays a saved counterexample against this validator.
    public func replay(file: String) -> String {
        "iapcheck replay \(Shell.quote(file)) --validator \(Shell.quote(validator))\(timeoutArgument)"
    }

    /// Checks this validator with these histories (what the doctor suggests once it passes).
    public var check: String {
        "iapcheck check --validator \(Shell.quote(validator))\(catalogArguments)\(timeoutArgument)"
    }
}
