import Foundation

extension LoadResults {
    /// The summary a load run prints: the headline, the pool, each operation and its errors, the capacity search,
    /// memory, acknowledged deliveries, what was not sent, the answer samples and every threshold.
    public var summaryLines: [String] {
        let s = summary
        var lines = [headline]
        if let items = s.poolItems {
            let repeats = s.repeats ?? 0
            lines.append(
                "  pool: \(items) artifacts and questions, run id \(s.runId ?? "?")"
                    + (repeats > 0
                        ? "; \(repeats) requests sent an artifact again, byte-identical (the run outlasted the pool: raise pool.size)"
                        : "; every request sent an artifact of its own"))
        }
        lines += operationLines
        if let c = s.capacity { lines += c.lines }
        if let a = s.rssStartBytes, let b = s.rssEndBytes, a > 0 {
            lines.append(
                String(
                    format:
                        "  memory: iapcheck's RSS %.1f MB at the start of the measured run, %.1f MB at its end (%+.1f%%)",
                    Double(a) / 1e6, Double(b) / 1e6, (Double(b) - Double(a)) / Double(a) * 100))
        }
        if let wrong = s.answersWrong, let restarts = s.faultSeconds?.count {
            lines.append(
                "  acknowledged deliveries: \(s.answersChecked ?? 0) answer samples checked against the oracle across \(restarts) restarts of the backend, \(wrong) disagreeing"
            )
        }
        lines += (s.notSent ?? []).map { "  not sent: \($0)" }
        if let samples = s.answerSamples {
            // One count, one name: the headline's samples, and the distinct questions they were drawn from.
            let checked = s.answersChecked ?? 0
            lines.append("  answer samples: \(checked) checked\(checked > 0 ? ", each one of " : "; ")\(samples)")
        }
        for t in s.thresholds {
            lines.append(
                "  \(t.passed ? "pass" : "FAIL")  \(t.rule)  (observed \(t.shown ?? String(format: "%.4g", t.observed)))"
            )
        }
        return lines
    }

    /// Requests, throughput, latency, errors, dropped sends and answer samples in one line.
    var headline: String {
        let s = summary
        let errors =
            s.errors.isEmpty ? "none" : s.errors.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")
        return
            "\(s.profile): \(s.requests) requests in \(String(format: "%.1f", s.durationSeconds)) s = \(Int(s.throughputPerSecond))/s; latency p50 \(Self.milliseconds(s.latencyMicros["p50"])) p99 \(Self.milliseconds(s.latencyMicros["p99"])) p99.9 \(Self.milliseconds(s.latencyMicros["p99.9"])) max \(Self.milliseconds(s.latencyMicros["max"])) (uncorrected p99 \(Self.milliseconds(s.uncorrectedLatencyMicros["p99"]))); errors \(errors); dropped \(s.dropped); answer samples checked against the oracle \(s.answersChecked ?? 0)"
    }

    /// Each operation of a mix (or one with errors), with its errors by reason and the first sample of each.
    var operationLines: [String] {
        let ops = summary.operations ?? []
        var lines: [String] = []
        for o in ops where ops.count > 1 || !o.errors.isEmpty {
            lines.append(
                "  \(o.operation): \(o.requests) requests, \(String(format: "%.0f", o.throughputPerSecond))/s, p50 \(Self.milliseconds(o.latencyMicros["p50"])) p99 \(Self.milliseconds(o.latencyMicros["p99"])), errors \(String(format: "%.3g", o.errorRate * 100))%"
            )
            for (reason, n) in o.errors.sorted(by: { ($1.value, $0.key) < ($0.value, $1.key) }) {
                lines.append("    \(n) × \(reason)")
                if let sample = o.errorSamples[reason] { lines.append("        first: \(sample)") }
            }
        }
        return lines
    }
}

extension CapacitySearch.Step {
    /// `200/s offered: 199/s, p50 0.30 ms p99 1.20 ms, errors 0%, dropped 0 — pass` (or the rules it broke).
    public var line: String {
        "\(Int(offeredRate))/s offered: \(Int(throughputPerSecond))/s, p50 \(LoadResults.milliseconds(p50Micros)) p99 \(LoadResults.milliseconds(p99Micros)), errors \(String(format: "%.3g", errorRate * 100))%, dropped \(dropped) — "
            + (passed ? "pass" : "FAIL (\(failed.joined(separator: "; ")))")
    }
}

extension CapacitySearch.Result {
    /// The capacity found (or that none was), why the search ended, and every step by offered rate.
    public var lines: [String] {
        var lines = [
            ratePerSecond.map {
                "  capacity: \(Int($0))/s offered with every threshold holding (throughput \(Int(throughputPerSecond ?? 0))/s); search ended: \(ended)"
            } ?? "  capacity: none found, no step held every threshold; search ended: \(ended)"
        ]
        lines += steps.sorted(by: { $0.offeredRate < $1.offeredRate }).map { "    \($0.line)" }
        return lines
    }
}
