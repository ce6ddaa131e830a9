import CAffinity
import Dispatch

/// Measuring helpers of the benchmarks: a monotonic clock and µs per call.
package enum Measure {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    /// µs per call of `op`, over `n` calls.
    static func microseconds(perCall n: Int, _ op: () -> Void) -> Double {
        let start = now()
        for _ in 0..<n { op() }
        return Double(now() - start) / 1e3 / Double(n)
    }

    /// The median of `xs` (the mean of the middle two for an even count; 0 for none): benches that take turns over
    /// rounds report it, since a shared machine's single rounds stray.
    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        guard !s.isEmpty else { return 0 }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The CPUs the calling thread may run on: its affinity mask, which `taskset` narrows for a whole process (the
    /// machine's core count, which `activeProcessorCount` reports, stays the same); nil where it cannot be read.
    package static func usableCPUs() -> Int? {
        let n = iapcheck_usable_cpus()
        return n > 0 ? Int(n) : nil
    }
}
