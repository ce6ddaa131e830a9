import IAPModel

// The facts the store created and Apple would sign: transactions and notifications, with whom they concern.

/// A transaction the store created, with how its owner's app learns about it.
public struct TransactionCreation: Codable, Hashable, Sendable {
    public var transactionId: String
    public var chainId: String
    public var person: Int
    public var time: Millis
    /// Made in the app (the app submits it at once); otherwise (offer code, family share, renewal) the app sees it
    /// when it next opens.
    public var inApp: Bool
}

/// A notification the store emitted, with the chain and person it concerns.
public struct EmittedNotification: Codable, Hashable, Sendable {
    public var payload: ResponseBodyV2DecodedPayload
    /// Nil for a notification about the app rather than one subscription (`summary`, `externalPurchaseToken`).
    public var chainId: String?
    public var person: Int
}
