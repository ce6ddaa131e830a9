import ArgumentParser
import Foundation
import IAPConformance
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare a build's answers with an older build's, case by case, with no oracle.",
        discussion: """
            The same cases as check runs (same seed, cases, catalog and policy) go to this build and are compared with \
            the old build's answers: a recording made by `check --record DIR` (--against DIR) or the old build itself \
            run side by side (--against-validator SPEC). Every changed verdict or answer field is reported, including \
            fields the oracle leaves open and those a policy allows either way, grouped by signature, each with its \
            history and replay command; with --against-validator each change is shrunk to a small history on which the \
            two builds still differ. Changes a team accepts go into an allow file (--allow; --write-allow writes one). \
            See docs/diff.md. Exit codes: 0 no change (or only allowed ones); 1 a change; 2 a usage or file error.
            """)

    @Option(
        help:
            "This build: reference, variant:NAME, mutant:NAME, exec:'COMMAND' or http:TARGET.json (as check takes it).")
    var validator = "reference"

    @Option(help: ArgumentHelp("The old build's answers, recorded by `check --record DIR`.", valueName: "DIR"))
    var against: String?

    @Option(
        help: ArgumentHelp(
            "The old build itself, run on the same cases side by side; each change is shrunk.", valueName: "SPEC"))
    var againstValidator: String?

    @Option(help: "Cases to compare (default: as many as the recording holds, else 500).")
    var cases: Int?

    @Option(name: .customLong("case"), help: "Compare only this case index.")
    var caseIndex: Int?

    @Option(
        help: ArgumentHelp("Changes accepted, with their reasons (a file --write-allow writes).", valueName: "FILE"))
    var allow: String?

    @Option(
        help: ArgumentHelp(
            "Write the signatures of this run's changes to FILE, each with an empty reason to fill in.",
            valueName: "FILE"))
    var writeAllow: String?

    @Option(help: "Seconds per request before a validator is reported as hanging.")
    var timeout: Double = 5

    @Option(
        help:
            "Wall-clock cap on shrinking one change with --against-validator, in seconds (default 60 for exec: and http: validators, none in process); the shrunk case may then depend on the machine's speed."
    )
    var shrinkSeconds: Double?

    @Flag(help: "No progress lines on standard error.")
    var quiet = false

    @OptionGroup var options: CaseOptions

    func validate() throws {
        guard (against == nil) != (againstValidator == nil) else {
            throw ValidationError(
                "give the old build as one of --against DIR (a recording) or --against-validator SPEC")
        }
        if let cases, cases < 1 { throw ValidationError("--cases must be at least 1, not \(cases)") }
    }

    func run() throws {
        var (catalog, policy) = try options.loadOrExit()
        policy = try adoptingMeaning(policy, try parseValidator(validator))
        if let writeAllow { try requireWritable(file: writeAllow) }
        let allowed = try allow.map { path throws -> Baseline in
            do { return try Baseline.load(path: path) } catch { throw fail("error: \(error)", code: Exit.usage) }
        }
        let recording = try against.map { dir throws -> Recording in
            do { return try Recording.load(directory: dir) } catch { throw fail("error: \(error)", code: Exit.usage) }
        }
        let new = try makeValidator(validator, timeout: timeout)
        defer { new.shutdown() }
        let old: DiffRun.Old
        if let recording {
            old = .recording(recording)
        } else {
            old = .validator(try makeValidator(againstValidator ?? "", timeout: timeout))
        }
        defer { if case .validator(let v) = old { v.shutdown() } }
        let count = cases ?? recording?.header.identity.totalCases ?? 500
        var checker = Checker(options: diffOptions(catalog, policy, cases: count, spec: validator), validator: new)
        try? new.prepare()
        if let recording { try requireSameRun(recording, DiffRun.identity(of: checker)) }
        let progress = Progress("diff \(new.name)", quiet: quiet)
        checker.progress = { progress.update($0, $1) }
        var run = DiffRun(checker: checker, old: old)
        run.allow = allowed
        let result: DiffRun.Result
        do { result = try run.run(progress: { progress.update($0, $1) }) } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
        let oldName = against.map { "the recording in \($0)" } ?? againstValidator ?? ""
        for line in result.lines(against: oldName, seed: options.seed, replay: replay) { print(line) }
        if let writeAllow { try writeAllowFile(result, to: writeAllow) }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }

    /// The run's options: the cases `check` would run with the same seed, catalog, policy and size.
    func diffOptions(_ catalog: Catalog, _ policy: Policy, cases: Int, spec: String) -> CheckOptions {
        var o = CheckOptions()
        (o.cases, o.seed, o.onlyCase) = (cases, options.seed, caseIndex)
        (o.catalog, o.drawsCatalogs, o.maxSize, o.policy) = (catalog, options.drawsCatalogs, options.maxSize, policy)
        o.outOfProcess = (try? parseValidator(spec))?.isOutOfProcess ?? false
        o.shrinkBudget.maxSeconds = shrinkSeconds ?? (o.outOfProcess ? Check.outOfProcessShrinkSeconds : .infinity)
        o.shouldStop = { Interrupt.requested }
        Interrupt.install()
        return o
    }

    /// A recording of other cases (another seed, catalog, policy…) cannot be compared: said with the option to change.
    func requireSameRun(_ recording: Recording, _ mine: RunIdentity) throws {
        var identity = recording.header.identity
        identity.profile = nil
        guard let (what, recorded, here) = identity.firstDifference(from: mine) else { return }
        throw fail(
            "error: \(against ?? "") was recorded with \(what) \(recorded), this run has \(here): give the options the recording was made with (its first line says them), or record again",
            code: Exit.usage)
    }

    /// The command that compares case `i` alone, as this run did, writing nothing: a replay run with the
    /// `--write-allow` of the run that printed it wrote over the file whose reasons a person had filled in.
    func replay(_ i: Int) -> String {
        var args = CommandLine.arguments.dropFirst().map(Shell.quote)
        for option in ["--case", "--write-allow"] {
            if let k = args.firstIndex(of: option), k + 1 < args.count { args.removeSubrange(k...(k + 1)) }
            args.removeAll { $0.hasPrefix(option + "=") }
        }
        return (["iapcheck"] + args + ["--case", "\(i)"]).joined(separator: " ")
    }

    /// Writes the changes met as an allow file, keeping the reason of each one the file at `path` already gives.
    func writeAllowFile(_ result: DiffRun.Result, to path: String) throws {
        var file = Baseline(
            entries: result.changes.map {
                Baseline.Entry(signature: $0.signature, reason: "", replay: replay($0.caseIndex))
            })
        let (kept, dropped) = file.keepingReasons(of: Baseline.loadAsIs(path: path))
        try file.write(to: path)
        let n = file.entries.count
        print(
            "wrote \(n) change \(n == 1 ? "signature" : "signatures") to \(path)"
                + (kept > 0 ? " (\(kept) with the reason the file gave)" : "")
                + ": fill in each reason, then pass it with --allow")
        for entry in dropped {
            print("  left out, as this run did not meet it: \(entry.signature) (its reason was: \(entry.reason))")
        }
    }
}
