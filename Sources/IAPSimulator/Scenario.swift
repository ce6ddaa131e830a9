import IAPModel

/// A simulated person: an Apple Account with an app account in the app under test.
public struct Person: Codable, Hashable, Sendable {
    public var index: Int
    /// Short name for timelines: `u1`, `u2`, …
    public var name: String
    /// The app account id; the app sets it as `appAccountToken` on purchases made in the app.
    public var accountId: String
    /// Family Sharing group, if any (all family members of a case share one group).
    public var familyId: Int?

    public init(index: Int, familyId: Int?) {
        self.index = index
        self.name = "u\(index + 1)"
        let hex = String(index + 1, radix: 16)
        self.accountId = "a1b2c3d4-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.count) + hex
        self.familyId = familyId
    }
}

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

/// One line of the store's history: what happened, when (Apple time), to whom.
public struct StoreEvent: Codable, Hashable, Sendable {
    public var time: Millis
    public var person: Int
    public var family: ScenarioFamily
    public var summary: String
    /// For a product change in a subscription group: the product left and the product chosen.
    public var change: ProductMove?
    /// The generator action that made it (one "time passes" action makes years of renewals). Absent in cases saved
    /// before it existed.
    public var action: Int?

    public init(time: Millis, person: Int, family: ScenarioFamily, summary: String, change: ProductMove? = nil, action: Int? = nil) {
        self.time = time
        self.person = person
        self.family = family
        self.summary = summary
        self.change = change
        self.action = action
    }
}

/// A customer's move from one product of a subscription group to another.
public struct ProductMove: Codable, Hashable, Sendable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// How the move goes in level of service and in duration, as `level-duration`: `up`, `down` or `same`
    /// (level 1 is the highest), then `shorter`, `longer` or `same` (coverage counts each of the nine).
    public func direction(in catalog: Catalog) -> String? {
        guard let p = catalog.product(from), let q = catalog.product(to), let dp = p.period?.approximateDays,
              let dq = q.period?.approximateDays else { return nil }
        let lp = p.level ?? 1, lq = q.level ?? 1
        let level = lq < lp ? "up" : lq > lp ? "down" : "same"
        let duration = dq < dp ? "shorter" : dq > dp ? "longer" : "same"
        return level + "-" + duration
    }

    /// The nine directions.
    public static let directions: [String] = ["up", "same", "down"].flatMap { l in ["shorter", "same", "longer"].map { l + "-" + $0 } }
}

/// A truth interval: person may use product during `[start, end)` (docs/semantics.md#grant-intervals), as the simulator knows it.
public struct TruthSegment: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable { case paid, grace }
    public var person: Int
    public var productId: String
    public var chainId: String
    public var start: Millis
    public var end: Millis
    public var kind: Kind
    public var ownership: InAppOwnershipType
    /// The end the customer is told of while the segment lasts: the period's expiry (also when a refund or an
    /// upgrade later cuts the segment short), a grace period's end, a non-renewing purchase's end; nil for a
    /// non-consumable. An extension starts a new segment with the new end.
    public var promisedEnd: Millis?
}

/// A chain's standing from `time` on, as the simulator keeps it (not read from signed payloads): the product of
/// its current period, when that period began, and what the product's state is once the period no longer grants
/// (`revoked`, `billing-retry` or `expired`). Recorded whenever the chain changes.
public struct ChainMark: Codable, Hashable, Sendable {
    public var chainId: String
    public var person: Int
    public var time: Millis
    public var productId: String
    public var periodStart: Millis
    public var lapsed: EntitlementState
}

/// A consumable credit or debit in the truth ledger.
public struct LedgerEntry: Codable, Hashable, Sendable {
    public var person: Int
    public var productId: String
    public var time: Millis
    public var delta: Int
    public var transactionId: String
    public var clawback: Bool
}

/// A transaction the store created, with how its owner's app learns about it.
public struct TransactionCreation: Codable, Hashable, Sendable {
    public var transactionId: String
    public var chainId: String
    public var person: Int
    public var time: Millis
    /// Made in the app (the app submits it at once); otherwise (offer code, family share, renewal) the app sees it
    /// when it next opens.
    public var inApp: Bool
}

/// A notification the store emitted, with the chain and person it concerns.
public struct EmittedNotification: Codable, Hashable, Sendable {
    public var payload: ResponseBodyV2DecodedPayload
    /// Nil for a notification about the app rather than one subscription (`summary`, `externalPurchaseToken`).
    public var chainId: String?
    public var person: Int
}
