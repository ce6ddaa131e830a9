/// The decoded payload of a signed transaction (`signedTransactionInfo`).
///
/// Field names and types are Apple's; see
/// https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload.
/// Fields that identify the transaction are required (a payload without them is malformed); everything else is
/// optional because Apple omits fields that do not apply and adds new ones over time.
///
/// The fields live in one shared box, copied only when a copy is changed: the oracle, the simulator and the
/// reference copy transactions far more often than they change them, and a copy of thirty fields (a dozen strings)
/// costs a dozen reference counts where a box costs one.
public struct JWSTransactionDecodedPayload: Codable, Hashable, Sendable {
    /// The stored fields; their names are the JSON keys (the synthesized coding is the payload's).
    struct Fields: Codable, Hashable, Sendable {
        var transactionId: String
        var originalTransactionId: String
        var webOrderLineItemId: String?
        var bundleId: String
        var productId: String
        var subscriptionGroupIdentifier: String?
        var purchaseDate: Millis
        var originalPurchaseDate: Millis?
        var expiresDate: Millis?
        var quantity: Int?
        var type: ProductType
        var appAccountToken: String?
        var inAppOwnershipType: InAppOwnershipType
        var signedDate: Millis
        var revocationReason: RevocationReason?
        var revocationDate: Millis?
        var revocationType: RevocationType?
        var revocationPercentage: Int?
        var isUpgraded: Bool?
        var offerType: OfferType?
        var offerIdentifier: String?
        var offerDiscountType: OfferDiscountType?
        var offerPeriod: String?
        var environment: Environment
        var storefront: String?
        var storefrontId: String?
        var transactionReason: TransactionReason?
        var currency: String?
        var price: Int64?
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

    public var transactionId: String {
        get { box.fields.transactionId }
        set { unique().fields.transactionId = newValue }
    }
    public var originalTransactionId: String {
        get { box.fields.originalTransactionId }
        set { unique().fields.originalTransactionId = newValue }
    }
    public var webOrderLineItemId: String? {
        get { box.fields.webOrderLineItemId }
        set { unique().fields.webOrderLineItemId = newValue }
    }
    public var bundleId: String {
        get { box.fields.bundleId }
        set { unique().fields.bundleId = newValue }
    }
    public var productId: String {
        get { box.fields.productId }
        set { unique().fields.productId = newValue }
    }
    public var subscriptionGroupIdentifier: String? {
        get { box.fields.subscriptionGroupIdentifier }
        set { unique().fields.subscriptionGroupIdentifier = newValue }
    }
    public var purchaseDate: Millis {
        get { box.fields.purchaseDate }
        set { unique().fields.purchaseDate = newValue }
    }
    public var originalPurchaseDate: Millis? {
        get { box.fields.originalPurchaseDate }
        set { unique().fields.originalPurchaseDate = newValue }
    }
    public var expiresDate: Millis? {
        get { box.fields.expiresDate }
        set { unique().fields.expiresDate = newValue }
    }
    public var quantity: Int? {
        get { box.fields.quantity }
        set { unique().fields.quantity = newValue }
    }
    public var type: ProductType {
        get { box.fields.type }
        set { unique().fields.type = newValue }
    }
    public var appAccountToken: String? {
        get { box.fields.appAccountToken }
        set { unique().fields.appAccountToken = newValue }
    }
    public var inAppOwnershipType: InAppOwnershipType {
        get { box.fields.inAppOwnershipType }
        set { unique().fields.inAppOwnershipType = newValue }
    }
    public var signedDate: Millis {
        get { box.fields.signedDate }
        set { unique().fields.signedDate = newValue }
    }
    public var revocationReason: RevocationReason? {
        get { box.fields.revocationReason }
        set { unique().fields.revocationReason = newValue }
    }
    public var revocationDate: Millis? {
        get { box.fields.revocationDate }
        set { unique().fields.revocationDate = newValue }
    }
    public var revocationType: RevocationType? {
        get { box.fields.revocationType }
        set { unique().fields.revocationType = newValue }
    }
    public var revocationPercentage: Int? {
        get { box.fields.revocationPercentage }
        set { unique().fields.revocationPercentage = newValue }
    }
    public var isUpgraded: Bool? {
        get { box.fields.isUpgraded }
        set { unique().fields.isUpgraded = newValue }
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
    public var environment: Environment {
        get { box.fields.environment }
        set { unique().fields.environment = newValue }
    }
    public var storefront: String? {
        get { box.fields.storefront }
        set { unique().fields.storefront = newValue }
    }
    public var storefrontId: String? {
        get { box.fields.storefrontId }
        set { unique().fields.storefrontId = newValue }
    }
    public var transactionReason: TransactionReason? {
        get { box.fields.transactionReason }
        set { unique().fields.transactionReason = newValue }
    }
    public var currency: String? {
        get { box.fields.currency }
        set { unique().fields.currency = newValue }
    }
    public var price: Int64? {
        get { box.fields.price }
        set { unique().fields.price = newValue }
    }
    public var appTransactionId: String? {
        get { box.fields.appTransactionId }
        set { unique().fields.appTransactionId = newValue }
    }

    public init(
        transactionId: String, originalTransactionId: String, webOrderLineItemId: String? = nil, bundleId: String,
        productId: String, subscriptionGroupIdentifier: String? = nil, purchaseDate: Millis,
        originalPurchaseDate: Millis? = nil, expiresDate: Millis? = nil, quantity: Int? = 1, type: ProductType,
        appAccountToken: String? = nil, inAppOwnershipType: InAppOwnershipType = .purchased, signedDate: Millis,
        environment: Environment, transactionReason: TransactionReason? = nil
    ) {
        box = Box(
            Fields(
                transactionId: transactionId, originalTransactionId: originalTransactionId,
                webOrderLineItemId: webOrderLineItemId, bundleId: bundleId, productId: productId,
                subscriptionGroupIdentifier: subscriptionGroupIdentifier, purchaseDate: purchaseDate,
                originalPurchaseDate: originalPurchaseDate, expiresDate: expiresDate, quantity: quantity, type: type,
                appAccountToken: appAccountToken, inAppOwnershipType: inAppOwnershipType, signedDate: signedDate,
                environment: environment, transactionReason: transactionReason))
    }

    public init(from decoder: any Decoder) throws { box = Box(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.fields.encode(to: encoder) }
    public static func == (a: Self, b: Self) -> Bool { a.box === b.box || a.box.fields == b.box.fields }
    public func hash(into hasher: inout Hasher) { box.fields.hash(into: &hasher) }

    /// True when the transaction carries a revocation at or before `t` (refund or family revoke).
    public func isRevoked(at t: Millis) -> Bool {
        guard let r = revocationDate else { return false }
        return r <= t
    }
}

extension JWSTransactionDecodedPayload {
    /// Purchase order: by `purchaseDate`, ties by `transactionId`. The id is read only on a tie: a tuple comparison
    /// reads (and retains) both ids at every step of a sort.
    public static func purchasedBefore(_ a: JWSTransactionDecodedPayload, _ b: JWSTransactionDecodedPayload) -> Bool {
        a.purchaseDate != b.purchaseDate ? a.purchaseDate < b.purchaseDate : a.transactionId < b.transactionId
    }

    /// Signing order: by `signedDate`, ties by `transactionId` (read only on a tie).
    public static func signedBefore(_ a: JWSTransactionDecodedPayload, _ b: JWSTransactionDecodedPayload) -> Bool {
        a.signedDate != b.signedDate ? a.signedDate < b.signedDate : a.transactionId < b.transactionId
    }
}
