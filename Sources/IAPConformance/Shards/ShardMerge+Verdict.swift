import Foundation
import IAPModel

/// A merge of shards read as a verdict: the lines `iapcheck merge-reports` prints and its exit code.
extension ShardMerge.Result {
    /// The merged run as its shards' `check` printed it: each failure with its timeline and rerun, the summary
    /// line, the forgeries and what was not exercised (when nothing failed), and the shards missing or interrupted.
    /// `given` summaries were merged of the run's `shards`.
    public func lines(given: Int, of shards: Int) -> [String] {
        let s = summary
        var lines = [
            "merged \(given) of \(shards) shards of \(s.validator) (seed \(s.seed), \(s.run?.totalCases ?? s.cases) cases)"
        ]
        // As the shards' `check` printed them (summaries of an older iapcheck lack the headline: a short one).
        for d in s.discrepancies {
            if let f = d.flaky { lines.append(TextReport.flaky(f)) }
            let headline =
                d.headline
                ?? "FAIL \(d.property)" + (d.caseIndex.map { " (case \($0))" } ?? " (corpus \(d.corpusFile ?? "?"))")
            lines.append(TextReport.discrepancy(d, headline: headline))
            if let r = d.rerun { lines.append("  rerun:    \(r)") }
        }
        for f in s.validatorFailures {
            if let flaky = f.flaky { lines.append(TextReport.flaky(flaky)) }
            lines.append(TextReport.validatorFailure(f))
        }
        lines.append(
            "\(s.validator): \(s.passed)/\(s.cases) cases passed, \(TextReport.questions(s.questions, allPassed: s.passed == s.cases)), corpus \(s.corpus.replayed) replayed"
        )
        // The shards' baseline (their summaries do not name its file): what it accepted over all of them.
        if s.accepted != nil || s.baselineNotSeen != nil {
            // A merge that counts fewer cases than the run's (a shard stopped at a failure) did not reach the rest.
            let total = s.run?.totalCases ?? s.cases
            lines.append(
                CheckRun.baselineLines(s, file: "the baseline", stoppedAt: s.cases < total ? (s.cases, total) : nil))
        }
        if s.discrepancies.isEmpty && s.validatorFailures.isEmpty {
            lines.append(TextReport.forgeryLine(s.forgeries, channels: s.profile?.channels))
            if let race = s.raceResent?.line { lines.append(race) }
            let missing = s.coverage.missingFamilies
            if complete && !missing.isEmpty { lines.append("not exercised: \(missing.joined(separator: ", "))") }
        }
        if !missing.isEmpty { lines.append("MISSING shards: \(missing.map(\.description).joined(separator: ", "))") }
        if !interrupted.isEmpty { lines.append("INTERRUPTED shards: \(interrupted.joined(separator: ", "))") }
        return lines
    }

    /// 3 the validator failed as a program, 1 a discrepancy, 5 a shard missing or interrupted, 0 a clean run.
    public var exitCode: Int32 {
        if !summary.validatorFailures.isEmpty { return 3 }
        if !summary.discrepancies.isEmpty { return 1 }
        return complete ? 0 : 5
    }
}

extension MutantsMerge.Result {
    /// The table one unsharded `mutants` run would have printed, and the shards missing (`given` of `shards`).
    public func lines(given: Int, of shards: Int) -> [String] {
        let s = summary
        var lines = [
            "merged \(given) of \(shards) shards of mutants (seed \(s.seed), \(s.casesPerMutant) cases per mutant)",
            TextReport.mutantsHeader,
        ]
        lines += s.mutants.map(TextReport.mutantRow)
        lines += (s.skipped ?? []).map { TextReport.mutantLine($0, "skipped: the example backend was not built") }
        lines += (s.setupErrors ?? []).map { TextReport.mutantLine($0, "ERROR (see its shard's output)") }
        lines.append(
            "killed \(s.killed)/\(s.total); median shrunk counterexample \(s.medianShrunkEvents.map { String(format: "%.1f", $0) } ?? "-") actions"
        )
        if !missing.isEmpty { lines.append("MISSING shards: \(missing.map(\.description).joined(separator: ", "))") }
        return lines
    }

    /// 1 a mutant survived, 3 a mutant could not be set up, 5 a shard missing, 0 every mutant killed.
    public var exitCode: Int32 {
        if summary.killed < summary.total { return 1 }
        if !(summary.setupErrors ?? []).isEmpty { return 3 }
        return complete ? 0 : 5
    }
}
