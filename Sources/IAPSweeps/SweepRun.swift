import Foundation
import IAPSupport

/// Items of the sweeps run on several threads (each with an 8 MiB stack, for deep shrinking), a line emitted as each
/// ends: `ok` or `FAIL`, its name and time, the progress and an estimate of the time left; then each failure whole.
public struct SweepRun {
    public var jobs: Int

    public init(jobs: Int) { self.jobs = max(1, jobs) }

    /// The names of the items that failed, in list order, after emitting every line (`emit` is called from one
    /// thread at a time).
    public func run(_ items: [Sweeps.Item], emit: @escaping @Sendable (String) -> Void) -> [String] {
        let start = Date()
        let state = Locked(Progress(next: 0, done: 0, failed: [:]))
        let group = DispatchGroup()
        for _ in 0..<min(jobs, max(1, items.count)) {
            group.enter()
            let t = Thread {
                defer { group.leave() }
                while let k = state.withLock({ p -> Int? in
                    guard p.next < items.count else { return nil }
                    p.next += 1
                    return p.next - 1
                }) {
                    let began = Date()
                    let problems = items[k].run()
                    state.withLock { p in
                        p.done += 1
                        if !problems.isEmpty { p.failed[k] = problems }
                        emit(Self.line(items[k].name, problems.isEmpty, began, start, p.done, items.count))
                    }
                }
            }
            t.stackSize = 8 << 20
            t.start()
        }
        group.wait()
        let failed = state.withLock { $0.failed }
        for k in failed.keys.sorted() {
            emit("FAIL \(items[k].name):\n" + failed[k]!.joined(separator: "\n"))
        }
        return failed.keys.sorted().map { items[$0].name }
    }

    struct Progress {
        var next: Int
        var done: Int
        var failed: [Int: [String]]
    }

    /// `ok   NAME  1.2 s  [3/98, 10 s, about 40 s left]`.
    static func line(_ name: String, _ passed: Bool, _ began: Date, _ start: Date, _ done: Int, _ total: Int)
        -> String
    {
        let now = Date()
        let elapsed = now.timeIntervalSince(start)
        let left = elapsed / Double(done) * Double(total - done)
        return (passed ? "ok   " : "FAIL ") + name
            + String(
                format: "  %.1f s  [%d/%d, %.0f s, about %.0f s left]", now.timeIntervalSince(began), done, total,
                elapsed, left)
    }
}
