import Foundation

/// What a validator receives in production form: JWS strings signed by (a stand-in for) Apple's chain. It carries
/// the same facts as ``Delivery`` through the same channels; only the encoding differs.
public enum SignedDelivery: Codable, Hashable, Sendable {
    /// The app submits a signed transaction (StoreKit 2 `jwsRepresentation`) for the logged-in user.
    case appTransaction(userId: String, signedTransaction: String, deviceTime: Millis?)
    /// The `signedPayload` of a notification, as found in the webhook's JSON body `{"signedPayload": …}`.
    case notification(signedPayload: String)
    /// What the backend got when it reconciled one chain through the App Store Server API: the pages of Get
    /// Transaction History (v2) and, for a subscription, the Get All Subscription Statuses answer.
    case apiSnapshot(originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?)
    /// A legacy app sent its receipt; this is the JSON body `verifyReceipt` returned for it (docs/semantics.md#legacy-verifyreceipt).
    case legacyReceipt(userId: String, responseBody: String)

    /// The size in bytes of the largest signed token it carries (a legacy body carries none): what a token size
    /// limit is about.
    public var largestToken: Int {
        switch self {
        case .appTransaction(_, let jws, _): jws.utf8.count
        case .notification(let payload): payload.utf8.count
        case .apiSnapshot(_, let history, let statuses):
            max(
                history.flatMap(\.signedTransactions).map(\.utf8.count).max() ?? 0,
                statuses?.data.flatMap(\.lastTransactions).flatMap {
                    [$0.signedTransactionInfo.utf8.count, $0.signedRenewalInfo.utf8.count]
                }.max() ?? 0)
        case .legacyReceipt: 0
        }
    }
}

/// The decoded `signedPayload` of a notification exactly as Apple sends it: the nested transaction and renewal
/// info are still JWS strings that a validator must verify separately.
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
public struct ResponseBodyV2SignedPayload: Codable, Hashable, Sendable {
    public var notificationType: NotificationTypeV2
    public var subtype: Subtype?
    public var notificationUUID: String
    public var version: String?
    public var signedDate: Millis
    public var data: Data?
    public var summary: NotificationSummary?
    public var externalPurchaseToken: ExternalPurchaseToken?

    /// https://developer.apple.com/documentation/appstoreservernotifications/data
    public struct Data: Codable, Hashable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: Environment?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: SubscriptionStatus?
        public var consumptionRequestReason: ConsumptionRequestReason?
        public init(
            appAppleId: Int64?, bundleId: String?, environment: Environment?, signedTransactionInfo: String?,
            signedRenewalInfo: String?, status: SubscriptionStatus?,
            consumptionRequestReason: ConsumptionRequestReason? = nil
        ) {
            self.consumptionRequestReason = consumptionRequestReason
            self.appAppleId = appAppleId
            self.bundleId = bundleId
            self.environment = environment
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
            self.status = status
        }
    }

    public init(
        notificationType: NotificationTypeV2, subtype: Subtype?, notificationUUID: String, version: String?,
        signedDate: Millis, data: Data?,
        summary: NotificationSummary? = nil, externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
    }
}
