import Foundation
import Histogram
import IAPEncoding
import IAPModel

extension LoadResults {
    /// Merges the result folders of the segments of one profile: histograms are added (never percentiles averaged),
    /// counts summed, per-second series summed second by second, thresholds evaluated on the merged figures.
    ///
    /// A segment folder is input from elsewhere (a CI artifact, a pod's volume): it must be a complete segment of a
    /// run of this very workload, each once and all of them, and its histograms are rebuilt from their counts under
    /// checked bounds rather than trusted field by field, so a corrupt or crafted file is an error naming it.
    public static func merge(_ directories: [String], profile: LoadProfile) throws -> LoadResults {
        var workers: [LoadDriver.WorkerResult] = []
        var seconds = 0.0
        var seen: [Int: String] = [:]
        var count: Int?
        var options: (String?, String)?
        var capacities: [CapacitySearch.Result] = []
        for dir in directories {
            let summary = try loadBaseline(path: (dir as NSString).appendingPathComponent("summary.json"))
            let part = try segment(summary, of: dir, profile: profile)
            // Only the segments of one run, each once, all of them: anything else would be counted wrong.
            if let (first, from) = options, first != summary.options {
                throw MergeError(
                    description:
                        "\(dir) ran with \(summary.options ?? "no options recorded"), \(from) with \(first ?? "no options recorded"): segments of one run share --faults and --timeout"
                )
            }
            options = options ?? (summary.options, dir)
            if let count, count != part.count {
                throw MergeError(
                    description:
                        "\(dir) is segment \(summary.segment!) of a run split in \(part.count), the others in \(count)")
            }
            count = part.count
            if let other = seen[part.index] {
                throw MergeError(description: "segment \(summary.segment!) is given twice: \(other) and \(dir)")
            }
            seen[part.index] = dir
            workers.append(try worker(summary, of: dir))
            seconds = max(seconds, summary.durationSeconds)
            if let c = summary.capacity { capacities.append(c) }
        }
        if let count {
            let missing = (0..<count).filter { seen[$0] == nil }
            if !missing.isEmpty {
                throw MergeError(
                    description:
                        "missing segment\(missing.count > 1 ? "s" : "") \(missing.map { "\($0)/\(count)" }.joined(separator: ", ")): the merge would under-count"
                )
            }
        }
        var merged = LoadResults(profile: profile, workers: workers, seconds: seconds)
        if case .findCapacity = profile.executor {
            // Each segment searched with its share of every rate; the histograms above are of their capacity steps.
            guard capacities.count == workers.count else {
                throw MergeError(description: "a segment of this find-capacity profile records no capacity search")
            }
            merged.summary.capacity = CapacitySearch.merge(capacities)
        }
        return merged
    }

    /// Which segment of how many `dir` holds, if it is a whole segment of a run of this very workload whose counts
    /// are in bounds; otherwise an error naming the folder.
    static func segment(_ summary: Summary, of dir: String, profile: LoadProfile) throws -> (index: Int, count: Int) {
        guard summary.profile == profile.name, summary.executor == "\(profile.executor)" else {
            throw MergeError(
                description:
                    "\(dir) is a run of profile \(summary.profile) (\(summary.executor)), not of \(profile.name) (\(profile.executor))"
            )
        }
        let parts = (summary.segment ?? "").split(separator: "/").compactMap { Int($0) }
        guard parts.count == 2, parts[1] >= 1, (0..<parts[1]).contains(parts[0]) else {
            throw MergeError(description: "\(dir) is not a segment (run with --segment i/N)")
        }
        guard let workload = summary.workload else {
            throw MergeError(
                description:
                    "\(dir) does not record its workload (written by an older iapcheck?): run the segments again with this one"
            )
        }
        guard workload == profile.workload else {
            throw MergeError(
                description:
                    "\(dir) ran another workload than the profile \(profile.name) now describes: the segment ran \(workload); the profile says \(profile.workload)"
            )
        }
        let counted =
            [summary.requests, summary.dropped, summary.answersChecked ?? 0, summary.repeats ?? 0]
            + summary.errors.values + summary.perSecond.map(\.errors)
            + (summary.operations ?? []).flatMap { [$0.requests, $0.dropped] + $0.errors.values }
        guard counted.allSatisfy({ (0...Int(HistogramFile.maxTotal)).contains($0) }) else {
            throw MergeError(
                description:
                    "\(dir)/summary.json has a count (requests, dropped, errors or answers checked) below 0 or above \(HistogramFile.maxTotal)"
            )
        }
        guard summary.interrupted != true else {
            throw MergeError(
                description:
                    "\(dir) was interrupted (segment \(summary.segment!) sent only part of its share): run that segment again"
            )
        }
        return (parts[0], parts[1])
    }

    /// A segment as one worker's result: its histograms rebuilt from their files under checked bounds, its counts
    /// and, per operation, its histogram, counts and reasons.
    static func worker(_ summary: Summary, of dir: String) throws -> LoadDriver.WorkerResult {
        func path(_ name: String) -> String { (dir as NSString).appendingPathComponent(name) }
        var w = LoadDriver.WorkerResult()
        w.corrected = try HistogramFile.read(path("histogram.json"))
        w.uncorrected = try HistogramFile.read(path("histogram-uncorrected.json"))
        w.perSecond = try HistogramFile.readSeries(path("per-second.json"))
        w.errorsPerSecond = summary.perSecond.map(\.errors)
        while w.errorsPerSecond.count < w.perSecond.count { w.errorsPerSecond.append(0) }
        w.errors = summary.errors
        w.sent = summary.requests
        w.dropped = summary.dropped
        w.answersChecked = summary.answersChecked ?? 0
        w.repeats = summary.repeats ?? 0
        let byOp = try HistogramFile.readOperations(path("operations.json"))
        for row in summary.operations ?? [] {
            guard let op = LoadProfile.Operation(rawValue: row.operation) else {
                throw MergeError(
                    description: "\(dir)/summary.json: operations has an unknown operation \(row.operation)")
            }
            var o = OperationResult()
            o.corrected = byOp[op.rawValue] ?? LoadResults.latencyHistogram()
            o.requests = row.requests
            o.dropped = row.dropped
            o.errors = row.errors
            o.errorSamples = row.errorSamples
            w.operations[op.index] = o
        }
        return w
    }

    public struct MergeError: Error, CustomStringConvertible {
        public var description: String
    }
}

/// Reads the histograms a load run writes. The library's own decoding takes every internal field of the file on
/// trust (a count near 2⁶² overflows its arithmetic, a zero lowest value traps it, another layout traps the merge),
/// so only the configuration, the counts and the extreme values are read; the configuration must be the one
/// iapcheck writes, the counts are bounded, and a fresh histogram records them at its own bucket values.
enum HistogramFile {
    struct Stored: Decodable {
        var lowestDiscernibleValue: UInt64
        var highestTrackableValue: UInt64
        var numberOfSignificantValueDigits: Int
        var counts: [Int64]
        /// The extreme values as recorded (a bucket stands for a range): kept when they fall in the buckets of the
        /// lowest and the highest counts, so that the minimum, the maximum and percentiles clamped to them read as in
        /// the run.
        var minNonZeroValue: UInt64?
        var maxValue: UInt64?
    }

    /// Values one histogram may hold: far more requests than any run sends, and sums of values far below 2⁶⁴.
    static let maxTotal: UInt64 = 1 << 40

    static func read(_ path: String) throws -> Histogram<UInt64> {
        try rebuild(decode(Stored.self, path), like: LoadResults.latencyHistogram(), path: path, key: "")
    }

    /// operations.json: operation → histogram; absent (a segment of an older iapcheck) reads as none.
    static func readOperations(_ path: String) throws -> [String: Histogram<UInt64>] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        var out: [String: Histogram<UInt64>] = [:]
        for (k, s) in try decode([String: Stored].self, path) {
            out[k] = try rebuild(s, like: LoadResults.latencyHistogram(), path: path, key: k)
        }
        return out
    }

    static func readSeries(_ path: String) throws -> [Histogram<UInt64>] {
        try decode([Stored].self, path).enumerated().map { i, s in
            try rebuild(s, like: LoadResults.perSecondHistogram(), path: path, key: "[\(i)]")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ path: String) throws -> T {
        try StrictJSON.decode(
            T.self, from: StrictJSON.readFile(path, maxBytes: StrictJSON.ownOutput), file: path,
            what: "a histogram iapcheck load wrote")
    }

    /// `s`'s counts in a copy of the empty histogram `empty`, whose configuration `s` must have.
    static func rebuild(_ s: Stored, like empty: Histogram<UInt64>, path: String, key: String) throws -> Histogram<
        UInt64
    > {
        func problem(_ field: String, _ message: String) -> ConfigError {
            ConfigError(file: path, key: key.isEmpty ? field : "\(key).\(field)", message)
        }
        var h = empty
        for (field, found, expected) in [
            ("lowestDiscernibleValue", s.lowestDiscernibleValue, h.lowestDiscernibleValue),
            ("highestTrackableValue", s.highestTrackableValue, h.highestTrackableValue),
            (
                "numberOfSignificantValueDigits", UInt64(clamping: s.numberOfSignificantValueDigits),
                UInt64(h.numberOfSignificantValueDigits.rawValue)
            ),
        ] where found != expected {
            throw problem(field, "is \(found); iapcheck load writes \(expected) here (not a histogram it wrote?)")
        }
        // The lowest value of each bucket, in bucket order: one bucket is one range of equivalent values, and a
        // probe (a copy, whose minimum and maximum do not matter) says where the buckets end.
        var probe = h
        var values: [UInt64] = []
        var v: UInt64 = 0
        while values.count <= s.counts.count, probe.record(v, count: 0) {
            values.append(v)
            v = h.highestEquivalentForValue(v) + 1
        }
        guard values.count == s.counts.count else {
            throw problem(
                "counts",
                "has \(s.counts.count) buckets; this configuration has \(values.count > s.counts.count ? "more" : "\(values.count)")"
            )
        }
        var total: UInt64 = 0
        for (i, c) in s.counts.enumerated() where c != 0 {
            guard c > 0 else { throw problem("counts[\(i)]", "is negative (\(c))") }
            total += UInt64(c)
            guard total <= maxTotal else { throw problem("counts", "add up to more than \(maxTotal) values") }
        }
        func extreme(_ value: UInt64?, in bucket: Int?) -> UInt64? {
            guard let value, let bucket, value <= h.highestTrackableValue, h.valuesAreEquivalent(value, values[bucket])
            else { return nil }
            return value
        }
        let used = s.counts.indices.filter { s.counts[$0] > 0 }
        let maxAt = extreme(s.maxValue, in: used.last)
        let minAt = extreme(s.minNonZeroValue, in: used.first { values[$0] > 0 })
        for i in used {
            var c = UInt64(s.counts[i])
            if i == used.last, let maxAt {
                h.record(maxAt)
                c -= 1
            }
            // The rest of a bucket at its recorded minimum when it holds it (which lowers nothing), else at its start.
            let at = minAt.map { h.valuesAreEquivalent($0, values[i]) ? $0 : values[i] } ?? values[i]
            if c > 0 { h.record(at, count: c) }
        }
        return h
    }
}
