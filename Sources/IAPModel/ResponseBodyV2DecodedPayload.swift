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
    /// At most one of `data`, `summary` and `externalPurchaseToken` is present (a `TEST` notification has `data`
    /// without transaction or renewal info).
    public var data: NotificationData?
    /// `RENEWAL_EXTENSION` / `SUMMARY`: a renewal-date extension for all active subscribers of a product finished.
    public var summary: NotificationSummary?
    /// `EXTERNAL_PURCHASE_TOKEN`: a token of the External Purchase API.
    public var externalPurchaseToken: ExternalPurchaseToken?

    public init(
        notificationType: NotificationTypeV2, subtype: Subtype?, notificationUUID: String, signedDate: Millis,
        data: NotificationData?, summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = "2.0"
        self.signedDate = signedDate
        self.data = data
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
    }

    /// The app and environment a notification is about, from whichever of `data`, `summary` or
    /// `externalPurchaseToken` it carries (an external purchase token names its environment by the prefix
    /// `SANDBOX` of its id). Nil when it carries none of them.
    public var app: NotificationApp? {
        if let d = data {
            return NotificationApp(bundleId: d.bundleId, appAppleId: d.appAppleId, environment: d.environment)
        }
        if let s = summary {
            return NotificationApp(bundleId: s.bundleId, appAppleId: s.appAppleId, environment: s.environment)
        }
        if let e = externalPurchaseToken {
            return NotificationApp(bundleId: e.bundleId, appAppleId: e.appAppleId, environment: e.environment)
        }
        return nil
    }
}

/// The app a notification names (see ``ResponseBodyV2DecodedPayload/app``).
public struct NotificationApp: Hashable, Sendable {
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: Environment?
}

/// The `summary` object of a `RENEWAL_EXTENSION` / `SUMMARY` notification.
/// https://developer.apple.com/documentation/appstoreservernotifications/summary
public struct NotificationSummary: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    public var environment: Environment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var productId: String?
    public var storefrontCountryCodes: [String]?
    public var failedCount: Int64?
    public var succeededCount: Int64?

    public init(
        requestIdentifier: String?, environment: Environment?, appAppleId: Int64?, bundleId: String?,
        productId: String?,
        storefrontCountryCodes: [String]? = nil, failedCount: Int64?, succeededCount: Int64?
    ) {
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
        self.failedCount = failedCount
        self.succeededCount = succeededCount
    }
}

/// The `externalPurchaseToken` object of an `EXTERNAL_PURCHASE_TOKEN` notification.
/// https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken
public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
    public var externalPurchaseId: String?
    public var tokenCreationDate: Millis?
    public var appAppleId: Int64?
    public var bundleId: String?

    public init(externalPurchaseId: String?, tokenCreationDate: Millis?, appAppleId: Int64?, bundleId: String?) {
        self.externalPurchaseId = externalPurchaseId
        self.tokenCreationDate = tokenCreationDate
        self.appAppleId = appAppleId
        self.bundleId = bundleId
    }

    /// Sandbox tokens' ids start with `SANDBOX`; every other token is a production one.
    public var environment: Environment {
        externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
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
    /// `CONSUMPTION_REQUEST` only: why the customer asked for the refund.
    public var consumptionRequestReason: ConsumptionRequestReason?

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
