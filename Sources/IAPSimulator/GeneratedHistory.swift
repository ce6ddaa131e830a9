import IAPModel

/// A generated history: the simulator after the actions, and the raw delivery decisions of each item.
public struct GeneratedHistory: Sendable {
    public var sim: StoreSimulator
    public var clockEntropy: [UInt64]
    public var notificationEntropy: [[UInt64]]
    public var creationEntropy: [[UInt64]]
}

extension GeneratedHistory {
    /// A history whose delivery decisions are all the simplest (`iapcheck send`): every artifact on time, once.
    public static func unperturbed(_ sim: StoreSimulator) -> GeneratedHistory {
        GeneratedHistory(
            sim: sim, clockEntropy: [], notificationEntropy: sim.notifications.map { _ in [] },
            creationEntropy: sim.creations.map { _ in [] })
    }
}
