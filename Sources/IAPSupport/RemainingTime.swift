import Foundation

/// The time a run has left, from its recent pace rather than its average: a backend that slows as it goes (a journal
/// it re-reads on every restart, a table that grows) made an estimate from the average stand still for minutes.
///
/// It keeps the counts of the last `window` seconds; the estimate is what is left at the pace of that window (the
/// whole run's pace while the run is younger than `window` / 3, as a few cases say little).
public struct RemainingTime: Sendable {
    public let window: Double
    var started: Date
    /// (when, done), oldest first, at most one per thirtieth of the window (a fast run records thousands of cases a
    /// second): the last sample older than the window stays, so the samples span it.
    var samples: [(Date, Int)] = []

    public init(window: Double = 30, now: Date = Date()) {
        self.window = window
        self.started = now
    }

    /// Notes that `done` were done at `now`.
    public mutating func record(_ done: Int, now: Date = Date()) {
        if let last = samples.last, now.timeIntervalSince(last.0) < window / 30 { return }
        samples.append((now, done))
        while samples.count > 2, now.timeIntervalSince(samples[1].0) >= window { samples.removeFirst() }
    }

    /// Seconds left for `total`, or nil while no pace is known.
    public func seconds(_ done: Int, of total: Int, now: Date = Date()) -> Double? {
        guard done < total else { return nil }
        let elapsed = now.timeIntervalSince(started)
        var (count, span) = (Double(done), elapsed)
        if elapsed >= window / 3, let first = samples.first, now.timeIntervalSince(first.0) > 0 {
            (count, span) = (Double(done - first.1), now.timeIntervalSince(first.0))
        }
        guard count > 0, span > 0 else { return nil }
        return Double(total - done) / (count / span)
    }

    /// Leaves `seconds` just spent on something else (shrinking a failure) out of the pace: what came before is
    /// moved that much later, as if the pause had not been. A shrink of a minute among cases of a tenth of a second
    /// would otherwise make the estimate ten times too long.
    public mutating func leaveOut(_ seconds: Double) {
        guard seconds > 0 else { return }
        started += seconds
        samples = samples.map { ($0.0 + seconds, $0.1) }
    }

    /// How many samples are kept (a handful, however fast the run).
    package var sampleCount: Int { samples.count }

    /// Measures from `now` (what came before, such as a corpus replay, is not cases).
    public mutating func restart(now: Date = Date()) {
        started = now
        samples = []
    }
}
