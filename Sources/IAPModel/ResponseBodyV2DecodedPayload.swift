/// The decoded `signedPayload` of an App Store Server Notification V2.
///
/// https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload
/// In decoded form the nested `signedTransactionInfo` / `signedRenewalInfo` travel as their decoded payloads
/// (``NotificationData``); the signing layer renders them as nested JWS strings.
public struct ResponseBodyV2DecodedPayload: Codable, Hashable, Sendable {
    public var notificationType: NotificationTypeV2
    public var subtype: Subtype?
    public var notificationUUID: String
    public var version: String
    public var signedDate: Millis
    public var data: NotificationData?

    public init(
        notificationType: NotificationTypeV2, subtype: Subtype?, notificationUUID: String, signedDate: Millis,
        data: NotificationData?
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = "2.0"
        self.signedDate = signedDate
        self.data = data
    }
}

/// The `data` object of a notification.
/// https://developer.apple.com/documentation/appstoreservernotifications/data
public struct NotificationData: Codable, Hashable, Sendable {
    public var appAppleId: Int64?
    public var bundleId: String
    public var bundleVersion: String?
    public var environment: Environment
    public var transactionInfo: JWSTransactionDecodedPayload?
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
    /// "current as of the signedDate" (docs/semantics.md#subscription-status); auto-renewable subscriptions only.
    public var status: SubscriptionStatus?

    public init(
        appAppleId: Int64?, bundleId: String, environment: Environment, transactionInfo: JWSTransactionDecodedPayload?,
        renewalInfo: JWSRenewalInfoDecodedPayload?, status: SubscriptionStatus?
    ) {
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.environment = environment
        self.transactionInfo = transactionInfo
        self.renewalInfo = renewalInfo
        self.status = status
    }
}
