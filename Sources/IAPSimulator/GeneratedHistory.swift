import IAPModel

/// A generated history: the simulator after the actions, and the raw delivery decisions of each item.
public struct GeneratedHistory: Sendable {
    public var sim: StoreSimulator
    public var clockEntropy: [UInt64]
    public var notificationEntropy: [[UInt64]]
    public var creationEntropy: [[UInt64]]
}
