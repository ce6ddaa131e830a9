import IAPValidatorAPI

/// What a ``CheckRun`` found: the summary that `--json` and `--junit` render, and its verdict.
public struct CheckRunReport: Sendable {
    public var summary: Reports.CheckSummary
    /// The run of the generated cases (the counterexample, unrendered).
    public var report: CheckReport
    /// Every distinct failure signature the run met (accepted ones too), with a command that replays it, in the
    /// order met: what `--write-baseline` writes.
    public var signatures: [(FailureSignature, String)] = []

    public init(summary: Reports.CheckSummary, report: CheckReport) {
        self.summary = summary
        self.report = report
    }

    /// The run's cases and which failed, for a baseline it writes: nil for a shard's run or one case's.
    public var writtenOver: Baseline.WrittenOver?
    /// Each unshrunk signature met, with the signature its shrink led to (an entry's `alsoAs`).
    public var shrunkSignatures: [FailureSignature: FailureSignature] = [:]

    /// A baseline accepting every failure of the run, each reason left for a person to fill in, with the cases
    /// that failed.
    public var baseline: Baseline {
        var b = Baseline(
            entries: signatures.map { .init(signature: $0.0, reason: "", replay: $0.1.isEmpty ? nil : $0.1) },
            writtenOver: writtenOver)
        for i in b.entries.indices {
            let raws = shrunkSignatures.filter { $0.value.withoutBaselineMark == b.entries[i].signature }.keys
                .filter { $0 != b.entries[i].signature && $0.newSinceBaseline == nil }
            if !raws.isEmpty { b.entries[i].alsoAs = raws.sorted { $0.description < $1.description } }
        }
        return b
    }

    public enum Verdict: Sendable, Equatable {
        case pass, discrepancy, validatorFailure, interrupted
    }

    /// A validator that failed as a program outranks a discrepancy, which outranks an interrupted run.
    public var verdict: Verdict {
        if !summary.validatorFailures.isEmpty { return .validatorFailure }
        if !summary.discrepancies.isEmpty { return .discrepancy }
        return report.interrupted ? .interrupted : .pass
    }
}

extension CheckRun {
    /// Under `--faults kill`, how many cases killed the validator: a passing run of a few cases may have drawn no
    /// `durable-ack` case and killed nothing, which "all passed" alone did not tell.
    package static func killLine(_ report: CheckReport, properties: [PropertyName], restartable: Bool) -> String? {
        guard properties.contains(.durableAck) else { return nil }
        guard restartable else {
            return
                "faults kill: this validator cannot be killed and restarted (exec: programs and http: targets with a start command can), so its durable-ack cases killed nothing"
        }
        let n = report.coverage.properties[PropertyName.durableAck.rawValue] ?? 0
        guard n > 0 else {
            return
                "faults kill: none of these \(report.cases) cases drew durable-ack, so the validator was never killed: run more --cases"
        }
        return
            "faults kill: \(n) of \(report.cases) cases were durable-ack, whose validator is killed at every fifth delivery and restarted without reset (a shorter case kills nothing)"
    }
}
