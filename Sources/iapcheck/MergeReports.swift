import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPValidatorAPI

/// `iapcheck merge-reports`: the shards of one `check --shard i/N` run, joined into one verdict.
struct MergeReports: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge-reports",
        abstract: "Join the --json summaries of the shards of one sharded check (or mutants run) into one verdict.",
        discussion: """
            Give the summaries, or directories holding them (searched recursively for *.json; files there that are \
            not check summaries are skipped and listed). The shards must come from one run: the same iapcheck \
            version, validator, seed, --cases, catalog, policy, properties, --faults, --no-corpus, shrink budget and \
            shard count, each shard once; otherwise nothing is merged and the command names the two files and what differs.

            The merged verdict is what one unsharded run would report: cases and counts up to and including the \
            lowest failing case (shards are contiguous slices, so that is the first failure of the first failing \
            shard), that failure's shrunk timeline and replay command, the corpus results once.

            The same for `mutants --shard i/N`: the shards' tables joined in list order, the same mutant list, seed, \
            cases per mutant, catalog and policy required.

            Exit codes: 0 every shard present and passed (every mutant killed); 1 a discrepancy; 2 usage error or summaries that are \
            not shards of one run; 3 the validator failed as a program; 5 incomplete (a shard missing or \
            interrupted, and no failure found in the shards present).
            """)

    @Argument(help: "Summary files (from check --json) or directories of them.")
    var paths: [String]

    @Option(help: "Write the merged JSON summary here.")
    var json: String?

    @Option(help: "Write the merged JUnit XML here.")
    var junit: String?

    func run() throws {
        if let json { try requireWritable(file: json) }
        if let junit { try requireWritable(file: junit) }
        var inputs: [ShardMerge.Input] = []
        var mutantInputs: [MutantsMerge.Input] = []
        var skipped: [String] = []
        // One file named twice (as itself and inside its directory, or through a link) is one shard, not two.
        var taken: [String: String] = [:]
        func isNew(_ file: String) -> Bool {
            let canonical = URL(fileURLWithPath: file).standardizedFileURL.resolvingSymlinksInPath().path
            if let first = taken[canonical] {
                skipped.append("\(file) (the same file as \(first))")
                return false
            }
            taken[canonical] = file
            return true
        }
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw fail("error: \(path): no such file or directory", code: Exit.usage)
            }
            if isDirectory.boolValue {
                for file in Self.jsonFiles(under: path) where isNew(file) {
                    switch Self.load(file) {
                    case .success(.check(let s)) where s.run == nil:
                        skipped.append("\(file) (a single-case run, not a shard)")
                    case .success(.check(let s)): inputs.append(ShardMerge.Input(path: file, summary: s))
                    case .success(.mutants(let s)) where s.run == nil:
                        skipped.append("\(file) (a mutants run without --shard)")
                    case .success(.mutants(let s)): mutantInputs.append(MutantsMerge.Input(path: file, summary: s))
                    case .failure(let why): skipped.append("\(file) (\(why))")
                    }
                }
            } else if isNew(path) {
                switch Self.load(path) {
                case .success(.check(let s)): inputs.append(ShardMerge.Input(path: path, summary: s))
                case .success(.mutants(let s)): mutantInputs.append(MutantsMerge.Input(path: path, summary: s))
                case .failure(let why): throw fail("error: \(path) is not a check summary: \(why)", code: Exit.usage)
                }
            }
        }
        for s in skipped { print("skipped: \(s)") }
        if !mutantInputs.isEmpty {
            guard inputs.isEmpty else {
                throw fail(
                    "error: \(inputs[0].path) is a check summary and \(mutantInputs[0].path) a mutants summary: merge one run at a time",
                    code: Exit.usage)
            }
            return try mergeMutants(mutantInputs)
        }
        guard !inputs.isEmpty else {
            throw fail("error: no check summaries found in \(paths.joined(separator: " "))", code: Exit.usage)
        }
        let result: ShardMerge.Result
        do { result = try ShardMerge.merge(inputs) } catch { throw fail("error: \(error)", code: Exit.usage) }

        let s = result.summary
        let n = inputs[0].summary.run?.shard.count ?? 1
        print(
            "merged \(inputs.count) of \(n) shards of \(s.validator) (seed \(s.seed), \(s.run?.totalCases ?? s.cases) cases)"
        )
        // As the shards' `check` printed them (summaries of an older iapcheck lack the headline: a short one).
        for d in s.discrepancies {
            if let f = d.flaky { print(TextReport.flaky(f)) }
            print(
                TextReport.discrepancy(
                    d,
                    headline: d.headline
                        ?? "FAIL \(d.property)"
                        + (d.caseIndex.map { " (case \($0))" } ?? " (corpus \(d.corpusFile ?? "?"))")))
            if let r = d.rerun { print("  rerun:    \(r)") }
        }
        for f in s.validatorFailures {
            if let flaky = f.flaky { print(TextReport.flaky(flaky)) }
            print(TextReport.validatorFailure(f))
        }
        print(
            "\(s.validator): \(s.passed)/\(s.cases) cases passed, \(s.questions) questions, corpus \(s.corpus.replayed) replayed"
        )
        if s.discrepancies.isEmpty && s.validatorFailures.isEmpty {
            print(TextReport.forgeryLine(s.forgeries))
            let missing = s.coverage.missingFamilies
            if result.complete && !missing.isEmpty { print("not exercised: \(missing.joined(separator: ", "))") }
        }
        if !result.missing.isEmpty {
            print("MISSING shards: \(result.missing.map(\.description).joined(separator: ", "))")
        }
        if !result.interrupted.isEmpty { print("INTERRUPTED shards: \(result.interrupted.joined(separator: ", "))") }

        if let json { try writeResults("the merged JSON summary", to: json) { try JSONFormat.write(s, to: json) } }
        if let junit {
            try writeResults("the merged JUnit report", to: junit) {
                try Reports.junit(s).write(toFile: junit, atomically: true, encoding: .utf8)
            }
        }
        if !s.validatorFailures.isEmpty { throw ExitCode(Exit.validatorFailure) }
        if !s.discrepancies.isEmpty { throw ExitCode(Exit.discrepancy) }
        if !result.complete { throw ExitCode(Exit.incomplete) }
    }

    static func jsonFiles(under dir: String) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: dir) else { return [] }
        return e.compactMap { $0 as? String }.filter { $0.hasSuffix(".json") }.sorted()
            .map { (dir as NSString).appendingPathComponent($0) }
    }

    /// A summary file: of a check, or of a mutants run (told apart by its `casesPerMutant`).
    enum Loaded {
        case check(Reports.CheckSummary)
        case mutants(Reports.MutantsSummary)
    }

    static func load(_ path: String) -> Result<Loaded, LoadError> {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            return .failure(LoadError(description: "cannot read it: \(error.localizedDescription)"))
        }
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        do {
            if object?["casesPerMutant"] != nil {
                return .success(.mutants(try JSONDecoder().decode(Reports.MutantsSummary.self, from: data)))
            }
            return .success(.check(try JSONDecoder().decode(Reports.CheckSummary.self, from: data)))
        } catch {
            return .failure(LoadError(description: ValidatorFailure.decodingProblem(error, in: data)))
        }
    }

    /// The shards of one `mutants --shard` run: the table one run would have printed, in list order.
    func mergeMutants(_ inputs: [MutantsMerge.Input]) throws {
        let result: MutantsMerge.Result
        do { result = try MutantsMerge.merge(inputs) } catch { throw fail("error: \(error)", code: Exit.usage) }
        let s = result.summary
        let n = inputs[0].summary.run?.shard.count ?? 1
        print("merged \(inputs.count) of \(n) shards of mutants (seed \(s.seed), \(s.casesPerMutant) cases per mutant)")
        print(TextReport.mutantsHeader)
        for row in s.mutants { print(TextReport.mutantRow(row)) }
        for name in s.skipped ?? [] { print(TextReport.mutantLine(name, "skipped: the example backend was not built")) }
        for name in s.setupErrors ?? [] { print(TextReport.mutantLine(name, "ERROR (see its shard's output)")) }
        print(
            "killed \(s.killed)/\(s.total); median shrunk counterexample \(s.medianShrunkEvents.map { String(format: "%.1f", $0) } ?? "-") actions"
        )
        if !result.missing.isEmpty {
            print("MISSING shards: \(result.missing.map(\.description).joined(separator: ", "))")
        }
        if let json {
            // A table with shards missing would read as the whole run's (and could not be merged again): none.
            if result.complete {
                try writeResults("the merged JSON summary", to: json) { try JSONFormat.write(s, to: json) }
            } else {
                print(
                    "note: no merged JSON summary written to \(json) while shards are missing; merge again with all of them"
                )
            }
        }
        if junit != nil { print("note: --junit is written for check summaries only") }
        if s.killed < s.total { throw ExitCode(Exit.discrepancy) }
        if !(s.setupErrors ?? []).isEmpty { throw ExitCode(Exit.validatorFailure) }
        if !result.complete { throw ExitCode(Exit.incomplete) }
    }

    struct LoadError: Error, CustomStringConvertible { var description: String }
}
