/// The decoded payload of a signed transaction (`signedTransactionInfo`).
///
/// Field names and types are Apple's; see
/// https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload.
/// Fields that identify the transaction are required (a payload without them is malformed); everything else is
/// optional because Apple omits fields that do not apply and adds new ones over time.
public struct JWSTransactionDecodedPayload: Codable, Hashable, Sendable {
    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var bundleId: String
    public var productId: String
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Millis
    public var originalPurchaseDate: Millis?
    public var expiresDate: Millis?
    public var quantity: Int?
    public var type: ProductType
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType
    public var signedDate: Millis
    public var revocationReason: RevocationReason?
    public var revocationDate: Millis?
    public var revocationType: RevocationType?
    public var revocationPercentage: Int?
    public var isUpgraded: Bool?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    public var environment: Environment
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    public var currency: String?
    public var price: Int64?
    public var appTransactionId: String?

    public init(
        transactionId: String, originalTransactionId: String, webOrderLineItemId: String? = nil, bundleId: String,
        productId: String, subscriptionGroupIdentifier: String? = nil, purchaseDate: Millis,
        originalPurchaseDate: Millis? = nil, expiresDate: Millis? = nil, quantity: Int? = 1, type: ProductType,
        appAccountToken: String? = nil, inAppOwnershipType: InAppOwnershipType = .purchased, signedDate: Millis,
        environment: Environment, transactionReason: TransactionReason? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.environment = environment
        self.transactionReason = transactionReason
    }

    /// True when the transaction carries a revocation at or before `t` (refund or family revoke).
    public func isRevoked(at t: Millis) -> Bool {
        guard let r = revocationDate else { return false }
        return r <= t
    }
}
