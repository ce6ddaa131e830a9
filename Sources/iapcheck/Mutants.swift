import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPMutants
import IAPSimulator
import IAPSupport

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
            switch, from the `iapcheck-example-backend` executable built beside this one, on free loopback ports with \
            a mock App Store of its own, and checked over HTTP after the in-process ones. Without that executable they \
            are skipped, saying so.

            `--list` names each mutant's mistake by its number (J1, J2, …): docs/mistakes.md in the repository describes \
            each one, how it shows up in real validators, and its public sources.
            """)

    @OptionGroup var options: CaseOptions

    @Option(help: "Cases per mutant before it counts as surviving.")
    var cases = 2000

    @Option(help: "Run only this mutant (repeatable).")
    var only: [String] = []

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
        let (catalog, policy) = try options.loadOrExit()
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
        let allNames = entries.map(\.name) + backendEntries.map(\.name)
        var identity: MutantsRunIdentity?
        if let slice {
            var id = MutantsRunIdentity(
                seed: options.seed, casesPerMutant: cases, catalog: catalog, drawsCatalogs: options.drawsCatalogs,
                policy: policy, mutants: allNames, shard: slice)
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
                "error: \(backendEntries.map(\.name).joined(separator: ", ")) need the example backend: swift build --product iapcheck-example-backend",
                code: Exit.usage)
        }
        var opts = CheckOptions()
        opts.cases = cases
        opts.seed = options.seed
        opts.catalog = catalog
        opts.drawsCatalogs = options.drawsCatalogs
        opts.maxSize = options.maxSize
        opts.policy = policy
        opts.shrinkBudget.maxAttempts = shrinkAttempts
        opts.shrinkBudget.maxSeconds = shrinkSeconds ?? .infinity
        // Ctrl-C: the running checks stop after their current case; the rows printed so far stand, no summary is
        // written (a partial table would merge as a whole one), and the exit code is 130.
        opts.shouldStop = { Interrupt.requested }
        Interrupt.install()
        // Each mutant is one deterministic run on one thread; several run at once and rows print in list order.
        var run = MutantsRun(options: opts)
        run.jobs = try resolveJobs(jobs, for: "reference")
        var rows: [Reports.MutantSummary] = []
        let total = entries.count + backendEntries.count
        func interrupted() -> Error {
            print(
                "INTERRUPTED after \(rows.count) of \(total) mutants; no summary written; the same run again: iapcheck \(CommandLine.arguments.dropFirst().map(Shell.quote).joined(separator: " "))"
            )
            return ExitCode(130)
        }
        print(TextReport.mutantsHeader)
        do {
            try run.run(
                entries.map { m in
                    .init(name: m.name, description: m.description, pitfall: m.pitfall, make: m.make, policy: m.policy)
                }
            ) {
                row, report, foundWith in
                if report.interrupted && report.failure == nil { throw Stopped() }
                print(TextReport.mutantRow(row))
                rows.append(row)
                if let dir = saveCorpus, let f = report.failure, let d = f.discrepancy {
                    try Corpus.save(
                        CorpusCase(
                            foundWith: foundWith, seed: options.seed, caseIndex: f.caseIndex, failure: d,
                            testCase: f.shrunk
                        ), in: dir)
                }
            }
        } catch is Stopped {
            throw interrupted()
        }
        // A Ctrl-C that only cut a shrink short: the rows stand, the summary is not written.
        if Interrupt.requested { throw interrupted() }
        var setupFailures: [String] = [], skipped: [String] = []
        for m in backendEntries {
            if Interrupt.requested { throw interrupted() }
            guard let backend else {
                skipped.append(m.name)
                print(
                    TextReport.mutantLine(
                        m.name,
                        "skipped: the example backend is not built (swift build --product iapcheck-example-backend)"))
                continue
            }
            let report: CheckReport
            do { report = try m.run(opts, backend: backend) } catch {
                if Interrupt.requested { throw interrupted() }
                setupFailures.append(m.name)
                print(TextReport.mutantLine(m.name, "ERROR  \(error)"))
                continue
            }
            if report.interrupted && report.failure == nil { throw interrupted() }
            let f = report.failure
            let row = MutantsRun.summary(m.name, m.description, m.pitfall, report)
            print(TextReport.mutantRow(row))
            rows.append(row)
            // How it was caught: the backend's counterexample needs the backend, so it is not saved to a corpus.
            if let vf = f?.validatorFailure { print("    \(String(vf.description.prefix(300)))") }
            if let d = f?.discrepancy { print("    \(d.differences.first ?? d.observed)") }
        }
        if Interrupt.requested { throw interrupted() }
        let median = MutantsRun.medianShrunk(rows)
        let killed = rows.filter(\.killed).count
        print(
            "killed \(killed)/\(rows.count); median shrunk counterexample \(median.map { String(format: "%.1f", $0) } ?? "-") actions"
        )
        if let json {
            var summary = Reports.MutantsSummary(
                seed: options.seed, casesPerMutant: cases, total: rows.count, killed: killed,
                medianShrunkEvents: median, mutants: rows)
            summary.run = identity
            if !skipped.isEmpty { summary.skipped = skipped }
            if !setupFailures.isEmpty { summary.setupErrors = setupFailures }
            try JSONFormat.write(summary, to: json)
        }
        if killed < rows.count { throw ExitCode(Exit.discrepancy) }
        if !setupFailures.isEmpty { throw ExitCode(Exit.validatorFailure) }
    }
}

/// Thrown from a mutant's row when its check was stopped by Ctrl-C: the remaining mutants are not started.
private struct Stopped: Error {}
