import Foundation
import IAPModel

/// `--shard i/N`: one of N contiguous slices of a run's case indices, so that N machines (a CI matrix, an
/// indexed batch job) run one seeded suite between them and ``ShardMerge`` joins their JSON summaries into the
/// verdict one machine would have given.
///
/// Slices are contiguous (shard i runs `[total·i/N, total·(i+1)/N)`), so every shard sees every property, and the
/// lowest failing index of the whole run is the first failure of the first failing shard.
public struct Shard: Codable, Hashable, Sendable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    /// Parses `i/N` (0 ≤ i < N); nil otherwise.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, i >= 0, i < n else { return nil }
        self.init(index: i, count: n)
    }

    /// The case indices of this shard in a run of `total` (≥ 0) cases; full-width arithmetic, so no count of
    /// cases or shards can overflow it.
    public func range(of total: Int) -> Range<Int> {
        guard total > 0, count > 0, index >= 0, index < count else { return 0..<0 }
        func bound(_ i: Int) -> Int { count.dividingFullWidth(total.multipliedFullWidth(by: i)).quotient }
        return bound(index)..<bound(index + 1)
    }

    /// `shard 1/3: cases 334 to 666 of 1000`, for people.
    public func describe(of total: Int) -> String {
        let r = range(of: total)
        return r.isEmpty
            ? "shard \(self): none of the \(total) cases"
            : "shard \(self): cases \(r.lowerBound) to \(r.upperBound - 1) of \(total)"
    }

    /// Whether the fields describe a shard at all (a summary file is input like any other).
    public var isValid: Bool { count >= 1 && index >= 0 && index < count }

    public var description: String { "\(index)/\(count)" }
}

extension Reports.ForgerySummary {
    /// The classes of several runs as one: counts summed; "all rejected" when every run that sent the class
    /// rejected all of it.
    static func merge(_ runs: [[Reports.ForgerySummary]]) -> [Reports.ForgerySummary] {
        var out: [String: Reports.ForgerySummary] = [:]
        var order: [String] = []
        for run in runs {
            for f in run {
                guard var m = out[f.name] else { out[f.name] = f; order.append(f.name); continue }
                m.rejected = (m.sent == 0 || m.rejected) && (f.sent == 0 || f.rejected) && m.sent + f.sent > 0
                m.sent += f.sent
                if let c = f.channels {
                    var mc = m.channels ?? [:]
                    for (k, v) in c {
                        var x = mc[k] ?? ForgeryTally.Count()
                        x.sent += v.sent
                        x.rejected += v.rejected
                        mc[k] = x
                    }
                    m.channels = mc
                }
                out[f.name] = m
            }
        }
        return order.map { out[$0]! }
    }
}
