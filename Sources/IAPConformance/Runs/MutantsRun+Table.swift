import Foundation
import IAPModel

/// The whole `iapcheck mutants` table as one library call: the in-process mutants side by side, then the mutants
/// that run a check of their own (a backend started for each), one after another; the rows, the closing line and the
/// summary, and the verdict with its exit code. The command line builds the entries, prints and writes files.
extension MutantsRun {
    /// A mutant that runs its own check (the example backend started with one switch): its row comes after the
    /// in-process ones. `run` throws when the mutant could not be set up; nil `run` means it cannot run here, and
    /// `unavailable` says why.
    public struct OwnCheck: Sendable {
        public var name: String
        public var description: String
        public var pitfall: String
        public var run: (@Sendable (CheckOptions) throws -> CheckReport)?
        public var unavailable: String?

        public init(
            name: String, description: String, pitfall: String,
            run: (@Sendable (CheckOptions) throws -> CheckReport)?, unavailable: String? = nil
        ) {
            self.name = name
            self.description = description
            self.pitfall = pitfall
            self.run = run
            self.unavailable = unavailable
        }
    }

    /// What a table found, and the exit code it means.
    public struct Verdict: Sendable {
        public var rows: [Reports.MutantSummary] = []
        /// Mutants that could not run here, and those whose setup failed (their names).
        public var skipped: [String] = []
        public var setupErrors: [String] = []
        /// Stopped by Ctrl-C: the rows so far stand, no summary is written (a partial table would merge as whole).
        public var interrupted = false

        public var killed: Int { rows.filter(\.killed).count }

        /// 130 interrupted, 1 a mutant survived, 3 a mutant could not be set up, 0 every mutant killed.
        public var exitCode: Int32 {
            if interrupted { return 130 }
            if killed < rows.count { return 1 }
            return setupErrors.isEmpty ? 0 : 3
        }

        /// The summary `--json` writes; nil for an interrupted run.
        public func summary(seed: UInt64, casesPerMutant: Int, identity: MutantsRunIdentity?) -> Reports.MutantsSummary?
        {
            guard !interrupted else { return nil }
            var s = Reports.MutantsSummary(
                seed: seed, casesPerMutant: casesPerMutant, total: rows.count, killed: killed,
                medianShrunkEvents: MutantsRun.medianShrunk(rows), mutants: rows)
            s.run = identity
            if !skipped.isEmpty { s.skipped = skipped }
            if !setupErrors.isEmpty { s.setupErrors = setupErrors }
            return s
        }
    }

    /// Runs the table: `emit` gets the header, each row as it is decided (in list order) and the closing line; `save`
    /// gets each in-process mutant's report (a counterexample to keep) and may throw to stop the run.
    public func table(
        _ entries: [Entry], then own: [OwnCheck], emit: (String) -> Void,
        save: (CheckReport, String) throws -> Void = { _, _ in }
    ) throws -> Verdict {
        var verdict = Verdict()
        emit(TextReport.mutantsHeader)
        do {
            try run(entries) { row, report, foundWith in
                if report.interrupted && report.failure == nil { throw Stopped() }
                emit(TextReport.mutantRow(row))
                verdict.rows.append(row)
                try save(report, foundWith)
            }
        } catch is Stopped {
            verdict.interrupted = true
        }
        // A Ctrl-C that only cut a shrink short: the rows stand, the summary is not written.
        if verdict.interrupted || options.shouldStop() {
            verdict.interrupted = true
            return verdict
        }
        for m in own {
            if options.shouldStop() {
                verdict.interrupted = true
                return verdict
            }
            runOwn(m, into: &verdict, emit: emit)
            if verdict.interrupted { return verdict }
        }
        if options.shouldStop() {
            verdict.interrupted = true
            return verdict
        }
        let median = MutantsRun.medianShrunk(verdict.rows)
        emit(
            "killed \(verdict.killed)/\(verdict.rows.count); median shrunk counterexample \(median.map { String(format: "%.1f", $0) } ?? "-") actions"
        )
        return verdict
    }

    /// One mutant with a check of its own: skipped, a setup error, or its row and how it was caught (its
    /// counterexample needs the backend, so it is not saved to a corpus).
    func runOwn(_ m: OwnCheck, into verdict: inout Verdict, emit: (String) -> Void) {
        guard let run = m.run else {
            verdict.skipped.append(m.name)
            emit(TextReport.mutantLine(m.name, "skipped: \(m.unavailable ?? "it cannot run here")"))
            return
        }
        let report: CheckReport
        do { report = try run(options) } catch {
            if options.shouldStop() {
                verdict.interrupted = true
                return
            }
            verdict.setupErrors.append(m.name)
            emit(TextReport.mutantLine(m.name, "ERROR  \(error)"))
            return
        }
        if report.interrupted && report.failure == nil {
            verdict.interrupted = true
            return
        }
        let row = MutantsRun.summary(m.name, m.description, m.pitfall, report)
        emit(TextReport.mutantRow(row))
        verdict.rows.append(row)
        if let vf = report.failure?.validatorFailure { emit("    \(String(vf.description.prefix(300)))") }
        if let d = report.failure?.discrepancy { emit("    \(d.differences.first ?? d.observed)") }
    }
}

/// Thrown from a mutant's row when its check was stopped by Ctrl-C: the remaining mutants are not started.
private struct Stopped: Error {}
