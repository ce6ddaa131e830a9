import Foundation

/// When and by whom requests are sent: the rate executors' intended send times, and the workers a segment runs.
extension LoadDriver {
    /// Intended send offsets (ns from the start) for the rate executors; nil for the closed executor.
    public static func schedule(_ executor: LoadProfile.Executor, seconds: Double) -> [UInt64]? {
        switch executor {
        case .closed: return nil
        case .findCapacity(let search, let w):
            // Run as such (a warm-up): its first step's rate. The search runs its steps as constant-rate runs.
            return schedule(.constantRate(rate: search.startRate, workers: w), seconds: seconds)
        case .constantRate(let rate, _):
            let n = Int(rate * seconds)
            return (0..<n).map { UInt64(Double($0) / rate * 1e9) }
        case .rampingRate(let stages, _):
            var out: [UInt64] = []
            var t = 0.0, stageStart = 0.0
            var from = stages.first?.rate ?? 0
            for s in stages {
                let end = stageStart + s.seconds
                while t < end {
                    let rate = max(from + (s.rate - from) * (t - stageStart) / s.seconds, 0.5)
                    if rate >= 1 { out.append(UInt64(t * 1e9)) }
                    t += 1 / max(rate, 1)
                }
                from = s.rate
                stageStart = end
            }
            return out
        }
    }

    /// The workers a segment runs: all of a rate executor's (they share the segment's slice of the schedule); for
    /// the closed executor, worker w belongs to segment w mod n, so n segments together run the profile's workers.
    public static func workers(of executor: LoadProfile.Executor, segment: (index: Int, count: Int)) -> [Int] {
        let all = Array(0..<executor.workers)
        guard case .closed = executor else { return all }
        return all.filter { $0 % segment.count == segment.index }
    }
}
