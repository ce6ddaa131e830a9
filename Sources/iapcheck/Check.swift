import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a validator against the oracle on randomized App Store histories.",
        discussion: """
            Replays the saved counterexamples in the corpus first, then generates --cases new cases; the properties \
            (entitlement-agreement, idempotent-delivery, order-insensitivity, forgery-rejected, robust-input, \
            clock-skew) take turns. Stops at the first failure, shrinks it, prints its timeline and the command that \
            replays it, and saves it to the corpus.

            Exit codes: 0 pass; 1 discrepancy; 2 usage or configuration error; 3 validator failure.
            """)

    @Option(
        help: ArgumentHelp(
            """
            The validator under test (default: reference):
              reference          iapcheck's own correct validator, in process
              variant:NAME       a correct alternative reading (variant:keeps-history)
              mutant:NAME        the reference with one real-world bug (iapcheck mutants --list)
              exec:'COMMAND'     a program speaking docs/wire-protocol.md on stdin/stdout, any language
              http:TARGET.json   your running backend, its routes and answers mapped by a target file \
            (docs/http-target.md; check it first with iapcheck doctor --validator http:TARGET.json)
            """, valueName: "SPEC"))
    var validator = "reference"

    @Option(help: "Seconds a subprocess validator may take to answer one request before it is killed and reported.")
    var timeout: Double = Self.defaultTimeout
    static let defaultTimeout = 5.0

    @OptionGroup var options: CaseOptions

    @Option(help: "Number of generated cases.")
    var cases = 1000

    @Option(name: .customLong("case"), help: "Run only this case index of the seeded run (to reproduce one case).")
    var caseIndex: Int?

    @Option(help: "Check only this property (repeatable).")
    var property: [String] = []

    @Option(help: "Write a JSON summary here.")
    var json: String?

    @Option(help: "Write JUnit XML here.")
    var junit: String?

    @Option(
        help: ArgumentHelp(
            "Corpus directory: its saved counterexamples of this app are replayed first, and new ones saved there. Default: Corpus/ for iapcheck's own validators; for exec: and http:, a folder of their own in Corpus/ (a backend's named for its target's \"name\", or its bundle id and address: Corpus/http-com.your.app-127.0.0.1-8700/), with Corpus/ itself replayed too. Cases of another app or profile are skipped and counted.",
            valueName: "DIR"))
    var corpus: String?

    @Flag(help: "Do not replay or write the corpus.")
    var noCorpus = false

    @Flag(
        help:
            "Skip the checks `iapcheck doctor` makes before the first case (for exec: and http: validators; on a configuration problem check stops with the checklist, exit 2)."
    )
    var noDoctor = false

    @Option(
        help:
            "Shrinking attempts per failure (deterministic: the same seed gives the same counterexample on any machine). An in-process failure that must shrink signed (one that depends on signatures) takes at most 400, since each attempt signs its artifacts; a validator failure (crash, garbage) at most 40, a timeout 8. exec: and http: validators also stop at --shrink-seconds."
    )
    var shrinkAttempts: Int = 2000

    @Option(
        help:
            "Wall-clock cap on shrinking one failure, in seconds (default: none in process; 60 for exec: and http: validators, whose candidates are tried side by side on the --jobs copies). When the cap ends a shrink the FAIL line says so, and the shrunk case may depend on the machine's speed."
    )
    var shrinkSeconds: Double?

    @Option(
        name: .customLong("keep-going"),
        help: ArgumentHelp(
            "Go on after a failure: find up to N distinct failures (\(KeepGoing.defaultLimit) when --keep-going has no value), each shrunk; failures that differ in the same way (same kind of difference, field, product kind, channel and event) count as one. See docs/check.md#distinct-failures.",
            valueName: "N"))
    var keepGoing: Int?

    @Flag(
        help:
            "Under each failure, print per delivery of the shrunk case the decoded fields of each signed artifact (transaction, renewal info, notification, receipt entries) that changed from the previous artifact of its chain. See docs/check.md#reading-an-explanation."
    )
    var explain = false

    @Flag(help: "No progress lines.")
    var quiet = false

    @Flag(
        help:
            "Also check parallel delivery: half of each history from two concurrent clients, each artifact from both at once (an http: backend gets two connections of its own; the built-in reference runs synchronized)."
    )
    var parallel = false

    @Option(
        help: ArgumentHelp(
            "Fault profile, a comma-separated list: kill (adds the durable-ack property: SIGKILL after every fifth acknowledged delivery, restart without reset; exec: validators, http: targets with a start command), reset (every 4th HTTP delivery's answer is lost on a dropped connection and the request resent), webhook-5xx (every 3rd notification's first webhook attempt is answered 503 after the backend processed it, so the mock App Store retries), slow-store (the mock App Store answers 200 ms late). See docs/check.md#fault-profiles.",
            valueName: "LIST"))
    var faults: String?

    @Flag(
        help:
            "Deliver decoded facts instead of signed artifacts (in-process validators only; no forgery checks). Much faster."
    )
    var unsigned = false

    @Option(
        help: ArgumentHelp(
            "Comma-separated forgery classes (or properties) where this validator is known to differ on purpose (e.g. oversized-token for a backend without a size cap): cases leave them out and the summary lists them as not checked. As certify's option.",
            valueName: "NAMES"))
    var knownDivergences: String?

    @Option(
        help: ArgumentHelp(
            "Validators checked at once, each with its own cases; the report and the counterexample are the same for any N. Default: the number of cores for built-in validators, 1 for exec: (give --jobs to start N processes: they must not share files or ports); for http: one backend per core when its start command takes {port} (each on its own port, {tmp} and clock), any N on one backend without a reset route (asked for), else up to the target file's maxConcurrency (default 1), each job sending its number in the X-IAPCheck-Job header. See docs/http-target.md#concurrent-jobs.",
            valueName: "N"))
    var jobs: Int?

    @Option(
        help: ArgumentHelp(
            "Run only slice INDEX of COUNT of the case indices (0/4 … 3/4), to split one seeded run over several machines; join the --json summaries with `iapcheck merge-reports`. Each shard replays the corpus.",
            valueName: "INDEX/COUNT"))
    var shard: String?

    @Option(
        help: ArgumentHelp(
            "Accepted divergences: a file of failure signatures, each with its reason (as --write-baseline writes it and a person completes). Failures with those signatures, in the corpus replay and in generated cases, are listed as accepted and do not fail the run; entries not met are named. Default: the \"baseline\" of an http: target file. See docs/check.md#baselines.",
            valueName: "FILE"))
    var baseline: String?

    @Option(
        help: ArgumentHelp(
            "Write the failure signatures this run met to FILE as a baseline, each with an empty reason to fill in and its replay command, and which cases failed. The run goes on to its last case, shrinking up to \(KeepGoing.baselineLimit) distinct failures (--keep-going=N: up to N). See docs/check.md#baselines.",
            valueName: "FILE"))
    var writeBaseline: String?

    @Option(
        help: ArgumentHelp(
            "Record every case's answers in DIR for `iapcheck diff --against DIR` (a second pass over the cases, without the oracle; a build's answers where the oracle leaves them open are recorded too). See docs/diff.md.",
            valueName: "DIR"))
    var record: String?

    /// `--shrink-seconds` of a program or a backend when none is given.
    static let outOfProcessShrinkSeconds = 60.0

    func run() throws {
        let spec = try parseValidator(validator)
        let slice = try parsedShard()
        var (catalog, policy) = try options.loadOrExit()
        // A mutant whose mistake shows only under a policy (a declared size limit) is checked under it.
        if options.policy == nil, let name = spec.mutantName, let p = Mutants.named(name)?.policy {
            policy = p
        }
        policy = try adoptingMeaning(policy, spec)
        for file in [json, writeBaseline, junit].compactMap({ $0 }) { try requireWritable(file: file) }
        let accepted = try acceptedDivergences(option: baseline, validator: spec)
        let faultProfile = try parseFaults(faults)
        if !noDoctor && spec.isOutOfProcess { try runPreflight(catalog: catalog, policy: policy) }
        // Before anything starts: a target's maxConcurrency bounds --jobs.
        let jobCount = try resolveJobs(jobs, for: validator, faults: faultProfile)
        let (checker, progress) = try makeChecker(spec, catalog, policy, faultProfile, jobCount: jobCount, shard: slice)
        var run = CheckRun(selection: selection(faultProfile), checker: checker)
        run.explain = explain
        let newFolderNote: String?
        (run.corpus, run.sharedCorpus, newFolderNote) = corpusDirectories(spec, bundleId: catalog.bundleId)
        run.savesCounterexamples = !spec.isMutant
        run.willRunCases = { progress.restart() }
        if let accepted { (run.baseline, run.baselineFile) = accepted }
        run.writesBaseline = writeBaseline != nil
        let result: CheckRunReport
        do {
            result = try run.run { print($0) }
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
        try writeOutputs(result, previous: accepted)
        // Said once, when the run made the folder (a counterexample was saved), not on every passing run.
        if let newFolderNote, let dir = run.corpus, FileManager.default.fileExists(atPath: dir) {
            try? FileHandle.standardError.write(contentsOf: Data(newFolderNote.utf8))
        }
        if let record { try recordAnswers(checker, into: record) }
        try exit(result, checker.validator)
    }

    /// `--shard` read, and the counts checked against it.
    func parsedShard() throws -> Shard? {
        let slice = try shard.map { text throws -> Shard in
            guard let s = Shard(parsing: text) else {
                throw ValidationError("--shard \"\(text)\" is not INDEX/COUNT with 0 ≤ INDEX < COUNT, e.g. 0/4")
            }
            return s
        }
        if slice != nil && caseIndex != nil {
            throw ValidationError("--shard and --case do not go together: --case already names one case")
        }
        guard cases >= 0 else { throw ValidationError("--cases must be 0 or more, not \(cases)") }
        if let caseIndex, caseIndex < 0 || caseIndex == Int.max {
            throw ValidationError("--case must be 0 or more and below \(Int.max), not \(caseIndex)")
        }
        return slice
    }

    /// The selection as given: what every replay and rerun command repeats.
    func selection(_ faultProfile: FaultProfile) -> RunSelection {
        var s = options.selection(validator: validator)
        s.knownDivergences = knownDivergences
        s.faults = faultProfile.isEmpty ? nil : faults
        s.properties = property
        (s.parallel, s.unsigned, s.noCorpus) = (parallel, unsigned, noCorpus)
        s.timeout = timeout == Self.defaultTimeout ? nil : timeout
        return s
    }

    /// Where counterexamples are replayed from and saved to (none with `--no-corpus`), and the note to print if the
    /// run makes the folder (``corpusDirectory(_:bundleId:)``).
    func corpusDirectories(_ spec: ValidatorSpec, bundleId: String) -> (String?, [String], String?) {
        if noCorpus { return (nil, [], nil) }
        if let corpus { return (corpus, [], nil) }
        let (dir, note) = Self.corpusDirectory(spec, bundleId: bundleId)
        return (dir, dir != "Corpus" ? ["Corpus"] : [], note)
    }

    /// The properties `--property` names, less the declared divergences.
    func properties(leavingOut known: [PropertyName]) throws -> [PropertyName] {
        var props: [PropertyName] = []
        for p in property {
            guard let n = PropertyName(rawValue: p) else {
                throw ValidationError(
                    "unknown property \"\(p)\"; one of \(PropertyName.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            props.append(n)
        }
        if !known.isEmpty {
            props = (props.isEmpty ? PropertyName.standard : props).filter { !known.contains($0) }
            if props.isEmpty {
                throw ValidationError("--known-divergences leaves no property to check")
            }
        }
        return props
    }

    /// Why --parallel was refused, for check and certify.
    static let parallelNeeds =
        "--parallel (the parallel-delivery property: half of a history from two concurrent clients) needs a validator that takes two calls at once: an http: backend, the built-in reference (it then runs synchronized) or mutant:check-then-act-credit; the other mutants and variants answer one call at a time, and so does an exec: program, which has one stdin"

    /// The checker of this run: its validator (one per job), its options, and its progress and shrink lines.
    func makeChecker(
        _ spec: ValidatorSpec, _ catalog: Catalog, _ policy: Policy, _ faultProfile: FaultProfile, jobCount: Int,
        shard slice: Shard?
    ) throws -> (Checker, Progress) {
        // One per job: the built-in reference runs synchronized when checked with concurrent clients.
        let workers = workerFactory(validator, timeout: timeout, faults: faultProfile, jobs: jobCount)
        let synchronized = parallel && spec == .reference
        let v =
            synchronized
            ? SynchronizedReferenceValidator() : try makeValidator(validator, timeout: timeout, faults: faultProfile)
        let known = try declaredDivergences(knownDivergences)
        let props = try properties(leavingOut: known.properties)
        if v.isolation == .namespace && options.catalog == nil {
            throw fail(
                "error: \(validator) has no reset route, so the backend keeps its own products: name them with --catalog (and --bundle-id, --entitlements), as the backend is configured (docs/http-target.md#backends-without-a-reset-route)",
                code: Exit.usage)
        }
        if let slice { IDNamespace.configure(shard: slice.index, of: slice.count) }
        var opts = CheckOptions()
        opts.knownDivergences = known.classes
        opts.knownDivergentProperties = Set(known.properties)
        (opts.cases, opts.seed, opts.onlyCase, opts.shard) = (cases, options.seed, caseIndex, slice)
        (opts.catalog, opts.drawsCatalogs, opts.maxSize, opts.policy) = (
            catalog, options.drawsCatalogs, options.maxSize, policy
        )
        if !props.isEmpty { opts.properties = props }
        if parallel {
            guard v is any ConcurrentValidator || v is any RaceableValidator else {
                throw ValidationError(Self.parallelNeeds)
            }
            if props.isEmpty { opts.properties = PropertyName.standard + [.parallelDelivery] }
        }
        if let problem = faultProfile.problem(with: v) { throw ValidationError(problem) }
        if faultProfile.kill && props.isEmpty { opts.properties = PropertyName.standard + [.durableAck] }
        if let keepGoing {
            guard keepGoing >= 1 else { throw ValidationError("--keep-going=\(keepGoing): N must be at least 1") }
            opts.keepGoing = keepGoing
        } else if writeBaseline != nil {
            // A baseline names every signature the cases show: up to 20 distinct failures are shrunk.
            opts.keepGoing = KeepGoing.baselineLimit
        }
        opts.signed = !unsigned
        opts.shrinkBudget.maxAttempts = shrinkAttempts
        // A program or a backend answers in milliseconds, not microseconds: its shrinking spends a time budget.
        opts.outOfProcess = spec.isOutOfProcess
        opts.shrinkBudget.maxSeconds = shrinkSeconds ?? (opts.outOfProcess ? Self.outOfProcessShrinkSeconds : .infinity)
        opts.shouldStop = { Interrupt.requested }
        Interrupt.install()
        opts.jobs = jobCount
        var checker = Checker(options: opts, validator: v)
        checker.makeWorker = { () throws -> any Validator in
            synchronized ? SynchronizedReferenceValidator() : try workers()
        }
        let progress = showProgress(of: &checker)
        return (checker, progress)
    }
    /// A user's program or backend keeps its counterexamples apart from iapcheck's own regression corpus; a backend's
    /// folder is named for the backend, not its target file (docs/corpus.md#where-counterexamples-go). A new folder
    /// beside others holding cases this backend found (under its name or its address) is said aloud (the note
    /// returned): they are this backend's under an older folder name.
    static func corpusDirectory(_ spec: ValidatorSpec, bundleId: String) -> (String, note: String?) {
        guard let file = spec.targetFile, let t = try? HTTPValidator.Target.load(path: file) else {
            return (Corpus.directory(forValidator: spec), nil)
        }
        let dir = Corpus.directory(forBackend: t.name, bundleId: bundleId, host: t.host, port: t.port)
        if !FileManager.default.fileExists(atPath: dir) {
            // Cases another backend found (another name or address) stay where they are.
            let others = Corpus.otherFolders(
                ofApp: bundleId, foundWith: [t.displayName, "http:\(t.host):\(t.port)", "http:\(file)"], besides: dir)
            if !others.isEmpty {
                // One note, however many folders: each with its count and the move that adopts it.
                let each = others.map { other, n in
                    "\(other) holds \(n) saved counterexample\(n == 1 ? "" : "s") (mv \(other)/*.json \(dir)/)"
                }
                return (
                    dir,
                    "check: a new corpus folder for this backend, \(dir); other folders hold counterexamples of the same app (\(bundleId)) found on this backend's name or address, to move here if they are this backend's: \(each.joined(separator: "; "))\n"
                )
            }
        }
        return (dir, nil)
    }

    /// The doctor's checks on a validator of their own (a program is started for them and stopped after): a
    /// configuration problem stops the run with the checklist and exit code 2; wrong answers are left to the cases.
    func runPreflight(catalog: Catalog, policy: Policy) throws {
        let v = try makeValidator(validator, timeout: timeout)
        defer { v.shutdown() }
        if v.isolation == .namespace && options.catalog == nil { return }  // refused below with its message
        let report = preflight(validator, v, catalog: catalog, policy: policy)
        if !report.usable {
            print("iapcheck doctor \(validator)\n\(report.text)")
            throw fail("error: \(validator) cannot be checked as configured: fix the ✗ lines above", code: Exit.usage)
        }
        if !quiet {
            let slow = report.items.first { $0.name == Doctor.speedItem }
            let findings = report.items.filter { $0.status == .finding && $0.name != Doctor.speedItem }
            let speed = slow.map { "doctor: \($0.detail)\n  fix: \($0.fix ?? "")\n" } ?? ""
            try? FileHandle.standardError.write(
                contentsOf:
                    Data(
                        ("doctor: \(report.items.filter { $0.status == .ok }.count) checks passed\(Self.findingsClause(findings.map(\.name)))\n"
                            + speed).utf8))
        }
    }

    /// `; 1 finding (forgery alg-none): iapcheck doctor explains it`, or nothing.
    static func findingsClause(_ names: [String]) -> String {
        guard !names.isEmpty else { return "" }
        let n = names.count
        return
            "; \(n) finding\(n == 1 ? "" : "s") (\(names.joined(separator: ", "))): iapcheck doctor explains \(n == 1 ? "it" : "them")"
    }
}
