import Dispatch

/// Measuring helpers of the benchmarks: a monotonic clock and µs per call.
enum Measure {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    /// µs per call of `op`, over `n` calls.
    static func microseconds(perCall n: Int, _ op: () -> Void) -> Double {
        let start = now()
        for _ in 0..<n { op() }
        return Double(now() - start) / 1e3 / Double(n)
    }
}
