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

    /// The stored fields, shared between copies until one is changed (see ``JWSTransactionDecodedPayload``): the
    /// generator lists and filters chains at every step, and a copy of twenty fields costs a dozen reference counts.
    struct Fields: Codable, Hashable, Sendable {
        var id: String
        var person: Int
        var ownership: InAppOwnershipType
        var kind: ProductKind
        var groupId: String?
        var productId: String
        var txIds: [String] = []
        var restoredTxIds: [String] = []
        var phase: Phase = .active
        var expires: Millis?
        var autoRenew: Bool = true
        var autoRenewProductId: String
        var priceIncrease: PriceIncreaseStatus?
        var nextOffer: PendingOffer?
        var currentIsFreeTrial: Bool = false
        var expirationIntent: ExpirationIntent?
        var accountToken: String?
        var members: [String] = []
        var source: String?
        var extensions: [Millis] = []
        var graceExpiredSent: Bool = false
        var renewalQuirk: RenewalQuirk?
    }

    /// Never changed while shared (``unique()`` copies it first), so it is safe to send.
    final class Box: @unchecked Sendable {
        var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    private mutating func unique() -> Box {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return box
    }

    init(
        id: String, person: Int, ownership: InAppOwnershipType, kind: ProductKind, groupId: String?, productId: String,
        autoRenewProductId: String
    ) {
        box = Box(
            Fields(
                id: id, person: person, ownership: ownership, kind: kind, groupId: groupId, productId: productId,
                autoRenewProductId: autoRenewProductId))
    }

    public init(from decoder: any Decoder) throws { box = Box(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.fields.encode(to: encoder) }
    public static func == (a: Self, b: Self) -> Bool { a.box === b.box || a.box.fields == b.box.fields }
    public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }

    public var id: String {
        get { box.fields.id }
        set { unique().fields.id = newValue }
    }
    public var person: Int {
        get { box.fields.person }
        set { unique().fields.person = newValue }
    }
    public var ownership: InAppOwnershipType {
        get { box.fields.ownership }
        set { unique().fields.ownership = newValue }
    }
    public var kind: ProductKind {
        get { box.fields.kind }
        set { unique().fields.kind = newValue }
    }
    public var groupId: String? {
        get { box.fields.groupId }
        set { unique().fields.groupId = newValue }
    }
    public var productId: String {
        get { box.fields.productId }
        set { unique().fields.productId = newValue }
    }
    public var txIds: [String] {
        get { box.fields.txIds }
        set { unique().fields.txIds = newValue }
    }
    /// Further transactionIds under which the App Store re-issued a purchase of this chain (a restore, a second
    /// device, a re-grant): each mirrors the transaction it copies (`StoreSimulator.restoredFrom`).
    public var restoredTxIds: [String] {
        get { box.fields.restoredTxIds }
        set { unique().fields.restoredTxIds = newValue }
    }
    public var phase: Phase {
        get { box.fields.phase }
        set { unique().fields.phase = newValue }
    }
    public var expires: Millis? {
        get { box.fields.expires }
        set { unique().fields.expires = newValue }
    }
    public var autoRenew: Bool {
        get { box.fields.autoRenew }
        set { unique().fields.autoRenew = newValue }
    }
    public var autoRenewProductId: String {
        get { box.fields.autoRenewProductId }
        set { unique().fields.autoRenewProductId = newValue }
    }
    public var priceIncrease: PriceIncreaseStatus? {
        get { box.fields.priceIncrease }
        set { unique().fields.priceIncrease = newValue }
    }
    public var nextOffer: PendingOffer? {
        get { box.fields.nextOffer }
        set { unique().fields.nextOffer = newValue }
    }
    /// The current period is a free trial (matters for grace eligibility "paid renewals only").
    public var currentIsFreeTrial: Bool {
        get { box.fields.currentIsFreeTrial }
        set { unique().fields.currentIsFreeTrial = newValue }
    }
    public var expirationIntent: ExpirationIntent? {
        get { box.fields.expirationIntent }
        set { unique().fields.expirationIntent = newValue }
    }
    /// `appAccountToken` carried by this chain's transactions (nil for offer codes redeemed outside the app and
    /// for family-shared chains).
    public var accountToken: String? {
        get { box.fields.accountToken }
        set { unique().fields.accountToken = newValue }
    }
    /// Member chains currently sharing this purchase.
    public var members: [String] {
        get { box.fields.members }
        set { unique().fields.members = newValue }
    }
    /// For a member's chain: the purchaser's chain it mirrors.
    public var source: String? {
        get { box.fields.source }
        set { unique().fields.source = newValue }
    }
    public var extensions: [Millis] {
        get { box.fields.extensions }
        set { unique().fields.extensions = newValue }
    }
    /// GRACE_PERIOD_EXPIRED was sent for the current retry.
    public var graceExpiredSent: Bool {
        get { box.fields.graceExpiredSent }
        set { unique().fields.graceExpiredSent = newValue }
    }
    /// A flaw the next signed renewal info carries, as seen in production payloads (only that one version).
    public var renewalQuirk: RenewalQuirk? {
        get { box.fields.renewalQuirk }
        set { unique().fields.renewalQuirk = newValue }
    }

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
