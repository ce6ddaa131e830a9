import IAPModel

/// The scenario families of docs/semantics.md#scenario-families; each simulated action belongs to one, and coverage counts them.
public enum ScenarioFamily: String, Codable, Hashable, Sendable, CaseIterable {
    case buySubscription = "buy-subscription"
    case buyConsumable = "buy-consumable"
    case buyNonConsumable = "buy-non-consumable"
    case buyNonRenewing = "buy-non-renewing"
    case renew
    case billingFailureGrace = "billing-failure-grace"
    case billingFailureNoGrace = "billing-failure-no-grace"
    /// Grace given, but the renewal info says `isInBillingRetryPeriod: false`.
    case graceWithoutRetryFlag = "grace-without-retry-flag"
    /// No grace given, but the notification's subtype says `GRACE_PERIOD` (and the renewal info has no grace date).
    case gracePeriodWithoutDate = "grace-period-without-date"
    case recoverInGrace = "recover-in-grace"
    case recoverAfterGrace = "recover-after-grace"
    case graceExpired = "grace-expired"
    case retryExhausted = "retry-exhausted"
    case cancel
    case reenable
    case expireVoluntary = "expire-voluntary"
    /// Expires (auto-renew off) with renewal info that has no `expirationIntent`.
    case expiredWithoutIntent = "expired-without-intent"
    case upgrade
    case downgrade
    case crossgradeImmediate = "crossgrade-immediate"
    case crossgradeDeferred = "crossgrade-deferred"
    case revertDowngrade = "revert-downgrade"
    case refund
    case refundDeclined = "refund-declined"
    /// A customer asks for a refund of a consumable or an auto-renewable subscription: `CONSUMPTION_REQUEST`, hours
    /// before Apple decides (nothing changes until then).
    case refundRequested = "refund-requested"
    case refundReversed = "refund-reversed"
    case familyShare = "family-share"
    case familyStopSharing = "family-stop-sharing"
    case familyLeave = "family-leave"
    case extendRenewal = "extend-renewal"
    /// The developer extends every eligible subscriber of a product; a `RENEWAL_EXTENSION`/`SUMMARY` follows.
    case extendRenewalForAll = "extend-renewal-for-all"
    /// An `EXTERNAL_PURCHASE_TOKEN`/`UNREPORTED` notification (no `data`; nothing to grant).
    case externalPurchaseToken = "external-purchase-token"
    /// The developer asks for a `TEST` notification (Request a Test Notification): `data` names the app, no
    /// transaction (nothing to grant).
    case testNotification = "test-notification"
    case priceIncreaseConsent = "price-increase-consent"
    case priceIncreaseNoConsent = "price-increase-no-consent"
    case introOffer = "intro-offer"
    case promotionalOffer = "promotional-offer"
    case offerCode = "offer-code"
    case winBackOffer = "win-back-offer"
    case resubscribe
    case restore
}
