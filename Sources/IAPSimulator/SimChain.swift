import IAPModel

/// The store's state of one ownership chain (one `originalTransactionId`): a subscription in one group, or one
/// one-time purchase. Family members get chains of their own that mirror the purchaser's (`source`).
public struct SimChain: Codable, Hashable, Sendable {
    public enum Phase: Codable, Hashable, Sendable {
        case active
        /// Billing retry after the period ending at `e0` failed to renew; grace until `graceEnd` if any; the App
        /// Store gives up at `retryEnd`.
        case retry(e0: Millis, graceEnd: Millis?, retryEnd: Millis)
        case expired
        /// The current period was refunded or revoked from Family Sharing.
        case revoked
    }

    /// An offer that applies to the coming renewal periods.
    public struct PendingOffer: Codable, Hashable, Sendable {
        public var type: OfferType
        public var spec: OfferSpec
        public var remaining: Int
    }

    public var id: String
    public var person: Int
    public var ownership: InAppOwnershipType
    public var kind: ProductKind
    public var groupId: String?
    public var productId: String
    public var txIds: [String] = []
    /// Further transactionIds under which the App Store re-issued a purchase of this chain (a restore, a second
    /// device, a re-grant): each mirrors the transaction it copies (`StoreSimulator.restoredFrom`).
    public var restoredTxIds: [String] = []
    public var phase: Phase = .active
    public var expires: Millis?
    public var autoRenew = true
    public var autoRenewProductId: String
    public var priceIncrease: PriceIncreaseStatus?
    public var nextOffer: PendingOffer?
    /// The current period is a free trial (matters for grace eligibility "paid renewals only").
    public var currentIsFreeTrial = false
    public var expirationIntent: ExpirationIntent?
    /// `appAccountToken` carried by this chain's transactions (nil for offer codes redeemed outside the app and
    /// for family-shared chains).
    public var accountToken: String?
    /// Member chains currently sharing this purchase.
    public var members: [String] = []
    /// For a member's chain: the purchaser's chain it mirrors.
    public var source: String?
    public var extensions: [Millis] = []
    /// GRACE_PERIOD_EXPIRED was sent for the current retry.
    public var graceExpiredSent = false
    /// A flaw the next signed renewal info carries, as seen in production payloads (only that one version).
    public var renewalQuirk: RenewalQuirk?

    public var currentTx: String? { txIds.last }
    public var isMember: Bool { source != nil }
}

/// Self-contradicting or incomplete renewal info Apple has been seen to send
/// (docs/semantics.md#q4-malformed-grace-and-expiry-payloads). A validator must accept it and answer sensibly.
public enum RenewalQuirk: String, Codable, Hashable, Sendable {
    /// `gracePeriodExpiresDate` ahead, but `isInBillingRetryPeriod` false.
    case graceWithoutRetryFlag
    /// A `DID_FAIL_TO_RENEW` with subtype `GRACE_PERIOD` whose renewal info has no `gracePeriodExpiresDate` (seen
    /// after a free trial when grace applies to paid renewals only: the App Store gave no grace).
    case gracePeriodWithoutDate
    /// An `EXPIRED` renewal info without `expirationIntent`.
    case expiredWithoutIntent
}
