import Foundation
import Histogram
import IAPLoad
import IAPModel
import IAPReference
import IAPTesting
import Testing

/// `load merge` reads folders from elsewhere (CI artifacts, a pod's volume): only the complete, uninterrupted
/// segments of the very workload the profile describes merge, and a corrupt or crafted histogram is an error that
/// names its file, never a trap or wrong figures.
@Suite struct LoadMergeInputTests {
    static func profile(seed: Int = 7, duration: Int = 1) throws -> LoadProfile {
        try LoadProfile.decode(
            Data(
                #"""
                {"name":"merge-input","mix":{"query":70,"notification":30},"pool":{"size":30,"seed":\#(seed)},
                 "executor":{"type":"constant-rate","rate":200,"workers":1},
                 "warmupSeconds":0,"durationSeconds":\#(duration),"thresholds":["p99 < 2s"]}
                """#.utf8), file: "merge-input.json")
    }

    /// The two segments of `profile`, written to fresh folders (0.4 s each, whatever the profile says).
    static func segments(_ profile: LoadProfile) throws -> [String] {
        let pool = ArtifactPool.build(profile)
        return try (0..<2).map { i in
            let w = try LoadDriver(profile: profile, pool: pool) { ReferenceValidator() }.run(
                seconds: 0.4, record: true, segment: (i, 2))
            var r = LoadResults(profile: profile, workers: w, seconds: 0.4)
            r.summary.segment = "\(i)/2"
            let dir = Scratch.directory + "iapcheck-merge-input-\(UUID().uuidString)"
            try r.write(to: dir)
            return dir
        }
    }

    static func edit(_ file: String, _ change: (inout [String: Any]) -> Void) throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
        change(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: file))
    }

    static func error(merging dirs: [String], _ profile: LoadProfile) -> String {
        do {
            _ = try LoadResults.merge(dirs, profile: profile)
            return "merged"
        } catch {
            return "\(error)"
        }
    }

    @Test func theMergedHistogramsAreTheSegmentsOwn() throws {
        let p = try Self.profile()
        let dirs = try Self.segments(p)
        // The segments as measured, then latencies in wide buckets (above 2,048 µs a bucket holds several values,
        // and the recorded extremes sit inside them).
        let wide: [[UInt64]] = [[3001, 3001, 5000, 2_500_001, 77_777], [4099, 119_999_999, 3003, 3003]]
        for round in 0..<2 {
            if round == 1 {
                for (dir, values) in zip(dirs, wide) {
                    var h = LoadResults.latencyHistogram()
                    for v in values { h.record(v) }
                    try JSONEncoder().encode(h).write(to: URL(fileURLWithPath: dir + "/histogram.json"))
                }
            }
            let merged = try LoadResults.merge(dirs, profile: p)
            // Rebuilt from the counts: the same figures as the files decoded and added by the library itself.
            var added: Histogram<UInt64>?
            for dir in dirs {
                let one = try JSONDecoder().decode(
                    Histogram<UInt64>.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/histogram.json")))
                if added == nil { added = one } else { added!.add(one) }
            }
            let sum = try #require(added), m = merged.corrected
            #expect(m.totalCount == sum.totalCount && sum.totalCount > 0)
            for q in [0.0, 1, 25, 50, 90, 99, 99.9, 100] { #expect(m.valueAtPercentile(q) == sum.valueAtPercentile(q)) }
            #expect(m.max == sum.max && m.min == sum.min && m.minNonZero == sum.minNonZero)
            #expect(abs(m.mean - sum.mean) < 1e-6 * sum.mean)
            #expect(merged.summary.workload == p.workload)
        }
    }

    @Test func onlySegmentsOfThisWorkloadMerge() throws {
        let p = try Self.profile()
        let dirs = try Self.segments(p)
        for other in [try Self.profile(seed: 8), try Self.profile(duration: 2)] {
            #expect(Self.error(merging: dirs, other).contains("ran another workload"))
        }
        var target = p
        target.target = "mutant:no-grace"
        #expect(Self.error(merging: dirs, target).contains("ran another workload"))
    }

    @Test func anInterruptedSegmentIsRefused() throws {
        let p = try Self.profile()
        let dirs = try Self.segments(p)
        try Self.edit(dirs[1] + "/summary.json") { $0["interrupted"] = true }
        let e = Self.error(merging: dirs, p)
        #expect(e.contains(dirs[1]) && e.contains("interrupted"), "\(e)")
    }

    @Test func aCorruptHistogramIsAnErrorNamingItsFile() throws {
        let p = try Self.profile()
        let edits: [(String, (inout [String: Any]) -> Void)] = [
            (
                "counts",
                { h in
                    var c = h["counts"] as! [Int]
                    c[c.count / 2] = 1 << 62
                    h["counts"] = c
                }
            ),
            ("lowestDiscernibleValue", { $0["lowestDiscernibleValue"] = 0 }),
            ("highestTrackableValue", { $0["highestTrackableValue"] = Int64.max }),
            ("counts", { h in h["counts"] = Array((h["counts"] as! [Int]).prefix(100)) }),
            (
                "counts",
                { h in
                    var c = h["counts"] as! [Int]
                    c[3] = -5
                    h["counts"] = c
                }
            ),
            ("numberOfSignificantValueDigits", { $0["numberOfSignificantValueDigits"] = 2 }),
            ("lowestDiscernibleValue", { $0["lowestDiscernibleValue"] = 2 }),
            ("highestTrackableValue", { $0["highestTrackableValue"] = 1 << 30 }),
            ("counts", { $0["counts"] = nil }),
        ]
        let dirs = try Self.segments(p)
        let original = try Data(contentsOf: URL(fileURLWithPath: dirs[0] + "/histogram.json"))
        for (key, change) in edits {
            try original.write(to: URL(fileURLWithPath: dirs[0] + "/histogram.json"))
            try Self.edit(dirs[0] + "/histogram.json", change)
            let e = Self.error(merging: dirs, p)
            #expect(e.contains(dirs[0] + "/histogram.json") && e.contains(key), "\(key): \(e)")
        }
        // A file that is not there, or not JSON, is named too.
        try Data("{\"counts\": [1, 2".utf8).write(to: URL(fileURLWithPath: dirs[0] + "/histogram.json"))
        #expect(Self.error(merging: dirs, p).contains(dirs[0] + "/histogram.json"))
        try FileManager.default.removeItem(atPath: dirs[1] + "/per-second.json")
        try original.write(to: URL(fileURLWithPath: dirs[0] + "/histogram.json"))
        #expect(Self.error(merging: dirs, p).contains(dirs[1] + "/per-second.json"))
    }
}
