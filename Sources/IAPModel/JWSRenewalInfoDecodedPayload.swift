/// The decoded payload of signed renewal info (`signedRenewalInfo`), one per subscription chain.
///
/// https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var productId: String
    public var autoRenewProductId: String?
    public var autoRenewStatus: AutoRenewStatus?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Millis?
    public var expirationIntent: ExpirationIntent?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    public var eligibleWinBackOfferIds: [String]?
    public var renewalDate: Millis?
    public var recentSubscriptionStartDate: Millis?
    public var renewalPrice: Int64?
    public var currency: String?
    public var signedDate: Millis
    public var environment: Environment
    public var appAccountToken: String?
    public var appTransactionId: String?

    public init(
        originalTransactionId: String, productId: String, autoRenewProductId: String?,
        autoRenewStatus: AutoRenewStatus?,
        signedDate: Millis, environment: Environment
    ) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.signedDate = signedDate
        self.environment = environment
    }
}
