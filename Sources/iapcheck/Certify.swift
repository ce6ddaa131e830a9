import ArgumentParser
import Crypto
import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPReference
import IAPValidatorAPI

struct Certify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the fixed, versioned certification suite and write a JSON and an HTML report to Results/.",
        discussion: """
            Every property with its named seed and case count, then a probe of every forgery class. Unlike check, a \
            failing property does not stop the others. Exit code 0 when certified, 1 otherwise, 2 misconfigured, 3 if \
            the validator failed as a program, 130 when Ctrl-C stopped it (what ran so far is reported, with no verdict).
            """)

    @Option(help: "reference, mutant:NAME, exec:'COMMAND' or http:TARGET.json.") var validator = "reference"
    @Option(help: "Seconds per request for exec: validators.") var timeout: Double = 10
    @OptionGroup var options: CaseOptions
    @Option(help: "Multiply every case count (reports say so when not 1).") var scale: Double = 1
    @Option(help: "Directory for the report folder.") var results = "Results"
    @Option(
        help: ArgumentHelp(
            "Comma-separated properties or forgery classes where this validator is known to differ from the reference (e.g. oversized-token,replayed-notification-uuid for Apple's Python library, docs/verifiers.md#what-is-left-to-the-application). They are listed in the report; the exit code is 0 when every divergence was declared.",
            valueName: "NAMES"))
    var knownDivergences: String?
    @Option(
        help: ArgumentHelp(
            "Accepted divergences by failure signature, each with its reason (as check --write-baseline or certify --write-baseline writes it and a person completes; default: the \"baseline\" of an http: target file). A property that fails only with these is certified with them as declared exceptions, each listed with its reason; entries not met are named. See docs/check.md#baselines.",
            valueName: "FILE"))
    var baseline: String?
    @Option(
        help: ArgumentHelp(
            "Write the undeclared divergences of properties to FILE as a baseline, each with an empty reason to fill in and its replay command.",
            valueName: "FILE"))
    var writeBaseline: String?
    @Option(
        help: ArgumentHelp(
            "Fault profile, as for check (kill, reset, webhook-5xx, slow-store): the suite runs under it; kill adds the durable-ack property.",
            valueName: "LIST"))
    var faults: String?
    @Option(
        help: ArgumentHelp(
            "Validators checked at once; the report is the same for any N. Default: the number of cores for built-in validators, 1 for exec:, for http: as the target allows (one backend per core with {port} in its start command; see check --help).",
            valueName: "N"))
    var jobs: Int?
    @Flag(
        help:
            "Add the parallel-delivery property for an http: backend: half of each history sent by two concurrent clients, which shows lost updates and double credits (built-in validators that take concurrent calls always get it; exec: programs answer one call at a time)."
    )
    var parallel = false

    func run() throws {
        try requireWritable(directory: results)
        if let writeBaseline { try requireWritable(file: writeBaseline) }
        let (run, v) = try prepared()
        let report = run.run(v)
        for line in report.lines { print(line) }
        let dir = (results as NSString).appendingPathComponent(report.folderName)
        try writeResults("the certification report", to: dir) {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try JSONFormat.write(report, to: (dir as NSString).appendingPathComponent("report.json"))
            try CertificationHTML.render(report).write(
                toFile: (dir as NSString).appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        }
        print("catalog: \(run.catalogRecord!.description), bundle id \(run.catalogRecord!.bundleId)")
        if let writeBaseline { try write(report.baselineOfDivergences, to: writeBaseline) }
        print("\(report.verdictWord): \(dir)/report.html")
        if report.exitCode != 0 { throw ExitCode(report.exitCode) }
    }

    /// The run as the options describe it, and the validator it certifies.
    func prepared() throws -> (CertifyRun, any Validator) {
        let (catalog, loaded) = try options.loadOrExit()
        let policy = try adoptingMeaning(loaded, try parseValidator(validator))
        let accepted = try acceptedDivergences(option: baseline, validator: try parseValidator(validator))
        let faultProfile = try parseFaults(faults)
        // Before anything starts: a target's maxConcurrency bounds --jobs.
        let jobCount = try resolveJobs(jobs, for: validator, faults: faultProfile)
        // Checked by two clients at once, the built-in reference runs synchronized, as check runs it.
        let synchronized = try parallel && parseValidator(validator) == .reference
        let v =
            synchronized
            ? SynchronizedReferenceValidator() : try makeValidator(validator, timeout: timeout, faults: faultProfile)
        try refuseUnusable(v, faults: faultProfile)
        var run = CertifyRun(catalog: catalog, policy: policy, scale: scale)
        run.collectsEverySignature = writeBaseline != nil
        (run.spec, run.knownDivergences, run.maxSize) = (validator, try declared(), options.maxSize)
        (run.faults, run.durableAck) = (faultProfile.isEmpty ? nil : faults, faultProfile.kill)
        (run.parallel, run.parallelNotAsked) = try parallelDelivery(v)
        run.catalogRecord = try catalogRecord(catalog)
        if let accepted { (run.baseline, run.baselineFile) = accepted }
        let workers = workerFactory(validator, timeout: timeout, faults: faultProfile, jobs: jobCount)
        (run.jobs, run.makeWorker) = (
            jobCount, { () throws -> any Validator in synchronized ? SynchronizedReferenceValidator() : try workers() }
        )
        run.progress = { line in try? FileHandle.standardError.write(contentsOf: Data("certify: \(line)\n".utf8)) }
        run.shouldStop = { Interrupt.requested }
        Interrupt.install()
        let overall = Progress("certify", quiet: false)
        run.caseProgress = { done, total, label in
            overall.label = label
            overall.update(done, total)
        }
        return (run, v)
    }

    /// `--write-baseline`: the entries, and what to do with them.
    func write(_ b: Baseline, to file: String) throws {
        try writeResults("the baseline", to: file) { try b.write(to: file) }
        print(
            "baseline: \(b.entries.count) signature\(b.entries.count == 1 ? "" : "s") written to \(file); give each a \"reason\", then run with --baseline \(file)"
        )
    }

    /// A fault profile the validator cannot take, or a backend without a reset route and no catalog named: exit 2.
    func refuseUnusable(_ v: any Validator, faults faultProfile: FaultProfile) throws {
        if let problem = faultProfile.problem(with: v) { throw ValidationError(problem) }
        if v.isolation == .namespace && options.catalog == nil {
            throw fail(
                "error: \(validator) has no reset route, so the backend keeps its own products: name them with --catalog (and --bundle-id, --entitlements), as the backend is configured (docs/http-target.md#backends-without-a-reset-route)",
                code: Exit.usage)
        }
    }

    /// Whether the suite runs parallel-delivery, and if not, why the report lists it as not checked: a validator of
    /// this process that takes concurrent calls always runs it, an http: backend with --parallel; an exec: program
    /// cannot.
    func parallelDelivery(_ v: any Validator) throws -> (Bool, String?) {
        if v is any ConcurrentValidator { return (true, nil) }
        guard v is any RaceableValidator else {
            if parallel { throw ValidationError(Check.parallelNeeds) }
            return (
                false,
                "this validator answers one call at a time (an exec: program, a mutant or a variant); the built-in reference is checked with certify --parallel"
            )
        }
        return parallel
            ? (true, nil)
            : (false, "concurrent deliveries (lost updates, double credits) are checked with certify --parallel")
    }

    /// The names given to --known-divergences, each a certified property or a forgery class.
    func declared() throws -> Set<String> {
        let known = Set(commaList(knownDivergences ?? ""))
        if let unknown = CertifyRun.unknownDivergence(in: known) {
            throw ValidationError(
                "--known-divergences: \"\(unknown)\" is neither a certified property nor a forgery class")
        }
        return known
    }

    /// What the report records about the catalog: the file and a hash of the bytes that were read.
    func catalogRecord(_ catalog: Catalog) throws -> CertificationSuite.CatalogRecord {
        let args = options.selection(validator: validator).catalogArguments
        guard let path = options.catalog, path != "builtin" else {
            return CertificationSuite.CatalogRecord(
                file: nil, sha256: nil, catalog: catalog, arguments: args, drawn: options.drawsCatalogs)
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let hash = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        return CertificationSuite.CatalogRecord(file: path, sha256: hash, catalog: catalog, arguments: args)
    }
}
