import Foundation
import IAPModel
import IAPSupport

/// A self-contained HTML page of a certification report: what a person reads before trusting a validator.
public enum CertificationHTML {
    static func esc(_ s: String) -> String { Markup.escape(s) }

    public static func render(_ r: CertificationSuite.Report) -> String {
        let ok = "<span class=ok>pass</span>", bad = "<span class=bad>FAIL</span>"
        var rows = ""
        for p in r.properties {
            rows +=
                "<tr><td>\(esc(p.property))</td><td>\(p.passed ? ok : bad)</td><td>\(p.casesPhrase)</td><td>\(p.seed)</td><td>\(esc(p.counterexample.map { ($0.finding.map { $0 + ": " } ?? "") + ($0.differences.first ?? "expected \($0.expected), observed \($0.observed)") } ?? p.validatorFailure.map { "validator failure: " + $0.message } ?? ""))</td></tr>\n"
        }
        var details = ""
        for p in r.properties {
            let more = p.moreFailures ?? []
            for (c, f) in [(p.counterexample, p.validatorFailure)]
                + more.map({ ($0.counterexample, $0.validatorFailure) })
            {
                if let c {
                    details +=
                        "<h3>\(esc(c.finding ?? "counterexample")) — under property \(esc(p.property)) (\(c.shrunkEvents) actions)</h3><pre>\(esc(c.timeline))\n\nexpected: \(esc(c.expected))\nobserved: \(esc(c.observed))\n\(c.differences.map { "  - " + esc($0) }.joined(separator: "\n"))\n\((c.explanation ?? []).map(esc).joined(separator: "\n"))\n\nreplay: \(esc(c.replay))</pre>\n"
                }
                if let f {
                    details +=
                        "<h3>\(esc(p.property)): validator failure (\(esc(f.kind.rawValue)))</h3><pre>\(esc(f.message))\n\n\(f.transcript.map(esc).joined(separator: "\n"))</pre>\n"
                }
            }
        }
        let forgeryRows = r.forgeries.map {
            "<tr><td>\(esc($0.name))</td><td>\($0.rejected ? ok : $0.allowed == true ? "accepted, allowed" : $0.notProbed != nil ? "not probed" : bad)</td><td>\(esc($0.reason ?? ""))</td></tr>"
        }.joined(separator: "\n")
        var families: [String: Int] = [:]
        var kinds: [String: Int] = [:]
        for p in r.properties {
            for (k, v) in p.coverage.families { families[k, default: 0] += v }
            for (k, v) in p.coverage.notifications { kinds[k, default: 0] += v }
        }
        let famRows = families.sorted { $0.key < $1.key }.map { "<tr><td>\(esc($0.key))</td><td>\($0.value)</td></tr>" }
            .joined()
        let kindRows = kinds.sorted { $0.key < $1.key }.map { "<tr><td>\(esc($0.key))</td><td>\($0.value)</td></tr>" }
            .joined()
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>iapcheck certification: \(esc(r.hello ?? r.validator))</title>
            <style>
            body{font:15px/1.45 -apple-system,system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
            h1{font-size:1.6em;margin-bottom:.2em} .verdict{font-size:1.3em;padding:.4em .8em;border-radius:6px;display:inline-block}
            .pass{background:#e3f6e8;color:#116329}.fail{background:#fde8e8;color:#a40e26}
            table{border-collapse:collapse;margin:1em 0;width:100%} td,th{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
            th{background:#f5f5f7} .ok{color:#116329;font-weight:600}.bad{color:#a40e26;font-weight:700}
            pre{background:#f6f8fa;padding:1em;overflow-x:auto;font-size:13px;border-radius:6px}
            .cols{display:flex;gap:2em}.cols>div{flex:1} small{color:#666}
            </style></head><body>
            <h1>iapcheck certification</h1>
            <p><b>\(esc(r.hello ?? r.validator))</b> <small>(\(esc(r.validator)))</small><br>
            suite \(esc(r.suite)) · iapcheck \(esc(r.iapcheckVersion)) · \(esc(r.date))\(r.scale != 1 ? " · scale \(r.scale) (not the certified size)" : "")\(r.faults.map { " · under faults: \(esc($0))" } ?? "")<br>
            \(catalogLine(r.catalog))</p>
            <p class="verdict \(r.passed || r.passedWithDeclaredDivergences ? "pass" : "fail")">\(r.passed ? "Certified: every property held and every forgery was rejected\(r.forgeries.contains { $0.allowed == true } ? " or accepted where allowed" : "")" : r.passedWithDeclaredDivergences ? "Certified with \(r.divergences.filter(\.declared).count) declared exceptions, each listed below with its reason" : "Not certified")</p>
            \(divergenceSection(r))
            \(profileSection(r))
            <h2>Properties</h2>
            <table><tr><th>property</th><th>result</th><th>cases</th><th>seed</th><th>first difference</th></tr>
            \(rows)</table>
            \(details)
            <h2>Forgery classes</h2>
            <table><tr><th>class</th><th>rejected, no answer changed</th><th>what happened</th></tr>
            \(forgeryRows)</table>
            <h2>Coverage</h2>
            <div class=cols><div><table><tr><th>scenario family</th><th>cases</th></tr>\(famRows)</table></div>
            <div><table><tr><th>notification type/subtype</th><th>cases</th></tr>\(kindRows)</table></div></div>
            </body></html>

            """
    }

    static func catalogLine(_ c: CertificationSuite.CatalogRecord?) -> String {
        guard let c else { return "" }
        if c.file == nil && c.drawn == true {
            return
                "catalogs drawn per case (the built-in one among them) · bundle id <code>\(esc(c.bundleId))</code> · \(esc(c.environment))"
        }
        let file =
            c.file.map { "catalog <code>\(esc($0))</code> (SHA-256 <code>\(esc(c.sha256 ?? "?"))</code>)" }
            ?? "built-in catalog"
        let notes = (c.notes ?? []).map { "<br>note: \(esc($0))" }.joined()
        return
            "\(file) · bundle id <code>\(esc(c.bundleId))</code> · \(esc(c.environment)) · \(c.products) products\(notes)"
    }

    /// The declared profile and what it leaves unchecked: a certificate says what it certifies.
    static func profileSection(_ r: CertificationSuite.Report) -> String {
        guard let p = r.profile else { return "" }
        let rows = (r.notChecked ?? []).map {
            "<tr><td>\(esc($0.kind))</td><td>\(esc($0.name))</td><td>\(esc($0.why))</td></tr>"
        }.joined(separator: "\n")
        return """
            <h2>Declared profile</h2>
            <p>Answers compared: \(p.answers.map { "<code>\(esc($0.rawValue))</code>" }.joined(separator: ", "))<br>
            Channels used: \(p.channels.map { "<code>\(esc($0.protocolName))</code>" }.joined(separator: ", "))</p>
            \(rows.isEmpty ? "" : "<h3>Not checked under this profile</h3>\n<table><tr><th>kind</th><th>name</th><th>why</th></tr>\n\(rows)\n</table>")
            """
    }

    static func divergenceSection(_ r: CertificationSuite.Report) -> String {
        guard !r.divergences.isEmpty || !r.declaredButNotObserved.isEmpty || !(r.baselineNotSeen ?? []).isEmpty
        else { return "" }
        let rows = r.divergences.map {
            "<tr><td>\($0.kind)</td><td>\(esc(($0.seenUnder ?? [$0.name]).joined(separator: ", ")))</td><td>\($0.declared ? "declared (known)" : "<b>unexpected</b>")</td><td>\(esc($0.detail))\($0.reason.map { "<br><small>accepted: \(esc($0))</small>" } ?? "")</td></tr>"
        }.joined(separator: "\n")
        let unused =
            (r.declaredButNotObserved.isEmpty
                ? "" : "<p>Declared but not observed: \(esc(r.declaredButNotObserved.joined(separator: ", ")))</p>")
            + ((r.baselineNotSeen ?? []).isEmpty
                ? ""
                : "<p>Baseline entries not met in this run (fixed, or not reached by these cases: remove them from \(esc(r.baseline ?? "the baseline")) only when a run as long as the one that wrote them does not meet them either): \(esc((r.baselineNotSeen ?? []).joined(separator: "; ")))</p>")
        return """
            <h2>Divergences from the reference</h2>
            <p>\(r.passedWithDeclaredDivergences ? "Every divergence was declared in advance." : "Some divergences were not declared.")</p>
            <p>One row per distinct failure: failures whose shrunk cases differ in the same way are one, whichever properties they were seen under.</p>
            <table><tr><th>kind</th><th>name (seen under)</th><th>status</th><th>detail</th></tr>
            \(rows)
            </table>
            \(unused)
            """
    }
}
