import Foundation
import Histogram
import IAPModel
import IAPSupport

/// A self-contained HTML report with inline SVG plots: latency over time, the percentile spectrum, throughput.
enum LoadReportHTML {
    static func esc(_ s: String) -> String { Markup.escape(s) }

    static func ms(_ us: UInt64) -> String { String(format: "%.3f ms", Double(us) / 1000) }

    /// A line chart: x from 0 to xMax, series of (x, y) points, y axis from 0.
    static func chart(
        title: String, series: [(name: String, color: String, points: [(Double, Double)])], xLabel: String,
        yLabel: String,
        logX: Bool = false, xTicks: [(Double, String)] = [], marks: [(x: Double, label: String)] = []
    ) -> String {
        let w = 900.0, h = 260.0, left = 70.0, bottom = 40.0, top = 20.0, right = 20.0
        let all = series.flatMap(\.points)
        let xs = all.map { logX ? log10(max($0.0, 1)) : $0.0 }
        let xMax = max(xs.max() ?? 1, 1e-9), yMax = max(all.map(\.1).max() ?? 1, 1e-9) * 1.1
        func px(_ x: Double) -> Double { left + (logX ? log10(max(x, 1)) : x) / xMax * (w - left - right) }
        func py(_ y: Double) -> Double { h - bottom - y / yMax * (h - bottom - top) }
        var svg = "<svg viewBox=\"0 0 \(Int(w)) \(Int(h))\" width=\"100%\" role=\"img\" aria-label=\"\(esc(title))\">"
        svg +=
            "<line x1=\"\(left)\" y1=\"\(h - bottom)\" x2=\"\(w - right)\" y2=\"\(h - bottom)\" stroke=\"#999\"/><line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(h - bottom)\" stroke=\"#999\"/>"
        for i in 0...4 {
            let y = yMax * Double(i) / 4
            svg +=
                "<text x=\"\(left - 6)\" y=\"\(py(y) + 4)\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">\(String(format: "%.2f", y))</text>"
            svg += "<line x1=\"\(left)\" y1=\"\(py(y))\" x2=\"\(w - right)\" y2=\"\(py(y))\" stroke=\"#eee\"/>"
        }
        for (x, label) in xTicks {
            svg +=
                "<text x=\"\(px(x))\" y=\"\(h - bottom + 16)\" font-size=\"11\" text-anchor=\"middle\" fill=\"#555\">\(esc(label))</text>"
        }
        svg +=
            "<text x=\"\((left + w) / 2)\" y=\"\(h - 4)\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\">\(esc(xLabel))</text>"
        svg +=
            "<text x=\"14\" y=\"\((top + h - bottom) / 2)\" font-size=\"12\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 14 \((top + h - bottom) / 2))\">\(esc(yLabel))</text>"
        // Events on the x axis (a backend restart): a dashed line each, labelled once.
        for (i, m) in marks.enumerated() {
            svg +=
                "<line x1=\"\(px(m.x))\" y1=\"\(top)\" x2=\"\(px(m.x))\" y2=\"\(h - bottom)\" stroke=\"#9467bd\" stroke-dasharray=\"4 3\"/>"
            if i == 0 {
                svg +=
                    "<text x=\"\(px(m.x) + 4)\" y=\"\(top + 10)\" font-size=\"11\" fill=\"#9467bd\">\(esc(m.label))</text>"
            }
        }
        for (i, s) in series.enumerated() {
            let pts = s.points.map { "\(String(format: "%.1f", px($0.0))),\(String(format: "%.1f", py($0.1)))" }.joined(
                separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(s.color)\" stroke-width=\"2\" points=\"\(pts)\"/>"
            svg +=
                "<text x=\"\(w - right - 260)\" y=\"\(top + 14 + Double(i) * 16)\" font-size=\"12\" fill=\"\(s.color)\">\(esc(s.name))</text>"
        }
        return "<h2>\(esc(title))</h2>" + svg + "</svg>"
    }

    /// A `find-capacity` run: the rate found, the knee (p99, errors and dropped against the offered rate) and the
    /// steps in the order they ran.
    static func capacitySection(_ c: CapacitySearch.Result) -> String {
        let byRate = c.steps.sorted { $0.offeredRate < $1.offeredRate }
        let top = byRate.last?.offeredRate ?? 1
        let ticks = (0...5).map { i in (top * Double(i) / 5, String(format: "%.0f/s", top * Double(i) / 5)) }
        let knee = chart(
            title: "Knee: latency against offered rate",
            series: [
                ("p99 (ms)", "#d62728", byRate.map { ($0.offeredRate, Double($0.p99Micros) / 1000) }),
                ("p50 (ms)", "#1f77b4", byRate.map { ($0.offeredRate, Double($0.p50Micros) / 1000) }),
            ],
            xLabel: "offered rate (requests/s)", yLabel: "ms", xTicks: ticks)
        let errors = chart(
            title: "Errors and dropped against offered rate",
            series: [
                ("errors %", "#ff7f0e", byRate.map { ($0.offeredRate, $0.errorRate * 100) }),
                (
                    "dropped %", "#7f7f7f",
                    byRate.map { ($0.offeredRate, 100 * Double($0.dropped) / Double(max($0.requests + $0.dropped, 1))) }
                ),
            ],
            xLabel: "offered rate (requests/s)", yLabel: "%", xTicks: ticks)
        let rows = c.steps.enumerated().map { i, s in
            "<tr><td>\(i + 1)</td><td>\(Int(s.offeredRate))/s</td><td>\(Int(s.throughputPerSecond))/s</td><td>\(ms(s.p50Micros))</td><td>\(ms(s.p99Micros))</td><td>\(String(format: "%.3f", s.errorRate * 100)) %</td><td>\(s.dropped)</td><td class=\(s.passed ? "ok" : "bad")>\(s.passed ? "pass" : "FAIL")</td><td><small>\(esc(s.failed.joined(separator: "; ")))</small></td></tr>"
        }.joined()
        let headline =
            c.ratePerSecond.map {
                "Capacity: <b>\(Int($0))/s</b> offered with every threshold holding (throughput \(Int(c.throughputPerSecond ?? 0))/s)"
            } ?? "Capacity: <b class=bad>none found</b> (no step held every threshold)"
        return """
            <h2>Capacity search</h2><p class=big>\(headline)</p><p>search ended: \(esc(c.ended))\(c.segments.map { " · \($0) segments merged" } ?? ""). The figures after this section are those of the step at the capacity.</p>
            \(knee)\(errors)
            <table><tr><th>step</th><th>offered</th><th>throughput</th><th>p50</th><th>p99</th><th>errors</th><th>dropped</th><th></th><th>broken rules</th></tr>\(rows)</table>
            """
    }

    static func render(_ r: LoadResults) -> String {
        let s = r.summary
        let (latency, throughput, spectrum) = charts(r)
        let (pct, th, perOperation) = tables(s)
        let pool = poolLine(s)
        let capacity = s.capacity.map(capacitySection) ?? ""
        let memory = memoryLine(s)
        let errs = s.errors.sorted { $0.key < $1.key }.map { "\(esc($0.key)): \($0.value)" }.joined(separator: ", ")
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>iapcheck load: \(esc(s.profile))</title>
            <style>body{font:15px/1.45 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
            table{border-collapse:collapse;margin:.5em 0} td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}
            .ok{color:#116329;font-weight:600}.bad{color:#a40e26;font-weight:700}.big{font-size:1.3em}</style></head><body>
            <h1>Load: \(esc(s.profile))</h1>
            <p>target <b>\(esc(s.target))</b> · \(esc(s.executor)) · \(String(format: "%.1f", s.durationSeconds)) s · iapcheck \(esc(s.environment["iapcheck"] ?? "")) · \(esc(s.environment["cores"] ?? "?")) cores\(s.faults.map { " · <b>faults: \(esc($0))</b>" } ?? "")\(s.interrupted == true ? " · <b>interrupted (Ctrl-C): partial run</b>" : "")</p>
            <p class=big><b>\(Int(s.throughputPerSecond))</b> requests/s · p99 <b>\(ms(s.latencyMicros["p99"] ?? 0))</b> · errors \(String(format: "%.3f", s.errorRate * 100)) % · dropped \(s.dropped) · <span class=\(s.passed ? "ok" : "bad")>\(s.passed ? "thresholds pass" : "thresholds FAIL")</span></p>
            \(memory)
            \(capacity)
            \(latency)
            \(spectrum)
            \(throughput)
            \(perOperation)
            \(pool)
            <h2>Percentiles</h2><table><tr><th></th><th>from intended send</th><th>from actual send</th></tr>\(pct)</table>
            <h2>Thresholds</h2><table><tr><th>rule</th><th>observed</th><th></th></tr>\(th)</table>
            <p>errors: \(errs.isEmpty ? "none" : errs) · answer samples checked against the oracle: \(s.answersChecked ?? 0)\((s.errors["wrong-answer"] ?? 0) > 0 ? " (<span class=bad>\(s.errors["wrong-answer"]!) wrong</span>)" : "")</p>
            </body></html>

            """
    }

    /// Latency and throughput per second (restarts of the backend dashed), and the percentile spectrum.
    static func charts(_ r: LoadResults) -> (latency: String, throughput: String, spectrum: String) {
        let s = r.summary
        let seconds = s.perSecond
        let restarts = (s.faultSeconds ?? []).map { (x: $0, label: "backend restarted (dashed)") }
        let secTicks = stride(from: 0, through: max(seconds.count - 1, 0), by: max(1, seconds.count / 10)).map {
            (Double($0), "\($0)s")
        }
        let latency = chart(
            title: "Latency over time (from intended send)",
            series: [
                ("p50", "#1f77b4", seconds.map { (Double($0.second), Double($0.p50Micros) / 1000) }),
                ("p99", "#d62728", seconds.map { (Double($0.second), Double($0.p99Micros) / 1000) }),
            ],
            xLabel: "second of the run", yLabel: "ms", xTicks: secTicks, marks: restarts)
        let throughput = chart(
            title: "Throughput",
            series: [
                ("requests/s", "#2ca02c", seconds.map { (Double($0.second), Double($0.requests)) }),
                ("errors/s", "#ff7f0e", seconds.map { (Double($0.second), Double($0.errors)) }),
            ],
            xLabel: "second of the run", yLabel: "per second", xTicks: secTicks, marks: restarts)
        var spectrumC: [(Double, Double)] = [], spectrumU: [(Double, Double)] = []
        for p in [0.0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999] {
            let x = 1 / (1 - min(p, 99.9999) / 100)
            if r.corrected.totalCount > 0 { spectrumC.append((x, Double(r.corrected.valueAtPercentile(p)) / 1000)) }
            if r.uncorrected.totalCount > 0 { spectrumU.append((x, Double(r.uncorrected.valueAtPercentile(p)) / 1000)) }
        }
        let spectrum = chart(
            title: "Percentile spectrum",
            series: [
                ("from intended send (corrected)", "#d62728", spectrumC), ("from actual send", "#7f7f7f", spectrumU),
            ],
            xLabel: "percentile", yLabel: "ms", logX: true,
            xTicks: [
                (1, "0%"), (2, "50%"), (10, "90%"), (100, "99%"), (1000, "99.9%"), (10000, "99.99%"),
                (100000, "99.999%"),
            ])
        return (latency, throughput, spectrum)
    }

    /// The percentiles, the thresholds, and each operation with its errors by reason (rows of their tables).
    static func tables(_ s: LoadResults.Summary) -> (percentiles: String, thresholds: String, perOperation: String) {
        let pct = ["p50", "p90", "p99", "p99.9", "p99.99", "max"].map { k in
            "<tr><td>\(k)</td><td>\(ms(s.latencyMicros[k] ?? 0))</td><td>\(ms(s.uncorrectedLatencyMicros[k] ?? 0))</td></tr>"
        }.joined()
        // Observed values in the rule's own unit (ms, %, /s), as the text summary prints them.
        let th = s.thresholds.map {
            "<tr><td>\(esc($0.rule))</td><td>\(esc($0.shown ?? String(format: "%.4g", $0.observed)))</td><td class=\($0.passed ? "ok" : "bad")>\($0.passed ? "pass" : "FAIL")</td></tr>"
        }.joined()
        let ops = (s.operations ?? []).map { o in
            "<tr><td>\(esc(o.operation))</td><td>\(o.requests)</td><td>\(String(format: "%.1f", o.throughputPerSecond))/s</td>"
                + ["p50", "p99", "p99.9", "max"].map { "<td>\(ms(o.latencyMicros[$0] ?? 0))</td>" }.joined()
                + "<td class=\(o.errorRate > 0 ? "bad" : "ok")>\(String(format: "%.3f", o.errorRate * 100)) %</td><td>\(o.dropped)</td></tr>"
        }.joined()
        let reasons = (s.operations ?? []).flatMap { o in
            o.errors.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { reason, n in
                "<tr><td>\(esc(o.operation))</td><td>\(esc(reason))</td><td>\(n)</td><td><small>\(esc(o.errorSamples[reason] ?? ""))</small></td></tr>"
            }
        }.joined()
        let perOperation =
            ops.isEmpty
            ? ""
            : "<h2>Per operation</h2><table><tr><th>operation</th><th>requests</th><th>throughput</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th><th>errors</th><th>dropped</th></tr>\(ops)</table>"
                + (reasons.isEmpty
                    ? "<p>No errors.</p>"
                    : "<h2>Errors by reason</h2><table><tr><th>operation</th><th>reason</th><th>count</th><th>first request with it</th></tr>\(reasons)</table>")
        return (pct, th, perOperation)
    }

    /// The pool: its size, the run id, repeats, what was not sent and the answer samples.
    static func poolLine(_ s: LoadResults.Summary) -> String {
        var pool = ""
        if let items = s.poolItems {
            pool = "<p>pool: \(items) artifacts and questions, run id \(esc(s.runId ?? "?"))"
            if let repeats = s.repeats, repeats > 0 {
                pool +=
                    " · <b>\(repeats) requests sent an artifact again</b> (byte-identical: the run outlasted the pool)"
            }
            pool += (s.notSent ?? []).map { " · not sent: \(esc($0))" }.joined()
            pool += s.answerSamples.map { " · answer samples: \(esc($0))" } ?? ""
            pool += "</p>"
        }
        return pool
    }

    /// iapcheck's memory at the start and end of the measured run, and the backend's restarts.
    static func memoryLine(_ s: LoadResults.Summary) -> String {
        var memory = ""
        if let a = s.rssStartBytes, let b = s.rssEndBytes, a > 0 {
            memory = String(
                format:
                    "<p>iapcheck's memory (RSS): %.1f MB at the start of the measured run, %.1f MB at its end (%+.1f %%)%@</p>",
                Double(a) / 1e6, Double(b) / 1e6, (Double(b) - Double(a)) / Double(a) * 100,
                s.faultSeconds.map { " · backend restarted \($0.count) times (dashed lines)" } ?? "")
        }
        return memory
    }
}
