import CAffinity
import Foundation
import IAPBench
import Testing

/// `bench check` measures the scaling of its jobs over the cores only when it may use more than one: pinned with
/// taskset, its jobs would take turns on one CPU and the figure would say nothing about the cores.
@Suite struct BenchCheckTests {
    @Test func aThreadPinnedToOneCPUSeesOneCPU() throws {
        #if os(Linux)
            let all = try #require(Measure.usableCPUs())
            #expect(all >= 1)
            // Affinity is per thread: pin a thread of its own (to the first CPU it may use, as `taskset -c N` does
            // for a process), so the test's other threads keep every CPU.
            final class Seen: @unchecked Sendable {
                var pinned: Int32 = -1
                var cpus: Int?
            }
            let seen = Seen()
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                seen.pinned = iapcheck_pin_thread_to_one_cpu()
                seen.cpus = Measure.usableCPUs()
                done.signal()
            }
            thread.start()
            done.wait()
            #expect(seen.pinned == 0)
            #expect(seen.cpus == 1)
        #endif
    }
}
