import Foundation
import IAPEncoding
import IAPModel

/// The text renderings of reports that the commands print: a discrepancy with its timeline and replay command, and
/// the forgery line of a passing run. (JSON: ``JSONFormat``; JUnit: ``Reports/junit(_:)``; HTML:
/// ``CertificationHTML``.)
public enum TextReport {
    /// `240 cases/s`, `2.4 cases/s`, `0.35 cases/s`: two significant digits below ten, so a slow validator's rate
    /// never reads 0.
    public static func rate(_ done: Double, seconds: Double, unit: String = "cases") -> String {
        let r = done / max(seconds, 1e-9)
        let text = r >= 10 ? String(Int(r.rounded())) : r >= 1 ? String(format: "%.1f", r) : String(format: "%.2f", r)
        return "\(text) \(unit)/s"
    }

    /// A validator failure of a case as `check` prints it: the headline, the shrunk case, the transcript's last
    /// lines and the command that reruns it (a summary without them, from an older iapcheck: one line).
    public static func validatorFailure(_ f: Reports.ValidatorFailureSummary) -> String {
        var lines = [
            f.headline ?? "VALIDATOR FAILURE \(f.kind): \(f.message)" + (f.caseIndex.map { " in case \($0)" } ?? "")
        ]
        if let t = f.timeline { lines.append(t) }
        if f.headline != nil { lines += f.transcript.suffix(10).map { "    \($0)" } }
        if let fix = f.fix { lines.append("  fix:      \(fix)") }
        if let r = f.rerun { lines.append("  rerun:    \(r)") }
        // The message and transcript quote what the validator wrote: its escape sequences are shown, not run.
        return Terminal.visible(lines.joined(separator: "\n"), keepingLines: true)
    }

    /// Under a failure of a `--keep-going` run: what makes another failure the same bug, and how many had it.
    public static func signatureLine(_ signature: String, _ occurrences: Int) -> String {
        "  same bug in \(occurrences) failing case\(occurrences == 1 ? "" : "s"): \(signature)"
    }

    /// The questions a run counts, which are those of its passing cases: said so when a case failed (`0/1 cases
    /// passed, 0 questions` read as if the failing case had asked none).
    public static func questions(_ n: Int, allPassed: Bool) -> String {
        allPassed ? "\(n) questions" : "\(n) questions in the passing ones"
    }

    /// The lines above a failure whose shrunk case gave different outcomes on replay.
    public static func flaky(_ f: Reports.FlakySummary) -> String {
        (["FLAKY \(f.property): the shrunk case gave different outcomes in \(f.runs) replays:"]
            + f.outcomes.map { "    \($0)" }).joined(separator: "\n")
    }

    /// A discrepancy under `headline`: the shrunk timeline, expected and observed answers, each difference, replay.
    public static func discrepancy(_ s: Reports.DiscrepancySummary, headline: String) -> String {
        var lines = [headline]
        if let sig = s.signature { lines.append(signatureLine(sig, s.occurrences ?? 1)) }
        lines += [s.timeline, "  expected: \(s.expected)", "  observed: \(s.observed)"]
        lines += s.differences.map { "    - \($0)" }
        lines += s.explanation ?? []
        if let ids = s.backendIds { lines.append(ids) }
        if let d = s.deliveries { lines += ["  what each delivery changed (--explain):"] + d }
        lines.append("  replay:   \(s.replay)")
        return Terminal.visible(lines.joined(separator: "\n"), keepingLines: true)
    }

    /// Sent classes all rejected, and separately those never sent (the property mix or the catalog had no room for
    /// them): a class that was not sent did not fail.
    /// With `channels` (the validator's), a class on none of them is listed apart: it could not be sent.
    public static func forgeryLine(_ forged: [Reports.ForgerySummary], channels: [DeliveryChannel]? = nil) -> String {
        // A token of genuine content refused or not for its size alone: either verdict passes (policy tokenSizeLimit).
        func hardening(_ f: Reports.ForgerySummary) -> Bool { ForgeryClass(rawValue: f.name)?.isHardeningOnly == true }
        let sent = forged.filter { $0.sent > 0 }
        // Nothing to count: "0/0 … all rejected" would read as a verdict.
        if sent.isEmpty {
            return
                "forgeries: none sent in this run (forged artifacts come with the forgery-rejected property, mixed into histories with room for them)"
        }
        // A replayed notification UUID may be acknowledged as a repeat; the answers after it show it changed nothing.
        func acknowledgeable(_ f: Reports.ForgerySummary) -> Bool {
            ForgeryClass(rawValue: f.name)?.mayBeAcknowledged == true
        }
        let allowed = sent.filter { !$0.rejected && hardening($0) }.map(\.name)
        let acknowledged = sent.filter { !$0.rejected && acknowledgeable($0) }.map(\.name)
        let accepted = sent.filter { !$0.rejected && !hardening($0) && !acknowledgeable($0) }.map(\.name)
        let judged = sent.count - allowed.count - acknowledged.count
        var line =
            "forgeries: \(judged - accepted.count)/\(judged) classes sent were all rejected (\(sent.map(\.sent).reduce(0, +)) forged artifacts)"
        if !accepted.isEmpty { line += "; NOT all rejected: " + accepted.joined(separator: ", ") }
        if !allowed.isEmpty {
            line +=
                "; accepted where allowed: \(allowed.joined(separator: ", ")) (genuine content; refusing a token for its size is the application's choice: policy tokenSizeLimit)"
        }
        if !acknowledged.isEmpty {
            line +=
                "; acknowledged as repeats, which is allowed: \(acknowledged.joined(separator: ", ")) (the answers after them show they changed nothing)"
        }
        func elsewhere(_ f: Reports.ForgerySummary) -> Bool {
            guard let channels, let c = ForgeryClass(rawValue: f.name) else { return false }
            return !c.channels.contains(where: channels.contains)
        }
        let offChannel = forged.filter { $0.sent == 0 && elsewhere($0) }.map(\.name)
        let unsent = forged.filter { $0.sent == 0 && !elsewhere($0) }.map(\.name)
        if !offChannel.isEmpty { line += "; on channels it does not take: " + offChannel.joined(separator: ", ") }
        if !unsent.isEmpty {
            line +=
                "; not sent in this run: "
                + (unsent.count == forged.count ? "all \(unsent.count) classes" : unsent.joined(separator: ", "))
        }
        return line
    }
}

extension TextReport {
    /// The header of the `mutants` table.
    public static let mutantsHeader = "mutant                               killed  cases  shrunk  property"

    /// A line of the mutants table: a name, then text, aligned under the header.
    public static func mutantLine(_ name: String, _ rest: String) -> String { name.column(36) + " " + rest }

    /// A mutant's row of the `mutants` table.
    public static func mutantRow(_ row: Reports.MutantSummary) -> String {
        mutantLine(
            row.name,
            "\((row.killed ? "yes" : "NO").column(6)) \(String(row.casesToKill.map(String.init) ?? "-").leftPad(5))  \(String(row.shrunkEvents.map(String.init) ?? "-").leftPad(6))  \(row.property ?? "-")"
        )
    }

    /// A line of `mutants --list`: name, mistake number, description.
    public static func mutantListing(_ name: String, _ pitfall: String, _ description: String) -> String {
        mutantLine(name, pitfall.column(4) + " " + description)
    }
}

extension String {
    /// The string right-aligned in `n` columns (longer strings stay whole).
    public func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }

    /// The string left-aligned in `n` columns, cut at `n`.
    public func column(_ n: Int) -> String { padding(toLength: n, withPad: " ", startingAt: 0) }
}
