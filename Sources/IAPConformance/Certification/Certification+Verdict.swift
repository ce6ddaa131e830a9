import Foundation
import IAPModel
import IAPValidatorAPI

/// A certification report read as a verdict: the lines `iapcheck certify` prints, its word and its exit code.
extension CertificationSuite.Report {
    /// CERTIFIED, CERTIFIED WITH N DECLARED EXCEPTIONS (every divergence declared: a known divergence or a baseline
    /// entry, each listed) or NOT CERTIFIED.
    public var verdictWord: String {
        if interrupted == true { return "INTERRUPTED, NOT CERTIFIED" }
        if passed { return "CERTIFIED" }
        guard passedWithDeclaredDivergences else { return "NOT CERTIFIED" }
        let n = divergences.filter(\.declared).count
        return "CERTIFIED WITH \(n) DECLARED EXCEPTION\(n == 1 ? "" : "S")"
    }

    /// A baseline of this run's undeclared property divergences, each with an empty reason to fill in and the
    /// command that replays it (`certify --write-baseline`).
    public var baselineOfDivergences: Baseline {
        Baseline(
            entries: divergences.filter { !$0.declared }.compactMap { d in
                d.signatureFields.map { Baseline.Entry(signature: $0, reason: "", replay: d.replay) }
            })
    }

    /// 2 the validator is misconfigured, 3 it failed as a program, 1 not certified, 0 certified (declared
    /// divergences included), 130 interrupted by Ctrl-C.
    public var exitCode: Int32 {
        if interrupted == true { return 130 }
        if properties.contains(where: { $0.validatorFailure?.kind == .misconfigured }) { return 2 }
        if properties.contains(where: { $0.validatorFailure != nil })
            || forgeries.contains(where: { $0.validatorFailure != nil })
        {
            return 3
        }
        return passedWithDeclaredDivergences ? 0 : 1
    }

    /// `certify-<the validator's name>-<date>`: the report's folder.
    public var folderName: String {
        let stamp = date.replacingOccurrences(of: ":", with: "").replacingOccurrences(of: ".", with: "")
        let slug = (hello ?? validator).map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        return "certify-\(String(slug))-\(stamp)"
    }

    /// A row per property, the forgery line, each divergence, the declared ones not seen, and the profile with what
    /// it left unchecked.
    public var lines: [String] {
        var lines = properties.map(Self.row)
        if interrupted == true {
            lines.append(
                "interrupted by Ctrl-C after \(properties.count) propert\(properties.count == 1 ? "y" : "ies") (the last one perhaps in part), before the forgery probe: run certify again for a verdict"
            )
        }
        lines.append(forgeryLine)
        // Distinct failures whose first difference reads alike (one forgery accepted after different deliveries) are
        // told apart by their signatures.
        let texts = divergences.map { "\($0.kind) \($0.name): \($0.detail)" }
        for (d, text) in zip(divergences, texts) {
            let under = d.seenUnder.map { $0.count > 1 ? " (seen under \($0.joined(separator: ", ")))" : "" } ?? ""
            let which = texts.filter { $0 == text }.count > 1 ? d.signature.map { " [\($0)]" } ?? "" : ""
            lines.append("divergence (\(d.declared ? "declared" : "UNEXPECTED")): \(text)\(under)\(which)")
            if let reason = d.reason { lines.append("  accepted (\(baseline ?? "the baseline")): \(reason)") }
        }
        if let missed = baselineNotSeen, !missed.isEmpty {
            lines.append(
                "baseline entries not met in this run (fixed, or not reached by these cases: remove them from \(baseline ?? "the baseline") only when a run as long as the one that wrote them does not meet them either): \(missed.joined(separator: "; "))"
            )
        }
        if !declaredButNotObserved.isEmpty {
            lines.append("declared but not observed: \(declaredButNotObserved.joined(separator: ", "))")
        }
        if let profile {
            lines.append("profile: \(profile)")
            let skipped = notChecked ?? []
            for kind in ["field", "channel", "property", "forgery"] {
                let names = skipped.filter { $0.kind == kind }.map(\.name)
                if !names.isEmpty { lines.append("  not checked (\(kind)): \(names.joined(separator: ", "))") }
            }
        }
        return lines
    }

    /// `entitlement-agreement    FAIL  300 cases  <the first difference>`.
    static func row(_ p: CertificationSuite.PropertyResult) -> String {
        let example = p.counterexample.map {
            "  " + ($0.finding.map { $0 + ": " } ?? "") + ($0.differences.first ?? $0.observed)
        }
        return
            "\(p.property.padding(toLength: 24, withPad: " ", startingAt: 0)) \(p.passed ? "pass" : "FAIL")  \(p.casesPhrase)\(example ?? "")\(p.validatorFailure.map { "  validator failure: " + $0.message } ?? "")\(p.moreFailures.map { " (+\($0.count) more distinct)" } ?? "")\(p.accepted.map { ", \($0) accepted by the baseline" } ?? "")"
    }

    /// How many forgery classes were rejected, and which were not, not credited or not probed.
    var forgeryLine: String {
        if interrupted == true { return "forgeries: not probed (the run was interrupted)" }
        let rejected = forgeries.filter(\.rejected).count
        let uncredited = forgeries.filter { $0.genuineRefused != nil }.map(\.name)
        let accepted = forgeries.filter { !$0.holds && $0.genuineRefused == nil }.map(\.name)
        let notProbed = forgeries.filter { $0.notProbed != nil }.map(\.name)
        let allowed = forgeries.filter { $0.allowed == true }.map(\.name)
        // The probe sends one artifact per class; the properties' cases send others, which may fare otherwise.
        let acceptedInCases = divergences.compactMap(\.signatureFields).filter(\.acceptsWhatMustBeRefused)
            .map { $0.difference.replacingOccurrences(of: "accepted ", with: "") }
            .filter { d in !accepted.contains { d.hasSuffix("(\($0))") } }
        let inCases =
            acceptedInCases.isEmpty
            ? "" : "; in the properties' cases, accepted: " + acceptedInCases.joined(separator: ", ")
        let acknowledged = allowed.filter { ForgeryClass(rawValue: $0)?.mayBeAcknowledged == true }
        let taken = allowed.filter { !acknowledged.contains($0) }
        return "forgeries: \(rejected)/\(forgeries.count - notProbed.count - allowed.count) classes rejected"
            + (acceptedInCases.isEmpty ? "" : " by the probe (one artifact per class)")
            + (taken.isEmpty ? "" : "; accepted where allowed: " + taken.joined(separator: ", "))
            + (acknowledged.isEmpty
                ? "" : "; acknowledged as repeats, which is allowed: " + acknowledged.joined(separator: ", "))
            + (notProbed.isEmpty
                ? "" : "; \(notProbed.count) not probed: their genuine twins are over the policy's tokenSizeLimit")
            + (accepted.isEmpty ? "" : "; not: " + accepted.joined(separator: ", "))
            + (uncredited.isEmpty
                ? "" : "; not credited, the genuine twin was refused too: " + uncredited.joined(separator: ", "))
            + inCases
    }
}
