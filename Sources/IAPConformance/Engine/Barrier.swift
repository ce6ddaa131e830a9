import Foundation

/// Where the two clients of a parallel delivery wait for each other before each artifact.
///
/// Sendable: `waiting` and `generation` change under `condition` only.
final class Barrier: @unchecked Sendable {
    private let condition = NSCondition()
    private let parties: Int
    private var waiting = 0
    private var generation = 0
    init(parties: Int) { self.parties = parties }

    func arrive() {
        condition.lock()
        defer { condition.unlock() }
        let mine = generation
        waiting += 1
        if waiting == parties {
            waiting = 0
            generation += 1
            condition.broadcast()
            return
        }
        while generation == mine { condition.wait() }
    }
}
