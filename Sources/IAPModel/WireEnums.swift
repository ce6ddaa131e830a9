// Apple's enum values, with the wire strings and numbers as raw values.
// Reference: https://developer.apple.com/documentation/appstoreserverapi and .../appstoreservernotifications

/// `notificationType` of App Store Server Notifications V2.
/// https://developer.apple.com/documentation/appstoreservernotifications/notificationtype
public struct NotificationTypeV2: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    public static let didRenew = Self(rawValue: "DID_RENEW")
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let expired = Self(rawValue: "EXPIRED")
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let refund = Self(rawValue: "REFUND")
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    public static let revoke = Self(rawValue: "REVOKE")
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    public static let test = Self(rawValue: "TEST")
    public static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    public static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")
    public static let known: [Self] = [
        .subscribed, .didRenew, .didChangeRenewalPref, .didChangeRenewalStatus, .offerRedeemed, .didFailToRenew,
        .gracePeriodExpired, .expired, .priceIncrease, .refund, .refundDeclined, .refundReversed, .consumptionRequest,
        .revoke, .renewalExtended, .renewalExtension, .oneTimeCharge, .test, .externalPurchaseToken, .rescindConsent,
    ]
}

/// `subtype` of App Store Server Notifications V2.
/// https://developer.apple.com/documentation/appstoreservernotifications/subtype
public struct Subtype: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let initialBuy = Self(rawValue: "INITIAL_BUY")
    public static let resubscribe = Self(rawValue: "RESUBSCRIBE")
    public static let downgrade = Self(rawValue: "DOWNGRADE")
    public static let upgrade = Self(rawValue: "UPGRADE")
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
    public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
    public static let voluntary = Self(rawValue: "VOLUNTARY")
    public static let billingRetry = Self(rawValue: "BILLING_RETRY")
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
    public static let pending = Self(rawValue: "PENDING")
    public static let accepted = Self(rawValue: "ACCEPTED")
    public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
    public static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")
    public static let summary = Self(rawValue: "SUMMARY")
    public static let failure = Self(rawValue: "FAILURE")
    public static let unreported = Self(rawValue: "UNREPORTED")
    public static let known: [Self] = [
        .initialBuy, .resubscribe, .downgrade, .upgrade, .autoRenewEnabled, .autoRenewDisabled, .voluntary,
        .billingRetry, .priceIncrease, .gracePeriod, .pending, .accepted, .billingRecovery, .productNotForSale,
        .summary, .failure, .unreported,
    ]
}

/// Why a customer asked for the refund a `CONSUMPTION_REQUEST` notification is about.
/// https://developer.apple.com/documentation/appstoreservernotifications/consumptionrequestreason
public struct ConsumptionRequestReason: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let unintendedPurchase = Self(rawValue: "UNINTENDED_PURCHASE")
    public static let fulfillmentIssue = Self(rawValue: "FULFILLMENT_ISSUE")
    public static let unsatisfiedWithPurchase = Self(rawValue: "UNSATISFIED_WITH_PURCHASE")
    public static let legal = Self(rawValue: "LEGAL")
    public static let other = Self(rawValue: "OTHER")
    public static let known: [Self] = [
        .unintendedPurchase, .fulfillmentIssue, .unsatisfiedWithPurchase, .legal, .other,
    ]
}

/// `type` of a transaction: the product type, with Apple's exact spelling.
/// https://developer.apple.com/documentation/appstoreserverapi/type
public struct ProductType: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let autoRenewable = Self(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    public static let consumable = Self(rawValue: "Consumable")
    public static let nonRenewing = Self(rawValue: "Non-Renewing Subscription")
    public static let known: [Self] = [.autoRenewable, .nonConsumable, .consumable, .nonRenewing]
}

/// https://developer.apple.com/documentation/appstoreserverapi/inappownershiptype
public struct InAppOwnershipType: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let purchased = Self(rawValue: "PURCHASED")
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    public static let known: [Self] = [.purchased, .familyShared]
}

/// https://developer.apple.com/documentation/appstoreserverapi/environment
public struct Environment: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let production = Self(rawValue: "Production")
    public static let sandbox = Self(rawValue: "Sandbox")
    public static let xcode = Self(rawValue: "Xcode")
    public static let localTesting = Self(rawValue: "LocalTesting")
    public static let known: [Self] = [.production, .sandbox, .xcode, .localTesting]

    /// What a wrong-environment artifact claims for an app in this environment: the other of Production and
    /// Sandbox (an app tested in Sandbox must reject Production artifacts just as the reverse).
    public var counterpart: Environment { self == .production ? .sandbox : .production }
    /// What an Xcode-environment artifact claims: Xcode, or LocalTesting for an app that is itself in Xcode.
    public var xcodeForgery: Environment { self == .xcode ? .localTesting : .xcode }
}

/// https://developer.apple.com/documentation/appstoreserverapi/transactionreason
public struct TransactionReason: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let purchase = Self(rawValue: "PURCHASE")
    public static let renewal = Self(rawValue: "RENEWAL")
    public static let known: [Self] = [.purchase, .renewal]
}

/// https://developer.apple.com/documentation/appstoreserverapi/offertype
public struct OfferType: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let introductory = Self(rawValue: 1)
    public static let promotional = Self(rawValue: 2)
    public static let offerCode = Self(rawValue: 3)
    public static let winBack = Self(rawValue: 4)
    public static let known: [Self] = [.introductory, .promotional, .offerCode, .winBack]
}

/// https://developer.apple.com/documentation/appstoreserverapi/offerdiscounttype
public struct OfferDiscountType: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let freeTrial = Self(rawValue: "FREE_TRIAL")
    public static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")
    public static let payUpFront = Self(rawValue: "PAY_UP_FRONT")
    public static let oneTime = Self(rawValue: "ONE_TIME")
    public static let known: [Self] = [.freeTrial, .payAsYouGo, .payUpFront, .oneTime]
}

/// https://developer.apple.com/documentation/appstoreserverapi/revocationreason
public struct RevocationReason: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let refundedForOtherReason = Self(rawValue: 0)
    public static let refundedDueToIssue = Self(rawValue: 1)
    public static let known: [Self] = [.refundedForOtherReason, .refundedDueToIssue]
}

/// https://developer.apple.com/documentation/appstoreserverapi/revocationtype
public struct RevocationType: OpenStringEnum {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let refundFull = Self(rawValue: "REFUND_FULL")
    public static let refundProrated = Self(rawValue: "REFUND_PRORATED")
    public static let familyRevoke = Self(rawValue: "FAMILY_REVOKE")
    public static let known: [Self] = [.refundFull, .refundProrated, .familyRevoke]
}

/// https://developer.apple.com/documentation/appstoreserverapi/autorenewstatus
public struct AutoRenewStatus: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let off = Self(rawValue: 0)
    public static let on = Self(rawValue: 1)
    public static let known: [Self] = [.off, .on]
}

/// https://developer.apple.com/documentation/appstoreserverapi/expirationintent
public struct ExpirationIntent: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let customerCancelled = Self(rawValue: 1)
    public static let billingError = Self(rawValue: 2)
    public static let customerDidNotConsentToPriceIncrease = Self(rawValue: 3)
    public static let productNotAvailable = Self(rawValue: 4)
    public static let other = Self(rawValue: 5)
    public static let known: [Self] = [
        .customerCancelled, .billingError, .customerDidNotConsentToPriceIncrease, .productNotAvailable, .other,
    ]
}

/// https://developer.apple.com/documentation/appstoreserverapi/priceincreasestatus
public struct PriceIncreaseStatus: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let customerHasNotResponded = Self(rawValue: 0)
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = Self(rawValue: 1)
    public static let known: [Self] = [.customerHasNotResponded, .customerConsentedOrWasNotifiedWithoutNeedingConsent]
}

/// Subscription status (docs/semantics.md#subscription-status). https://developer.apple.com/documentation/appstoreserverapi/status
public struct SubscriptionStatus: OpenIntEnum {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let active = Self(rawValue: 1)
    public static let expired = Self(rawValue: 2)
    public static let billingRetry = Self(rawValue: 3)
    public static let billingGracePeriod = Self(rawValue: 4)
    public static let revoked = Self(rawValue: 5)
    public static let known: [Self] = [.active, .expired, .billingRetry, .billingGracePeriod, .revoked]
}
