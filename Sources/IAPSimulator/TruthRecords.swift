import IAPModel

// What the simulator knows to be true (not read from signed payloads): who may use what, when, and consumable
// balances. The oracle is checked against it.

/// A truth interval: person may use product during `[start, end)` (docs/semantics.md#grant-intervals), as the simulator knows it.
public struct TruthSegment: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable { case paid, grace }
    public var person: Int
    public var productId: String
    public var chainId: String
    public var start: Millis
    public var end: Millis
    public var kind: Kind
    public var ownership: InAppOwnershipType
    /// The end the customer is told of while the segment lasts: the period's expiry (also when a refund or an
    /// upgrade later cuts the segment short), a grace period's end, a non-renewing purchase's end; nil for a
    /// non-consumable. An extension starts a new segment with the new end.
    public var promisedEnd: Millis?
}

/// A chain's standing from `time` on, as the simulator keeps it (not read from signed payloads): the product of
/// its current period, when that period began, and what the product's state is once the period no longer grants
/// (`revoked`, `billing-retry` or `expired`). Recorded whenever the chain changes.
public struct ChainMark: Codable, Hashable, Sendable {
    public var chainId: String
    public var person: Int
    public var time: Millis
    public var productId: String
    public var periodStart: Millis
    public var lapsed: EntitlementState
}

/// A consumable credit or debit in the truth ledger.
public struct LedgerEntry: Codable, Hashable, Sendable {
    public var person: Int
    public var productId: String
    public var time: Millis
    public var delta: Int
    public var transactionId: String
    public var clawback: Bool
}
