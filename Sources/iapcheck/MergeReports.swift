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
        let found = try collect()
        for s in found.skipped { print("skipped: \(s)") }
        if let mutants = found.mutants.first {
            guard let check = found.checks.first else { return try mergeMutants(found.mutants) }
            throw fail(
                "error: \(check.path) is a check summary and \(mutants.path) a mutants summary: merge one run at a time",
                code: Exit.usage)
        }
        guard let first = found.checks.first else {
            throw fail("error: no check summaries found in \(paths.joined(separator: " "))", code: Exit.usage)
        }
        let result: ShardMerge.Result
        do { result = try ShardMerge.merge(found.checks) } catch { throw fail("error: \(error)", code: Exit.usage) }
        let s = result.summary
        for line in result.lines(given: found.checks.count, of: first.summary.run?.shard.count ?? 1) { print(line) }
        if let json { try writeResults("the merged JSON summary", to: json) { try JSONFormat.write(s, to: json) } }
        if let junit {
            try writeResults("the merged JUnit report", to: junit) {
                try Reports.junit(s).write(toFile: junit, atomically: true, encoding: .utf8)
            }
        }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }

    /// The summaries the paths name: of checks, of mutants runs, and the files skipped (with why). A file named
    /// twice (as itself and inside its directory, or through a link) is one shard, not two.
    func collect() throws -> (checks: [ShardMerge.Input], mutants: [MutantsMerge.Input], skipped: [String]) {
        var found: (checks: [ShardMerge.Input], mutants: [MutantsMerge.Input], skipped: [String]) = ([], [], [])
        var taken: [String: String] = [:]
        // The shards' saved counterexamples travel in the same artifacts (Examples/ci): one line for them all.
        var counterexamples = 0
        func isNew(_ file: String) -> Bool {
            let canonical = URL(fileURLWithPath: file).standardizedFileURL.resolvingSymlinksInPath().path
            if let first = taken[canonical] {
                found.skipped.append("\(file) (the same file as \(first))")
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
            for file in isDirectory.boolValue ? Self.jsonFiles(under: path) : [path] where isNew(file) {
                switch Self.load(file) {
                case .success(.check(let s)) where s.run == nil && isDirectory.boolValue:
                    found.skipped.append("\(file) (a single-case run, not a shard)")
                case .success(.check(let s)): found.checks.append(ShardMerge.Input(path: file, summary: s))
                case .success(.mutants(let s)) where s.run == nil && isDirectory.boolValue:
                    found.skipped.append("\(file) (a mutants run without --shard)")
                case .success(.mutants(let s)): found.mutants.append(MutantsMerge.Input(path: file, summary: s))
                case .failure where isDirectory.boolValue && Self.isCounterexample(file): counterexamples += 1
                case .failure(let why) where isDirectory.boolValue: found.skipped.append("\(file) (\(why))")
                case .failure(let why):
                    throw fail("error: \(file) is not a check summary: \(why)", code: Exit.usage)
                }
            }
        }
        if counterexamples > 0 {
            found.skipped.append(
                "\(counterexamples) saved counterexample\(counterexamples == 1 ? "" : "s") (corpus files)")
        }
        return found
    }

    /// A saved counterexample (docs/corpus.md), by its schema.
    static func isCounterexample(_ file: String) -> Bool {
        guard let data = try? StrictJSON.readFile(file, maxBytes: StrictJSON.ownOutput),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return false }
        return object["schema"] as? String == CorpusCase.schema
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
        do { data = try StrictJSON.readFile(path, maxBytes: StrictJSON.ownOutput) } catch {
            return .failure(LoadError(description: error.problems.map(\.message).joined(separator: "; ")))
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
        for line in result.lines(given: inputs.count, of: inputs[0].summary.run?.shard.count ?? 1) { print(line) }
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
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }

    struct LoadError: Error, CustomStringConvertible { var description: String }
}
