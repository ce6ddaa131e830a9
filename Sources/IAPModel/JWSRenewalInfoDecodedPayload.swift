/// The decoded payload of signed renewal info (`signedRenewalInfo`), one per subscription chain.
///
/// https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload
///
/// The fields live in one shared box, copied only when a copy is changed, as ``JWSTransactionDecodedPayload``'s do:
/// a renewal info travels in notifications, snapshots and the oracle's facts, and is copied far more often than
/// changed.
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    /// The stored fields; their names are the JSON keys (the synthesized coding is the payload's).
    struct Fields: Codable, Hashable, Sendable {
        var originalTransactionId: String
        var productId: String
        var autoRenewProductId: String?
        var autoRenewStatus: AutoRenewStatus?
        var isInBillingRetryPeriod: Bool?
        var gracePeriodExpiresDate: Millis?
        var expirationIntent: ExpirationIntent?
        var priceIncreaseStatus: PriceIncreaseStatus?
        var offerType: OfferType?
        var offerIdentifier: String?
        var offerDiscountType: OfferDiscountType?
        var offerPeriod: String?
        var eligibleWinBackOfferIds: [String]?
        var renewalDate: Millis?
        var recentSubscriptionStartDate: Millis?
        var renewalPrice: Int64?
        var currency: String?
        var signedDate: Millis
        var environment: Environment
        var appAccountToken: String?
        var appTransactionId: String?
    }

    /// Never changed while shared (``unique()`` copies it first), so it is safe to send.
    final class Box: @unchecked Sendable {
        var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    /// The box, copied first when another value shares it.
    private mutating func unique() -> Box {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
        return box
    }

    public var originalTransactionId: String {
        get { box.fields.originalTransactionId }
        set { unique().fields.originalTransactionId = newValue }
    }
    public var productId: String {
        get { box.fields.productId }
        set { unique().fields.productId = newValue }
    }
    public var autoRenewProductId: String? {
        get { box.fields.autoRenewProductId }
        set { unique().fields.autoRenewProductId = newValue }
    }
    public var autoRenewStatus: AutoRenewStatus? {
        get { box.fields.autoRenewStatus }
        set { unique().fields.autoRenewStatus = newValue }
    }
    public var isInBillingRetryPeriod: Bool? {
        get { box.fields.isInBillingRetryPeriod }
        set { unique().fields.isInBillingRetryPeriod = newValue }
    }
    public var gracePeriodExpiresDate: Millis? {
        get { box.fields.gracePeriodExpiresDate }
        set { unique().fields.gracePeriodExpiresDate = newValue }
    }
    public var expirationIntent: ExpirationIntent? {
        get { box.fields.expirationIntent }
        set { unique().fields.expirationIntent = newValue }
    }
    public var priceIncreaseStatus: PriceIncreaseStatus? {
        get { box.fields.priceIncreaseStatus }
        set { unique().fields.priceIncreaseStatus = newValue }
    }
    public var offerType: OfferType? {
        get { box.fields.offerType }
        set { unique().fields.offerType = newValue }
    }
    public var offerIdentifier: String? {
        get { box.fields.offerIdentifier }
        set { unique().fields.offerIdentifier = newValue }
    }
    public var offerDiscountType: OfferDiscountType? {
        get { box.fields.offerDiscountType }
        set { unique().fields.offerDiscountType = newValue }
    }
    public var offerPeriod: String? {
        get { box.fields.offerPeriod }
        set { unique().fields.offerPeriod = newValue }
    }
    public var eligibleWinBackOfferIds: [String]? {
        get { box.fields.eligibleWinBackOfferIds }
        set { unique().fields.eligibleWinBackOfferIds = newValue }
    }
    public var renewalDate: Millis? {
        get { box.fields.renewalDate }
        set { unique().fields.renewalDate = newValue }
    }
    public var recentSubscriptionStartDate: Millis? {
        get { box.fields.recentSubscriptionStartDate }
        set { unique().fields.recentSubscriptionStartDate = newValue }
    }
    public var renewalPrice: Int64? {
        get { box.fields.renewalPrice }
        set { unique().fields.renewalPrice = newValue }
    }
    public var currency: String? {
        get { box.fields.currency }
        set { unique().fields.currency = newValue }
    }
    public var signedDate: Millis {
        get { box.fields.signedDate }
        set { unique().fields.signedDate = newValue }
    }
    public var environment: Environment {
        get { box.fields.environment }
        set { unique().fields.environment = newValue }
    }
    public var appAccountToken: String? {
        get { box.fields.appAccountToken }
        set { unique().fields.appAccountToken = newValue }
    }
    public var appTransactionId: String? {
        get { box.fields.appTransactionId }
        set { unique().fields.appTransactionId = newValue }
    }

    public init(
        originalTransactionId: String, productId: String, autoRenewProductId: String?,
        autoRenewStatus: AutoRenewStatus?,
        signedDate: Millis, environment: Environment
    ) {
        box = Box(
            Fields(
                originalTransactionId: originalTransactionId, productId: productId,
                autoRenewProductId: autoRenewProductId, autoRenewStatus: autoRenewStatus, signedDate: signedDate,
                environment: environment))
    }

    public init(from decoder: any Decoder) throws { box = Box(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.fields.encode(to: encoder) }
    public static func == (a: Self, b: Self) -> Bool { a.box === b.box || a.box.fields == b.box.fields }
    public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }
}
