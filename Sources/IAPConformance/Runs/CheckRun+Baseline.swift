import IAPValidatorAPI

extension CheckRun {
    /// What a run with a baseline says of it: the accepted divergences it met, with their reasons and counts, and
    /// the entries it did not meet (fixed, or just not reached by these cases; a run that stopped early says only
    /// that it stopped: `stoppedAt` is the cases run of the run's), and how its cases were held against the
    /// baseline's (`cases`, from ``gateOnBaselineCases(_:)``).
    static func baselineLines(
        _ s: Reports.CheckSummary, file: String, stoppedAt: (Int, Int)? = nil, cases: String? = nil
    ) -> String {
        var lines: [String] = []
        let met = s.accepted ?? []
        lines.append(
            "accepted divergences (\(file)): \(met.count) met" + (met.isEmpty ? "" : ", not counted as failures:"))
        for a in met {
            lines.append(
                "  - \(a.signature) (\(a.occurrences) failing case\(a.occurrences == 1 ? "" : "s")): \(a.reason)")
        }
        for n in s.baselineNotSeen ?? [] {
            if let (run, total) = stoppedAt {
                lines.append("  not met before the run stopped (after \(run) of \(total) cases): \(n)")
            } else {
                lines.append(
                    "  not met in this run: \(n) — fixed, or not reached by these cases: remove it only when a run as long as the one that wrote it does not meet it either"
                )
            }
        }
        if let cases { lines.append(cases) }
        return lines.joined(separator: "\n")
    }

    /// Holds this run's cases against those of the run that wrote the baseline, when they are the same cases
    /// (docs/check.md#baselines): a case that passed then and fails now fails the run, whatever its signature. The
    /// line that says how the baseline was applied, or nil without a baseline.
    func gateOnBaselineCases(_ options: inout CheckOptions) -> String? {
        guard let baseline, !writesBaseline, options.onlyCase == nil else { return nil }
        try? checker.validator.prepare()  // the profile is part of what makes the cases these
        let profile = checker.validator.profile
        let run = identity(profile: profile.isUndeclared ? nil : profile)
        let (cases, differs) = baseline.cases(for: run, fingerprint: checker.casesFingerprint(casesRun:))
        if let cases {
            options.baselineCases = cases
            let beyond =
                options.caseRange.upperBound > cases.casesRun
                ? "; cases from \(cases.casesRun) on, which it did not run, by signature alone" : ""
            return
                "  held case by case against the run that wrote it (seed \(run.seed), cases 0–\(cases.casesRun - 1), \(cases.failing.count) failed then): a case that passed then and fails now fails the run, even in an accepted way\(beyond)"
        }
        if let differs {
            return
                "  accepted by signature alone: it was written over other cases (\(differs)), so a new bug that fails as an accepted one does is not told apart"
        }
        return
            "  accepted by signature alone: the file does not say which cases failed when it was written (--write-baseline records them)"
    }
}
