import Foundation
import IAPLoad
import IAPModel
import IAPSupport

extension Load {
    /// Runs a `find-capacity` profile's search, a progress line per second and a line per step.
    static func findCapacity(
        _ search: CapacitySearch, driver: LoadDriver, profile p: LoadProfile, segment: (index: Int, count: Int),
        quiet: Bool
    ) throws -> (CapacitySearch.Result, [LoadDriver.WorkerResult]) {
        let out = FileHandle.standardError
        var index = 0
        return try search.run(
            driver, profile: p, segment: segment,
            beforeStep: { rate in
                index += 1
                guard !quiet else { return }
                let total = Int(search.stepSeconds), k = index
                let pacing = Locked(ProgressPacing(terminalSeconds: 1))
                driver.progress = { g in
                    guard pacing.withLock({ $0.due(g.second, of: total) }) else { return }
                    out.write(
                        Data(
                            "load \(p.name): step \(k) at \(Int(rate))/s: \(g.second) s of \(total), last second \(g.lastSecondRequests)/s, p99 \(LoadResults.milliseconds(g.lastSecondP99Micros)), \(g.lastSecondErrors) errors\n"
                                .utf8))
                }
            },
            onStep: { step in
                guard !quiet else { return }
                out.write(Data("load \(p.name): \(stepLine(step))\n".utf8))
            })
    }

    /// `200/s offered: 199/s, p50 0.30 ms p99 1.20 ms, errors 0%, dropped 0 — pass` (or the rules it broke).
    static func stepLine(_ s: CapacitySearch.Step) -> String {
        "\(Int(s.offeredRate))/s offered: \(Int(s.throughputPerSecond))/s, p50 \(LoadResults.milliseconds(s.p50Micros)) p99 \(LoadResults.milliseconds(s.p99Micros)), errors \(String(format: "%.3g", s.errorRate * 100))%, dropped \(s.dropped) — "
            + (s.passed ? "pass" : "FAIL (\(s.failed.joined(separator: "; ")))")
    }

    static func printCapacity(_ c: CapacitySearch.Result) {
        if let rate = c.ratePerSecond {
            print(
                "  capacity: \(Int(rate))/s offered with every threshold holding (throughput \(Int(c.throughputPerSecond ?? 0))/s); search ended: \(c.ended)"
            )
        } else {
            print("  capacity: none found, no step held every threshold; search ended: \(c.ended)")
        }
        for s in c.steps.sorted(by: { $0.offeredRate < $1.offeredRate }) { print("    \(stepLine(s))") }
    }
}
