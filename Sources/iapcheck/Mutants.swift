import ArgumentParser
import Foundation
import IAPConformance
import IAPModel
import IAPMutants

struct Mutants: ParsableCommand {
    static let configuration = CommandConfiguration(
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
            "Shrinking attempts per failure (deterministic: the same seed gives the same counterexample on any machine)."
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

    func run() throws {
        if list {
            func row(_ name: String, _ pitfall: String, _ description: String) -> String {
                name.padding(toLength: 36, withPad: " ", startingAt: 0) + " "
                    + pitfall.padding(toLength: 4, withPad: " ", startingAt: 0) + " " + description
            }
            for m in IAPMutants.Mutants.all { print(row(m.name, m.pitfall, m.description)) }
            for m in BackendMutant.all { print(row(m.name, m.pitfall, m.description)) }
            print("J numbers: the real-world mistakes, with their public sources, in docs/mistakes.md.")
            return
        }
        guard cases >= 1 else { throw ValidationError("--cases must be at least 1, not \(cases)") }
        let (catalog, policy) = try options.loadOrExit()
        var entries = IAPMutants.Mutants.all
        var backendEntries = BackendMutant.all
        if !only.isEmpty {
            for n in only where IAPMutants.Mutants.named(n) == nil && BackendMutant.named(n) == nil {
                throw ValidationError("no mutant named \"\(n)\"; `iapcheck mutants --list` lists them")
            }
            entries = entries.filter { only.contains($0.name) }
            backendEntries = backendEntries.filter { only.contains($0.name) }
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
        // Each mutant is one deterministic run on one thread; several run at once and rows print in list order.
        let results = MutantResults(count: entries.count)
        let workers = max(1, min(try resolveJobs(jobs, for: "reference"), entries.count))
        let list = entries
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let t = Thread { [opts] in
                defer { group.leave() }
                while let k = results.take() {
                    let v = list[k].make()
                    results.put(k, (Checker(options: opts, validator: v).run(), v.name))
                }
            }
            t.stackSize = 8 << 20
            t.start()
        }
        var rows: [Reports.MutantSummary] = []
        print("mutant                               killed  cases  shrunk  property")
        for (k, m) in entries.enumerated() {
            let (report, foundWith) = results.wait(k)
            let f = report.failure
            rows.append(Self.row(m.name, m.description, m.pitfall, report))
            if let dir = saveCorpus, let f, let d = f.discrepancy {
                try IAPConformance.Corpus.save(
                    CorpusCase(
                        foundWith: foundWith, seed: options.seed, caseIndex: f.caseIndex, failure: d, testCase: f.shrunk
                    ), in: dir)
            }
        }
        group.wait()
        var setupFailures = 0
        for m in backendEntries {
            guard let backend else {
                print(
                    "\(m.name.padding(toLength: 36, withPad: " ", startingAt: 0)) skipped: the example backend is not built (swift build --product iapcheck-example-backend)"
                )
                continue
            }
            let report: CheckReport
            do { report = try m.run(opts, backend: backend) } catch {
                setupFailures += 1
                print("\(m.name.padding(toLength: 36, withPad: " ", startingAt: 0)) ERROR  \(error)")
                continue
            }
            let f = report.failure
            rows.append(Self.row(m.name, m.description, m.pitfall, report))
            // How it was caught: the backend's counterexample needs the backend, so it is not saved to a corpus.
            if let vf = f?.validatorFailure { print("    \(String(vf.description.prefix(300)))") }
            if let d = f?.discrepancy { print("    \(d.differences.first ?? d.observed)") }
        }
        let sizes = rows.compactMap(\.shrunkEvents).sorted()
        let median: Double? =
            sizes.isEmpty
            ? nil
            : sizes.count % 2 == 1
                ? Double(sizes[sizes.count / 2]) : Double(sizes[sizes.count / 2 - 1] + sizes[sizes.count / 2]) / 2
        let killed = rows.filter(\.killed).count
        print(
            "killed \(killed)/\(rows.count); median shrunk counterexample \(median.map { String(format: "%.1f", $0) } ?? "-") actions"
        )
        if let json {
            try JSONFormat.write(
                Reports.MutantsSummary(
                    seed: options.seed, casesPerMutant: cases, total: rows.count, killed: killed,
                    medianShrunkEvents: median, mutants: rows), to: json)
        }
        if killed < rows.count { throw ExitCode(Exit.discrepancy) }
        if setupFailures > 0 { throw ExitCode(Exit.validatorFailure) }
    }
}

extension Mutants {
    /// One mutant's row of the table, printed as it is made.
    static func row(_ name: String, _ description: String, _ pitfall: String, _ report: CheckReport)
        -> Reports.MutantSummary
    {
        let f = report.failure
        let row = Reports.MutantSummary(
            name: name, description: description, pitfall: pitfall, killed: f != nil,
            casesToKill: f.map { $0.caseIndex + 1 }, shrunkEvents: f?.shrunk.actionCount,
            property: f?.discrepancy?.property.rawValue ?? f?.validatorFailure.map { _ in "validator-health" },
            seconds: report.seconds)
        print(
            "\(name.padding(toLength: 36, withPad: " ", startingAt: 0)) \((row.killed ? "yes" : "NO").padding(toLength: 6, withPad: " ", startingAt: 0)) \(String(row.casesToKill.map(String.init) ?? "-").leftPad(5))  \(String(row.shrunkEvents.map(String.init) ?? "-").leftPad(6))  \(row.property ?? "-")"
        )
        return row
    }
}

/// Mutant runs handed out to worker threads and collected in list order.
///
/// Sendable: `next` and `results` change under `condition` only.
final class MutantResults: @unchecked Sendable {
    private let condition = NSCondition()
    private var next = 0
    private let count: Int
    private var results: [Int: (CheckReport, String)] = [:]
    init(count: Int) { self.count = count }

    func take() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard next < count else { return nil }
        next += 1
        return next - 1
    }

    func put(_ k: Int, _ r: (CheckReport, String)) {
        condition.lock()
        results[k] = r
        condition.broadcast()
        condition.unlock()
    }

    func wait(_ k: Int) -> (CheckReport, String) {
        condition.lock()
        defer { condition.unlock() }
        while results[k] == nil { condition.wait() }
        return results.removeValue(forKey: k)!
    }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
