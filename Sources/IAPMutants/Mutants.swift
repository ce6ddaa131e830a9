import Foundation
import IAPModel
import IAPReference

/// The mutant catalogue: each mutant is the reference validator with exactly one real-world mistake from
/// docs/mistakes.md. The harness's power is measured by how many it catches, how fast, and how small the shrunk
/// counterexample is.
public enum Mutants {
    public struct Entry: Sendable {
        public var name: String
        /// Entry of docs/mistakes.md (its J number) this mutant implements.
        public var pitfall: String
        public var description: String
        public var make: @Sendable () -> ReferenceValidator
        /// The policy its mistake shows under, when the default hides it (`check` and `mutants` use it).
        public var policy: Policy? = nil
    }

    public static func named(_ name: String) -> Entry? { all.first { $0.name == name } }

    public static let all: [Entry] = [
        Entry(
            name: "ignore-revocation", pitfall: "J1",
            description: "treats a transaction as entitling even when revocationDate is set",
            make: { IgnoreRevocation() }),
        Entry(
            name: "expiry-from-duration", pitfall: "J2",
            description: "computes expiry as purchaseDate + product period instead of expiresDate",
            make: { ExpiryFromDuration() }),
        Entry(
            name: "array-order-latest", pitfall: "J3",
            description: "takes the first transaction of an API history page as the chain's latest",
            make: { ArrayOrderLatest() }),
        Entry(
            name: "latest-by-max-expires", pitfall: "J3",
            description:
                "takes the transaction with the latest expiresDate as the chain's latest, so an upgrade from a longer lower tier keeps the old product",
            make: { LatestByMaxExpires() }),
        Entry(
            name: "device-clock", pitfall: "J4",
            description: "evaluates expiry at the time the device claims, not the server's", make: { DeviceClock() }),
        Entry(
            name: "no-grace", pitfall: "J5",
            description: "ends access at expiresDate even during a billing grace period", make: { NoGrace() }),
        Entry(
            name: "retry-as-active", pitfall: "J6", description: "keeps entitling during billing retry without grace",
            make: { RetryAsActive() }),
        Entry(
            name: "static-grace", pitfall: "J7",
            description: "adds a fixed 3 days to every expiresDate, whatever the billing state", make: { StaticGrace() }
        ),
        Entry(
            name: "hardcoded-grace-length", pitfall: "J8",
            description: "assumes grace ends 16 days after expiry instead of reading gracePeriodExpiresDate",
            make: { HardcodedGraceLength() }),
        Entry(
            name: "consumable-double-credit", pitfall: "J9",
            description: "credits a consumable on every delivery instead of once per transactionId",
            make: { ConsumableDoubleCredit() }),
        Entry(
            name: "no-uuid-dedupe", pitfall: "J10",
            description:
                "processes every notification it receives, even one whose notificationUUID it has already seen",
            make: { NoUUIDDedupe() }),
        Entry(
            name: "arrival-order-wins", pitfall: "J11",
            description: "keeps the last-arrived version of a transaction or renewal info, not the last signed",
            make: { ArrivalOrderWins() }),
        Entry(
            name: "notification-type-as-state", pitfall: "J12",
            description: "treats any REFUND notification as revoking all of the user's subscriptions",
            make: { NotificationTypeAsState() }),
        Entry(
            name: "family-rejected", pitfall: "J13", description: "ignores FAMILY_SHARED transactions",
            make: { FamilyRejected() }),
        Entry(
            name: "family-as-owner", pitfall: "J14",
            description: "reports family-shared access as the user's own purchase", make: { FamilyAsOwner() }),
        Entry(
            name: "ignore-revoke", pitfall: "J15",
            description: "ignores revocationDate on FAMILY_SHARED transactions (REVOKE)", make: { IgnoreRevoke() }),
        Entry(
            name: "ignore-isupgraded", pitfall: "J16",
            description: "keeps granting an upgraded-from product until its original expiresDate",
            make: { IgnoreIsUpgraded() }),
        Entry(
            name: "downgrade-immediate", pitfall: "J18",
            description: "switches to autoRenewProductId as soon as a downgrade is requested",
            make: { DowngradeImmediate() }),
        Entry(
            name: "upgrade-deferred", pitfall: "J19",
            description: "keeps the old product until its period ends after an upgrade", make: { UpgradeDeferred() }),
        Entry(
            name: "crossgrade-deferred", pitfall: "J20",
            description: "treats a same-level, same-duration crossgrade as deferred to renewal",
            make: { CrossgradeDeferred() }),
        Entry(
            name: "cancel-is-expiry", pitfall: "J21",
            description: "ends access when auto-renew is turned off instead of at expiresDate",
            make: { CancelIsExpiry() }),
        Entry(
            name: "refund-irreversible", pitfall: "J22",
            description: "ignores REFUND_REVERSED: a revoked transaction stays revoked", make: { RefundIrreversible() }),
        Entry(
            name: "refund-retroactive", pitfall: "J23",
            description: "treats a refunded transaction as never having granted, also before its revocationDate",
            make: { RefundRetroactive() }),
        Entry(
            name: "old-period-refund-kills-current", pitfall: "J24",
            description: "ends the whole chain when any earlier period is refunded",
            make: { OldPeriodRefundKillsCurrent() }),
        Entry(
            name: "intro-per-product", pitfall: "J25",
            description: "checks intro eligibility per product, not per subscription group", make: { IntroPerProduct() }
        ),
        Entry(
            name: "intro-trial-flag-only", pitfall: "J26",
            description: "counts only free trials as a used introductory offer", make: { IntroTrialFlagOnly() }),
        Entry(
            name: "intro-from-offertype-any", pitfall: "J27",
            description: "counts any offer (promo, code, win-back) as a used introductory offer",
            make: { IntroFromAnyOffer() }),
        Entry(
            name: "env-mixup-accept", pitfall: "J28",
            description: "accepts transactions and notifications from another environment", make: { EnvMixupAccept() }),
        Entry(
            name: "bundle-unchecked", pitfall: "J30",
            description: "accepts artifacts of another bundleId or appAppleId", make: { BundleUnchecked() }),
        Entry(
            name: "wait-for-expired", pitfall: "J32", description: "keeps access until an EXPIRED notification arrives",
            make: { WaitForExpired() }),
        Entry(
            name: "incomplete-renewal-info-rejected", pitfall: "J33",
            description:
                "rejects a GRACE_PERIOD notification without gracePeriodExpiresDate and an EXPIRED one without expirationIntent",
            make: { IncompleteRenewalInfoRejected() }),
        Entry(
            name: "extension-ignored", pitfall: "J34", description: "ignores RENEWAL_EXTENDED notifications",
            make: { NotificationTypeDropped("extension-ignored", .renewalExtended) }),
        Entry(
            name: "price-pending-revokes", pitfall: "J35",
            description: "revokes access while a price increase awaits consent", make: { PricePendingRevokes() }),
        Entry(
            name: "nonrenewing-lifetime", pitfall: "J37",
            description: "treats a non-renewing subscription without expiresDate as lifetime access",
            make: { NonRenewingLifetime() }),
        Entry(
            name: "boundary-inclusive", pitfall: "J39",
            description: "treats t == expiresDate as still active (closed interval)", make: { BoundaryInclusive() }),
        Entry(
            name: "data-required", pitfall: "J40",
            description:
                "rejects notifications without data (RENEWAL_EXTENSION/SUMMARY, EXTERNAL_PURCHASE_TOKEN), so Apple retries them",
            make: { DataRequired() }),
        Entry(
            name: "unknown-type-rejected", pitfall: "J40",
            description: "rejects notifications with an unknown type or subtype, so Apple retries forever",
            make: { UnknownTypeRejected() }),
        Entry(
            name: "consumables-only-from-notifications", pitfall: "J42",
            description: "never credits consumables submitted by the app, waiting for a notification",
            make: { ConsumablesOnlyFromNotifications() }),
        Entry(
            name: "grace-assumed-after-trial", pitfall: "J43",
            description:
                "in billing retry without a grace date, assumes the app's grace period applies (also after a free trial when grace is for paid renewals only)",
            make: { GraceAssumedAfterTrial() }),
        Entry(
            name: "appaccounttoken-required", pitfall: "J44",
            description: "rejects app transactions without appAccountToken (family shares, offer codes)",
            make: { AppAccountTokenRequired() }),
        Entry(
            name: "offer-redeemed-dropped", pitfall: "J47",
            description:
                "takes OFFER_REDEEMED for news about an existing subscription and drops it, so a purchase made with an offer code or a promotional offer is missed",
            make: { NotificationTypeDropped("offer-redeemed-dropped", .offerRedeemed) }),
        Entry(
            name: "one-time-charge-dropped", pitfall: "J48",
            description:
                "acknowledges ONE_TIME_CHARGE without reading it (written when Apple sent it only in the sandbox), so a one-time purchase the app never reported is missed",
            make: { NotificationTypeDropped("one-time-charge-dropped", .oneTimeCharge) }),
        Entry(
            name: "recent-window", pitfall: "J49",
            description:
                "counts a customer's consumables over the 10 most recent purchases only (a fixed window of recent transactions)",
            make: { RecentWindow() }),
        Entry(
            name: "signed-date-watermark", pitfall: "J55",
            description:
                "drops a notification signed before the last one it processed about the same subscription, losing what a late notification says",
            make: { SignedDateWatermark() }),
        Entry(
            name: "history-first-page", pitfall: "J50",
            description: "reads the first page of Get Transaction History and never follows revision while hasMore",
            make: { HistoryFirstPage() }),
        Entry(
            name: "history-one-chain", pitfall: "J51",
            description:
                "takes a history answer to be about the chain it asked with and drops the customer's other chains' transactions and statuses",
            make: { HistoryOneChain() }),
        Entry(
            name: "transaction-required", pitfall: "J52",
            description:
                "answers 400 to a notification whose data carries no signed transaction (a TEST notification), as a handler that unwraps signedTransactionInfo does",
            make: { TransactionRequired() }),
        Entry(
            name: "duplicate-rejected", pitfall: "J53",
            description:
                "answers an error to a notification whose notificationUUID it has seen, so Apple's byte-identical retry of a notification whose answer was lost is refused",
            make: { DuplicateRejected() }),
        Entry(
            name: "consumption-request-revokes", pitfall: "J46",
            description: "takes a CONSUMPTION_REQUEST (a refund asked for, not granted) as the refund itself",
            make: { ConsumptionRequestRevokes() }),
        Entry(
            name: "period-per-transaction-id", pitfall: "J45",
            description:
                "keeps each transactionId of a restored or re-granted purchase apart, so a refund under one id still grants through another",
            make: { PeriodPerTransactionId() }),
        Entry(
            name: "skip-signature", pitfall: "J31",
            description: "checks the certificate chain but never the JWS signature",
            make: { VerifierMutant("skip-signature") { $0.verifySignature = false } }),
        Entry(
            name: "skip-chain", pitfall: "J31",
            description: "verifies the signature with the x5c leaf key without checking the chain",
            make: { VerifierMutant("skip-chain") { $0.verifyChain = false } }),
        Entry(
            name: "trust-embedded-root", pitfall: "J31", description: "trusts the root certificate carried in x5c[2]",
            make: { VerifierMutant("trust-embedded-root") { $0.trustEmbeddedRoot = true } }),
        Entry(
            name: "skip-oid-check", pitfall: "J31",
            description: "does not require Apple's OIDs on the leaf and intermediate",
            make: { VerifierMutant("skip-oid-check") { $0.checkOIDs = false } }),
        Entry(
            name: "ignore-certificate-dates", pitfall: "J31",
            description: "does not check certificate validity at signedDate",
            make: { VerifierMutant("ignore-certificate-dates") { $0.checkValidityDates = false } }),
        Entry(
            name: "certificate-dates-at-delivery", pitfall: "J31",
            description: "checks certificate validity at the time of delivery, not at the token's signedDate",
            make: { CertificateDatesAtDelivery() }),
        Entry(
            name: "no-size-limit", pitfall: "J31",
            description:
                "accepts tokens of any size, whatever limit the app declares (under policy tokenSizeLimit 262144)",
            make: { VerifierMutant("no-size-limit") { $0.maxTokenBytes = .max } },
            policy: Policy(tokenSizeLimit: 262_144)),
        Entry(
            name: "api-answers-unverified", pitfall: "J31",
            description:
                "trusts App Store Server API answers without verifying the JWS in them (they came over TLS from Apple)",
            make: { APIAnswersUnverified() }),
        Entry(
            name: "nested-jws-unverified", pitfall: "J31",
            description: "verifies a notification's envelope but decodes its nested transaction unverified",
            make: { NestedUnverified() }),
        Entry(
            name: "upgrade-as-refund", pitfall: "J17",
            description: "legacy: reads cancellation_date on an upgraded entry as a refund of the whole subscription",
            make: { UpgradeAsRefund() }),
        Entry(
            name: "first-pending-renewal-for-all", pitfall: "J56",
            description:
                "legacy: applies pending_renewal_info[0] to every subscription of a receipt, so one chain's grace or billing retry becomes the other's",
            make: { FirstPendingRenewalForAll() }),
        Entry(
            name: "legacy-in-app-only", pitfall: "J54",
            description:
                "legacy: reads the receipt's in_app and never latest_receipt_info, so a receipt made before renewals, refunds or grace misses them",
            make: { LegacyInAppOnly() }),
        Entry(
            name: "legacy-status-unchecked", pitfall: "J57",
            description:
                "legacy: reads the receipt of a verifyReceipt answer whatever its status, a missing status counting as 0",
            make: { LegacyStatusUnchecked() }),
        Entry(
            name: "month-overflow", pitfall: "J58",
            description:
                "adds months to a non-renewing purchase as Date.setMonth does: a day the target month lacks spills into the next (31 January + 1 month is 3 March, not 28 February)",
            make: { MonthOverflow() }),
        Entry(
            name: "past-from-current-state", pitfall: "J59",
            description:
                "answers a question about an instant more than a day before the newest fact it holds from the current state (a per-user entitlement row and one day of events), so \"was this customer entitled last week?\" gets today's answer",
            make: { PastFromCurrentState() }),
        Entry(
            name: "legacy-first-entry-latest", pitfall: "J3",
            description: "legacy: takes the first latest_receipt_info entry of a chain as its latest transaction",
            make: { LegacyFirstEntryLatest() }),
        Entry(
            name: "check-then-act-credit", pitfall: "race",
            description: "dedupes consumable credits with check-then-act on shared state (caught by --parallel)",
            make: { CheckThenActCredit() }),
        Entry(
            name: "unlinked-notifications-dropped", pitfall: "J44",
            description: "drops notifications for chains not yet linked to a user",
            make: { UnlinkedNotificationsDropped() }),
    ]
}
