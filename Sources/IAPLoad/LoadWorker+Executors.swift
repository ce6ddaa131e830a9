import Dispatch
import Foundation

/// How a worker paces its sends: the rate executors' schedule, or the closed loop.
extension LoadWorker {
    /// The rate executors (constant, ramping, each capacity step): every `slots`-th send of the segment's schedule at
    /// its intended time; a send later than `maxLag` is dropped, its wait recorded at the latency it already has (as
    /// wrk2 counts it).
    mutating func sendOnSchedule(_ schedule: [(index: Int, offset: UInt64)]) {
        var k = slot
        while k < schedule.count {
            if (k / slots) % 32 == 0 && stop() { break }
            let intended = start + schedule[k].offset
            var now = DispatchTime.now().uptimeNanoseconds
            while now < intended {
                let wait = intended - now
                if wait > 200_000 { usleep(UInt32((wait - 100_000) / 1000)) }
                now = DispatchTime.now().uptimeNanoseconds
            }
            let position = base + schedule[k].index
            if now - intended > maxLag {
                drop(items[position % items.count], waited: now - intended)
            } else {
                send(position, intended: intended, sent: now)
            }
            k += slots
        }
    }

    /// The closed executor: sends back to back until the end, pool items w, w + W, w + 2W, … (W the profile's
    /// workers), whichever segment runs this worker.
    mutating func sendInClosedLoop(workers: Int) {
        var k = w
        while true {
            let sent = DispatchTime.now().uptimeNanoseconds
            if sent >= end || ((k / workers) % 32 == 0 && stop()) { break }
            send(base + k, intended: sent, sent: sent)
            k += workers
        }
    }

    /// Sends pool position `position` (past the pool's end: its item again, counted as a repeat).
    mutating func send(_ position: Int, intended: UInt64, sent: UInt64) {
        if position >= items.count { r.repeats += 1 }
        r.itemsUsed = max(r.itemsUsed, position + 1)
        let item = items[position % items.count]
        let error = perform(item)
        let finished = DispatchTime.now().uptimeNanoseconds
        note(finished - intended, finished - sent, intended, error, item, position: position)
    }

    /// Too late to send: not sent, but its wait is real, so it is in the corrected histogram and counted as dropped.
    mutating func drop(_ item: ArtifactPool.Item, waited: UInt64) {
        r.dropped += 1
        let us = min(max(waited / 1000, 1), 120_000_000)
        _ = r.corrected.record(us)
        let o = item.operation.index
        r.operations[o].dropped += 1
        _ = r.operations[o].corrected.record(us)
    }
}
