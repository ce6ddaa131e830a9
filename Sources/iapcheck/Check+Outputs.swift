import ArgumentParser
import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSupport
import IAPValidatorAPI

/// What `check` shows while it runs and leaves behind: the progress line, the shrink notices, the report files, the
/// backend's output of a failed run, and the exit code.
extension Check {
    /// Progress lines (the property of the next case beside the count) and a line when a failure starts shrinking.
    func showProgress(of checker: inout Checker) -> Progress {
        let opts = checker.options
        let progress = Progress(
            "check \(checker.validator.name)\(opts.shard.map { " (\($0.describe(of: opts.cases)))" } ?? "")",
            quiet: quiet)
        let firstCase = opts.caseRange.lowerBound
        checker.progress = { [checker] done, total in
            // Properties take turns case by case: the one of the next case.
            if done < total { progress.detail = "next \(checker.property(ofCase: firstCase + done).rawValue)" }
            progress.update(done, total)
        }
        checker.willShrink = { [quiet] i, what, budget in
            (progress.pausedAt, progress.shrank) = (Date(), true)
            guard !quiet else { return }
            let line: String
            if let budget {
                let limit = budget.maxSeconds.isFinite ? " or \(Int(budget.maxSeconds)) s" : ""
                line = "check: case \(i) failed (\(what)); shrinking it, up to \(budget.maxAttempts) attempts\(limit)"
            } else {
                line = "check: case \(i) failed (\(what)); not shrinking it, as the run is stopping (Ctrl-C)"
            }
            try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
        }
        return progress
    }

    /// `--json`, `--write-baseline` and `--junit`.
    func writeOutputs(_ result: CheckRunReport, previous: (Baseline, file: String)?) throws {
        if let json {
            try writeResults("the JSON report", to: json) { try JSONFormat.write(result.summary, to: json) }
        }
        if let writeBaseline {
            var baseline = result.baseline
            // The reasons of the baseline read, else of the file written over: a person wrote them.
            let before = previous ?? Baseline.loadAsIs(path: writeBaseline).map { ($0, writeBaseline) }
            let (kept, dropped) = baseline.keepingReasons(of: before?.0)
            try writeResults("the baseline", to: writeBaseline) { try baseline.write(to: writeBaseline) }
            print(Self.baselineWritten(baseline, to: writeBaseline, keptReasons: kept, from: before?.1))
            for entry in dropped {
                print(
                    "  left out, as this run did not meet it: \(entry.signature) (its reason was: \(entry.reason))")
            }
        }
        if let junit {
            try writeResults("the JUnit report", to: junit) {
                try Reports.junit(result.summary).write(toFile: junit, atomically: true, encoding: .utf8)
            }
        }
    }

    /// The exit code of the verdict; a failed run of a backend iapcheck started keeps its output and says where.
    func exit(_ result: CheckRunReport, _ v: any Validator) throws {
        if result.verdict != .pass && result.verdict != .interrupted { keepBackendOutput(of: v) }
        switch result.verdict {
        case .pass: return
        case .validatorFailure:
            // A target file that does not describe the backend (its answer mapping finds nothing) is a usage error.
            let misconfigured = result.summary.validatorFailures.contains { $0.kind == .misconfigured }
            throw ExitCode(misconfigured ? Exit.usage : Exit.validatorFailure)
        case .discrepancy: throw ExitCode(Exit.discrepancy)
        case .interrupted: throw ExitCode(130)
        }
    }

    /// `--record DIR`: every case of the run again, transcribed without the oracle, into DIR (docs/diff.md).
    func recordAnswers(_ checker: Checker, into dir: String) throws {
        var identity = DiffRun.identity(of: checker)
        let profile = checker.validator.profile
        if !profile.isUndeclared { identity.profile = profile }
        let header = Recording.Header(
            iapcheck: IAPCheckVersion.current, validator: checker.validator.name, identity: identity)
        let progress = Progress("record \(checker.validator.name)", quiet: quiet)
        let written: Int
        do {
            written = try DiffRun.record(checker, header: header, into: dir) { progress.update($0, $1) }
        } catch {
            throw fail("error: cannot record into \(dir): \(error)", code: Exit.usage)
        }
        print(
            "recorded the answers of \(written) cases in \(dir.hasSuffix("/") ? dir : dir + "/")\(Recording.fileName): compare a later build with `iapcheck diff --against \(Shell.quote(dir)) --validator VALIDATOR` and this run's seed, catalog and policy options"
        )
    }
}

extension Check {
    /// What `--write-baseline` says it wrote: the signatures, which cases it holds the gate to, and what is left to
    /// a person (a reason for each new entry).
    static func baselineWritten(_ b: Baseline, to file: String, keptReasons: Int, from previous: String?) -> String {
        let n = b.entries.count
        var line = "baseline: \(n) signature\(n == 1 ? "" : "s") written to \(file)"
        if let w = b.writtenOver {
            let failed = w.failing?.count ?? 0
            line +=
                ", with the \(failed) failing case\(failed == 1 ? "" : "s") of seed \(w.run.seed)'s \(w.run.totalCases)"
                + " (a gate over the same cases fails on any other case that fails)"
            if w.casesRun < w.run.totalCases {
                line += "; the run stopped after \(w.casesRun) cases, so later ones are held by signature alone"
            }
        } else {
            line += " (by signature alone: a shard's or one case's run does not say which of the cases failed)"
        }
        if keptReasons > 0, let previous {
            line += "; \(keptReasons) reason\(keptReasons == 1 ? "" : "s") kept from \(previous)"
        }
        let empty = b.entries.filter { $0.reason.trimmingCharacters(in: .whitespaces).isEmpty }.count
        line +=
            empty == 0
            ? "; run with --baseline \(file)"
            : "; give \(empty == n ? "each" : "the \(empty) new one\(empty == 1 ? "" : "s")") a \"reason\", then run with --baseline \(file)"
        return line
    }
}

/// After a failed run of a backend iapcheck started: its output is kept for reading (its directory goes when a run
/// passes, or is interrupted with every case so far passed), and where is said; with an instance per job, the failing
/// case or its shrinking may have run on any of them.
func keepBackendOutput(of v: any Validator) {
    guard let managed = v as? ManagedHTTPValidator else { return }
    ManagedBackend.keepDirectories.withLock { $0 = true }
    print("the backend's output: \(managed.backend.log)")
    let others = ManagedBackend.allRunning.filter { $0 !== managed.backend }
    if !others.isEmpty {
        print("the other instances' output (one per job): \(others.map(\.log).joined(separator: ", "))")
    }
}
