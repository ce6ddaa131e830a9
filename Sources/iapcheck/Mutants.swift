import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPSimulator
import IAPSubprocess
import IAPSupport
import IAPValidatorAPI

struct MutantsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mutants",
        abstract:
            "Run every mutant (a reference validator with one real-world bug) and report which the harness catches.",
        discussion: """
            For each mutant: the number of generated cases until a discrepancy appeared, the size of the shrunk \
            counterexample (store actions), and the property that caught it. Exit code 1 if any mutant survives.

            The mutants whose names start with `backend-` are mistakes only a backend that calls Apple can make (the \
            verifyReceipt sandbox fallback, the webhook's answer time): they are the example backend started with one \
            switch, on free loopback ports with a mock App Store of its own, and checked over HTTP after the in-process \
            ones. The executable is the one IAPCHECK_EXAMPLE_BACKEND names, else the newest of \
            `iapcheck-example-backend` beside this one and the builds of Examples/ExampleBackend under the working \
            directory (`swift build --package-path Examples/ExampleBackend`; in .build or in its package's .build). \
            Without it they are skipped, saying so.

            `--list` names each mutant's mistake by its number (J1, J2, …): docs/mistakes.md in the repository describes \
            each one, how it shows up in real validators, and its public sources.
            """)

    @OptionGroup var options: CaseOptions

    @Option(help: "Cases per mutant before it counts as surviving.")
    var cases = 2000

    @Option(help: "Run only this mutant (repeatable).")
    var only: [String] = []

    @Option(
        help: ArgumentHelp(
            "Check each in-process mutant as a program instead (`exec:'iapcheck serve --validator mutant:NAME'`), to compare what the subprocess transport's shrinking reaches with the in-process table.",
            valueName: "exec"))
    var over: String?

    @Flag(help: "List the mutants and exit.")
    var list = false

    @Option(help: "Write a JSON summary here.")
    var json: String?

    @Option(help: "Save each mutant's shrunk counterexample to this directory.")
    var saveCorpus: String?

    @Option(
        help:
            "Shrinking attempts per failure (deterministic: the same seed gives the same counterexample on any machine). A failure that must shrink signed (one that depends on signatures, and every exec: or http: validator's) takes at most 400, since each attempt signs its artifacts; a validator failure (crash, garbage) at most 40, a timeout 8."
    )
    var shrinkAttempts: Int = 2000

    @Option(
        help:
            "Optional wall-clock cap on shrinking, in seconds, for very slow validators; with it the shrunk case may depend on the machine's speed."
    )
    var shrinkSeconds: Double?

    @Option(
        help: ArgumentHelp(
            "Mutants checked at once (default: the number of cores); the table and the counterexamples are the same for any N.",
            valueName: "N"))
    var jobs: Int?

    @Option(
        help: ArgumentHelp(
            "Run only slice INDEX of COUNT of the mutant list (0/4 … 3/4), to split the run over several machines; join the --json summaries with `iapcheck merge-reports`.",
            valueName: "INDEX/COUNT"))
    var shard: String?

    func run() throws {
        let slice = try shard.map { text throws -> Shard in
            guard let s = Shard(parsing: text) else {
                throw ValidationError("--shard \"\(text)\" is not INDEX/COUNT with 0 ≤ INDEX < COUNT, e.g. 0/4")
            }
            return s
        }
        if list {
            for m in Mutants.all { print(TextReport.mutantListing(m.name, m.pitfall, m.description)) }
            for m in BackendMutant.all { print(TextReport.mutantListing(m.name, m.pitfall, m.description)) }
            print("J numbers: the real-world mistakes, with their public sources, in docs/mistakes.md.")
            return
        }
        guard cases >= 1 else { throw ValidationError("--cases must be at least 1, not \(cases)") }
        if let over, over != "exec" { throw ValidationError("--over takes exec, not \"\(over)\"") }
        let (catalog, policy) = try options.loadOrExit()
        let (entries, own, identity) = try selected(catalog, policy, shard: slice)
        var run = MutantsRun(options: checkOptions(catalog, policy))
        run.jobs = try resolveJobs(jobs, for: "reference")
        let verdict = try run.table(entries, then: own, emit: { print($0) }) { report, foundWith in
            guard let dir = saveCorpus, let f = report.failure, let d = f.discrepancy else { return }
            try Corpus.save(
                CorpusCase(
                    foundWith: foundWith, seed: options.seed, caseIndex: f.caseIndex, failure: d, testCase: f.shrunk),
                in: dir)
        }
        if verdict.interrupted {
            print(
                "INTERRUPTED after \(verdict.rows.count) of \(entries.count + own.count) mutants; no summary written; the same run again: iapcheck \(CommandLine.arguments.dropFirst().map(Shell.quote).joined(separator: " "))"
            )
        }
        if let json, let summary = verdict.summary(seed: options.seed, casesPerMutant: cases, identity: identity) {
            try JSONFormat.write(summary, to: json)
        }
        if verdict.exitCode != 0 { throw ExitCode(verdict.exitCode) }
    }

    /// The mutants `--only` and `--shard` select (in-process ones first, then the backend's), and the identity of a
    /// shard's slice.
    func selected(_ catalog: Catalog, _ policy: Policy, shard slice: Shard?) throws -> (
        [MutantsRun.Entry], [MutantsRun.OwnCheck], MutantsRunIdentity?
    ) {
        var entries = Mutants.all
        var backendEntries = BackendMutant.all
        if !only.isEmpty {
            for n in only where Mutants.named(n) == nil && BackendMutant.named(n) == nil {
                throw ValidationError("no mutant named \"\(n)\"; `iapcheck mutants --list` lists them")
            }
            entries = entries.filter { only.contains($0.name) }
            backendEntries = backendEntries.filter { only.contains($0.name) }
        }
        // A shard runs a contiguous slice of the whole list (in-process mutants first, then the backend's).
        var identity: MutantsRunIdentity?
        if let slice {
            var id = MutantsRunIdentity(
                seed: options.seed, casesPerMutant: cases, catalog: catalog, drawsCatalogs: options.drawsCatalogs,
                policy: policy, mutants: entries.map(\.name) + backendEntries.map(\.name), shard: slice)
            if options.maxSize != HistoryGenerator.defaultMaxSize { id.maxSize = options.maxSize }
            if shrinkAttempts != 2000 { id.shrinkAttempts = shrinkAttempts }
            let mine = Set(id.slice)
            entries = entries.filter { mine.contains($0.name) }
            backendEntries = backendEntries.filter { mine.contains($0.name) }
            identity = id
        }
        let backend = BackendMutant.backendExecutable
        if backend == nil && !only.isEmpty && !backendEntries.isEmpty {
            throw fail(
                "error: \(backendEntries.map(\.name).joined(separator: ", ")): " + ExampleBackendBuild.notBuilt(),
                code: Exit.usage)
        }
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let inProcess = entries.map { m in
            // Over exec: this very binary serving the mutant, one process per mutant, as a team's program would run.
            let overExec: @Sendable () -> any Validator = {
                SubprocessValidator(command: "\(Shell.quote(me)) serve --validator mutant:\(m.name)", timeout: 10)
            }
            return MutantsRun.Entry(
                name: m.name, description: m.description, pitfall: m.pitfall, make: over == nil ? m.make : overExec,
                policy: m.policy)
        }
        let own = backendEntries.map { m -> MutantsRun.OwnCheck in
            var run: (@Sendable (CheckOptions) throws -> CheckReport)?
            if let backend { run = { o in try m.run(o, backend: backend) } }
            return MutantsRun.OwnCheck(
                name: m.name, description: m.description, pitfall: m.pitfall, run: run,
                unavailable: ExampleBackendBuild.notBuilt())
        }
        return (inProcess, own, identity)
    }

    /// Each mutant's check: the cases, seed, catalog and shrinking chosen; Ctrl-C stops the running checks after
    /// their current case.
    func checkOptions(_ catalog: Catalog, _ policy: Policy) -> CheckOptions {
        var opts = CheckOptions()
        (opts.cases, opts.seed, opts.catalog, opts.policy) = (cases, options.seed, catalog, policy)
        (opts.drawsCatalogs, opts.maxSize) = (options.drawsCatalogs, options.maxSize)
        opts.shrinkBudget.maxAttempts = shrinkAttempts
        opts.shrinkBudget.maxSeconds = shrinkSeconds ?? .infinity
        opts.shouldStop = { Interrupt.requested }
        Interrupt.install()
        return opts
    }
}
