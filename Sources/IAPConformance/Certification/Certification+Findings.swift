import IAPModel
import IAPSimulator

extension CertificationSuite {
    /// One shrunk failure of a property, rendered for the report.
    struct Finding {
        var counterexample: Reports.DiscrepancySummary?
        var validatorFailure: Reports.ValidatorFailureSummary?
        /// The forgery class of the forged artifact the counterexample turns on, if it turns on one.
        var forgeryClass: String?
        var signature: String
        /// The signature's fields, for a baseline entry that accepts it (`certify --write-baseline`).
        var fields: FailureSignature?
        /// The command that replays the shrunk case.
        var replay: String?
        /// What the divergence table says: the finding and the first difference, or the validator failure.
        var detail: String

        var summary: FailureSummary {
            FailureSummary(
                signature: signature, counterexample: counterexample, validatorFailure: validatorFailure,
                forgeryClass: forgeryClass)
        }
    }

    static func finding(_ f: FailureReport, replay: String) -> Finding {
        var found = Finding(signature: f.signature.description, fields: f.signature, replay: replay, detail: "")
        if let d = f.discrepancy {
            // The forged artifact at the failing step, or the last one before it.
            for step in f.shrunk.steps.prefix(d.step + 1).reversed() {
                if case .deliver(let pd) = step, let fc = pd.forgery {
                    found.forgeryClass = fc.rawValue
                    break
                }
            }
            var cx = Reports.DiscrepancySummary(
                property: d.property.rawValue, caseIndex: f.caseIndex, shrunkEvents: f.shrunk.actionCount,
                expected: d.expected, observed: d.observed, differences: d.differences,
                timeline: Timeline.render(f.shrunk, failingStep: d.step, race: d.race), replay: replay)
            cx.finding = d.finding
            let why = Explanation.lines(d, in: f.shrunk)
            if !why.isEmpty { cx.explanation = why }
            found.counterexample = cx
            found.detail = d.finding + ": " + (d.differences.first ?? "observed \(d.observed)")
        } else if let failure = f.validatorFailure {
            found.validatorFailure = Reports.ValidatorFailureSummary(
                kind: failure.kind, message: failure.message, caseIndex: f.caseIndex,
                transcript: failure.transcript)
            found.detail = "validator failure: " + failure.message
        }
        return found
    }
}
