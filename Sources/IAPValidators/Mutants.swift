import Foundation
import IAPModel

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
    }

    public static func named(_ name: String) -> Entry? { all.first { $0.name == name } }

    public static let all: [Entry] = [
        Entry(name: "ignore-revocation", pitfall: "J1", description: "treats a transaction as entitling even when revocationDate is set", make: { IgnoreRevocation() }),
        Entry(name: "expiry-from-duration", pitfall: "J2", description: "computes expiry as purchaseDate + product period instead of expiresDate", make: { ExpiryFromDuration() }),
        Entry(name: "array-order-latest", pitfall: "J3", description: "takes the first transaction of an API history page as the chain's latest", make: { ArrayOrderLatest() }),
        Entry(name: "latest-by-max-expires", pitfall: "J3", description: "takes the transaction with the latest expiresDate as the chain's latest, so an upgrade from a longer lower tier keeps the old product", make: { LatestByMaxExpires() }),
        Entry(name: "device-clock", pitfall: "J4", description: "evaluates expiry at the time the device claims, not the server's", make: { DeviceClock() }),
        Entry(name: "no-grace", pitfall: "J5", description: "ends access at expiresDate even during a billing grace period", make: { NoGrace() }),
        Entry(name: "retry-as-active", pitfall: "J6", description: "keeps entitling during billing retry without grace", make: { RetryAsActive() }),
        Entry(name: "static-grace", pitfall: "J7", description: "adds a fixed 3 days to every expiresDate, whatever the billing state", make: { StaticGrace() }),
        Entry(name: "hardcoded-grace-length", pitfall: "J8", description: "assumes grace ends 16 days after expiry instead of reading gracePeriodExpiresDate", make: { HardcodedGraceLength() }),
        Entry(name: "consumable-double-credit", pitfall: "J9", description: "credits a consumable on every delivery instead of once per transactionId", make: { ConsumableDoubleCredit() }),
        Entry(name: "no-uuid-dedupe", pitfall: "J10", description: "processes every notification it receives, even one whose notificationUUID it has already seen", make: { NoUUIDDedupe() }),
        Entry(name: "arrival-order-wins", pitfall: "J11", description: "keeps the last-arrived version of a transaction or renewal info, not the last signed", make: { ArrivalOrderWins() }),
        Entry(name: "notification-type-as-state", pitfall: "J12", description: "treats any REFUND notification as revoking all of the user's subscriptions", make: { NotificationTypeAsState() }),
        Entry(name: "family-rejected", pitfall: "J13", description: "ignores FAMILY_SHARED transactions", make: { FamilyRejected() }),
        Entry(name: "family-as-owner", pitfall: "J14", description: "reports family-shared access as the user's own purchase", make: { FamilyAsOwner() }),
        Entry(name: "ignore-revoke", pitfall: "J15", description: "ignores revocationDate on FAMILY_SHARED transactions (REVOKE)", make: { IgnoreRevoke() }),
        Entry(name: "ignore-isupgraded", pitfall: "J16", description: "keeps granting an upgraded-from product until its original expiresDate", make: { IgnoreIsUpgraded() }),
        Entry(name: "downgrade-immediate", pitfall: "J18", description: "switches to autoRenewProductId as soon as a downgrade is requested", make: { DowngradeImmediate() }),
        Entry(name: "upgrade-deferred", pitfall: "J19", description: "keeps the old product until its period ends after an upgrade", make: { UpgradeDeferred() }),
        Entry(name: "crossgrade-deferred", pitfall: "J20", description: "treats a same-level, same-duration crossgrade as deferred to renewal", make: { CrossgradeDeferred() }),
        Entry(name: "cancel-is-expiry", pitfall: "J21", description: "ends access when auto-renew is turned off instead of at expiresDate", make: { CancelIsExpiry() }),
        Entry(name: "refund-irreversible", pitfall: "J22", description: "ignores REFUND_REVERSED: a revoked transaction stays revoked", make: { RefundIrreversible() }),
        Entry(name: "refund-retroactive", pitfall: "J23", description: "treats a refunded transaction as never having granted, also before its revocationDate", make: { RefundRetroactive() }),
        Entry(name: "old-period-refund-kills-current", pitfall: "J24", description: "ends the whole chain when any earlier period is refunded", make: { OldPeriodRefundKillsCurrent() }),
        Entry(name: "intro-per-product", pitfall: "J25", description: "checks intro eligibility per product, not per subscription group", make: { IntroPerProduct() }),
        Entry(name: "intro-trial-flag-only", pitfall: "J26", description: "counts only free trials as a used introductory offer", make: { IntroTrialFlagOnly() }),
        Entry(name: "intro-from-offertype-any", pitfall: "J27", description: "counts any offer (promo, code, win-back) as a used introductory offer", make: { IntroFromAnyOffer() }),
        Entry(name: "env-mixup-accept", pitfall: "J28", description: "accepts transactions and notifications from another environment", make: { EnvMixupAccept() }),
        Entry(name: "bundle-unchecked", pitfall: "J30", description: "accepts artifacts of another bundleId or appAppleId", make: { BundleUnchecked() }),
        Entry(name: "wait-for-expired", pitfall: "J32", description: "keeps access until an EXPIRED notification arrives", make: { WaitForExpired() }),
        Entry(name: "incomplete-renewal-info-rejected", pitfall: "J33", description: "rejects a GRACE_PERIOD notification without gracePeriodExpiresDate and an EXPIRED one without expirationIntent", make: { IncompleteRenewalInfoRejected() }),
        Entry(name: "extension-ignored", pitfall: "J34", description: "ignores RENEWAL_EXTENDED notifications", make: { NotificationTypeDropped("extension-ignored", .renewalExtended) }),
        Entry(name: "price-pending-revokes", pitfall: "J35", description: "revokes access while a price increase awaits consent", make: { PricePendingRevokes() }),
        Entry(name: "nonrenewing-lifetime", pitfall: "J37", description: "treats a non-renewing subscription without expiresDate as lifetime access", make: { NonRenewingLifetime() }),
        Entry(name: "boundary-inclusive", pitfall: "J39", description: "treats t == expiresDate as still active (closed interval)", make: { BoundaryInclusive() }),
        Entry(name: "data-required", pitfall: "J40", description: "rejects notifications without data (RENEWAL_EXTENSION/SUMMARY, EXTERNAL_PURCHASE_TOKEN), so Apple retries them", make: { DataRequired() }),
        Entry(name: "unknown-type-rejected", pitfall: "J40", description: "rejects notifications with an unknown type or subtype, so Apple retries forever", make: { UnknownTypeRejected() }),
        Entry(name: "consumables-only-from-notifications", pitfall: "J42", description: "never credits consumables submitted by the app, waiting for a notification", make: { ConsumablesOnlyFromNotifications() }),
        Entry(name: "grace-assumed-after-trial", pitfall: "J43", description: "in billing retry without a grace date, assumes the app's grace period applies (also after a free trial when grace is for paid renewals only)", make: { GraceAssumedAfterTrial() }),
        Entry(name: "appaccounttoken-required", pitfall: "J44", description: "rejects app transactions without appAccountToken (family shares, offer codes)", make: { AppAccountTokenRequired() }),
        Entry(name: "offer-redeemed-dropped", pitfall: "J47", description: "takes OFFER_REDEEMED for news about an existing subscription and drops it, so a purchase made with an offer code or a promotional offer is missed", make: { NotificationTypeDropped("offer-redeemed-dropped", .offerRedeemed) }),
        Entry(name: "one-time-charge-dropped", pitfall: "J48", description: "acknowledges ONE_TIME_CHARGE without reading it (written when Apple sent it only in the sandbox), so a one-time purchase the app never reported is missed", make: { NotificationTypeDropped("one-time-charge-dropped", .oneTimeCharge) }),
        Entry(name: "recent-window", pitfall: "J49", description: "counts a customer's consumables over the 10 most recent purchases only (a fixed window of recent transactions)", make: { RecentWindow() }),
        Entry(name: "history-first-page", pitfall: "J50", description: "reads the first page of Get Transaction History and never follows revision while hasMore", make: { HistoryFirstPage() }),
        Entry(name: "history-one-chain", pitfall: "J51", description: "takes a history answer to be about the chain it asked with and drops the customer's other chains' transactions and statuses", make: { HistoryOneChain() }),
        Entry(name: "transaction-required", pitfall: "J52", description: "answers 400 to a notification whose data carries no signed transaction (a TEST notification), as a handler that unwraps signedTransactionInfo does", make: { TransactionRequired() }),
        Entry(name: "duplicate-rejected", pitfall: "J53", description: "answers an error to a notification whose notificationUUID it has seen, so Apple's byte-identical retry of a notification whose answer was lost is refused", make: { DuplicateRejected() }),
        Entry(name: "consumption-request-revokes", pitfall: "J46", description: "takes a CONSUMPTION_REQUEST (a refund asked for, not granted) as the refund itself", make: { ConsumptionRequestRevokes() }),
        Entry(name: "period-per-transaction-id", pitfall: "J45", description: "keeps each transactionId of a restored or re-granted purchase apart, so a refund under one id still grants through another", make: { PeriodPerTransactionId() }),
        Entry(name: "skip-signature", pitfall: "J31", description: "checks the certificate chain but never the JWS signature", make: { VerifierMutant("skip-signature") { $0.verifySignature = false } }),
        Entry(name: "skip-chain", pitfall: "J31", description: "verifies the signature with the x5c leaf key without checking the chain", make: { VerifierMutant("skip-chain") { $0.verifyChain = false } }),
        Entry(name: "trust-embedded-root", pitfall: "J31", description: "trusts the root certificate carried in x5c[2]", make: { VerifierMutant("trust-embedded-root") { $0.trustEmbeddedRoot = true } }),
        Entry(name: "skip-oid-check", pitfall: "J31", description: "does not require Apple's OIDs on the leaf and intermediate", make: { VerifierMutant("skip-oid-check") { $0.checkOIDs = false } }),
        Entry(name: "ignore-certificate-dates", pitfall: "J31", description: "does not check certificate validity at signedDate", make: { VerifierMutant("ignore-certificate-dates") { $0.checkValidityDates = false } }),
        Entry(name: "certificate-dates-at-delivery", pitfall: "J31", description: "checks certificate validity at the time of delivery, not at the token's signedDate", make: { CertificateDatesAtDelivery() }),
        Entry(name: "no-size-limit", pitfall: "J31", description: "accepts tokens of any size", make: { VerifierMutant("no-size-limit") { $0.maxTokenBytes = .max } }),
        Entry(name: "api-answers-unverified", pitfall: "J31", description: "trusts App Store Server API answers without verifying the JWS in them (they came over TLS from Apple)", make: { APIAnswersUnverified() }),
        Entry(name: "nested-jws-unverified", pitfall: "J31", description: "verifies a notification's envelope but decodes its nested transaction unverified", make: { NestedUnverified() }),
        Entry(name: "upgrade-as-refund", pitfall: "J17", description: "legacy: reads cancellation_date on an upgraded entry as a refund of the whole subscription", make: { UpgradeAsRefund() }),
        Entry(name: "legacy-first-entry-latest", pitfall: "J3", description: "legacy: takes the first latest_receipt_info entry of a chain as its latest transaction", make: { LegacyFirstEntryLatest() }),
        Entry(name: "check-then-act-credit", pitfall: "race", description: "dedupes consumable credits with check-then-act on shared state (caught by --parallel)", make: { CheckThenActCredit() }),
        Entry(name: "unlinked-notifications-dropped", pitfall: "J44", description: "drops notifications for chains not yet linked to a user", make: { UnlinkedNotificationsDropped() }),
    ]
}

// MARK: - The mutants (each overrides one decision of the reference validator)

final class IgnoreRevocation: ReferenceValidator {
    override var name: String { "mutant:ignore-revocation" }
    override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool { false }
}

final class ExpiryFromDuration: ReferenceValidator {
    override var name: String { "mutant:expiry-from-duration" }
    override func expiry(of tx: JWSTransactionDecodedPayload) -> Millis? {
        product(tx.productId)?.period?.added(to: tx.purchaseDate) ?? tx.expiresDate
    }
}

/// Shared by the mutants that trust an array's order: the transaction a delivery listed first is pinned as its
/// chain's latest until a notification about the chain arrives.
class PinnedLatestMutant: ReferenceValidator {
    var pinned: [String: String] = [:]
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        pinned = [:]
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let v = super.ingestNotification(n)
        if let tx = n.data?.transactionInfo { pinned[tx.originalTransactionId] = nil }
        return v
    }
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis) -> JWSTransactionDecodedPayload? {
        if let id = pinned[otid], let tx = txs.first(where: { $0.transactionId == id }) { return tx }
        return super.latestTransaction(txs, chain: otid, at: t)
    }
}

final class LatestByMaxExpires: ReferenceValidator {
    override var name: String { "mutant:latest-by-max-expires" }
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis) -> JWSTransactionDecodedPayload? {
        txs.max { ($0.expiresDate ?? 0, $0.purchaseDate) < ($1.expiresDate ?? 0, $1.purchaseDate) }
    }
}

final class ArrayOrderLatest: PinnedLatestMutant {
    override var name: String { "mutant:array-order-latest" }
    override func ingestSnapshot(_ s: APISnapshot) -> DeliveryVerdict {
        let v = super.ingestSnapshot(s)
        guard v.isAccepted else { return v }
        // The first-listed transaction of each chain in the answer taken as its latest.
        for tx in s.transactions.reversed() { pinned[tx.originalTransactionId] = tx.transactionId }
        return v
    }
}

final class DeviceClock: ReferenceValidator {
    override var name: String { "mutant:device-clock" }
    override func evaluationInstant(_ q: EntitlementQuery) -> Millis { q.deviceTime ?? q.at }
}

final class NoGrace: ReferenceValidator {
    override var name: String { "mutant:no-grace" }
    override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? { nil }
}

final class RetryAsActive: ReferenceValidator {
    override var name: String { "mutant:retry-as-active" }
    override func isEntitled(_ s: SubscriptionStatus) -> Bool { s == .active || s == .billingGracePeriod || s == .billingRetry }
}

final class StaticGrace: ReferenceValidator {
    override var name: String { "mutant:static-grace" }
    override func expiry(of tx: JWSTransactionDecodedPayload) -> Millis? { tx.expiresDate.map { $0 + 3 * 86_400_000 } }
}

final class HardcodedGraceLength: ReferenceValidator {
    override var name: String { "mutant:hardcoded-grace-length" }
    override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? {
        guard renewal?.gracePeriodExpiresDate != nil, let e = latest.expiresDate else { return nil }
        return e + 16 * 86_400_000
    }
}

final class ConsumableDoubleCredit: ReferenceValidator {
    override var name: String { "mutant:consumable-double-credit" }
    var deliveries = 0
    override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: String) {
        deliveries += 1
        var copy = tx
        copy.transactionId += "#\(deliveries)"
        consumableCredits[copy.transactionId] = copy
    }
}

final class ArrivalOrderWins: ReferenceValidator {
    override var name: String { "mutant:arrival-order-wins" }
    override func shouldReplace(_ oldSigned: Millis, with newSigned: Millis, old: JWSTransactionDecodedPayload?, new: JWSTransactionDecodedPayload?) -> Bool { true }
}

final class NotificationTypeAsState: ReferenceValidator {
    override var name: String { "mutant:notification-type-as-state" }
    var revokedUsers: [String: Millis] = [:]
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        revokedUsers = [:]
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let v = super.ingestNotification(n)
        if v.isAccepted, n.notificationType == .refund, let tx = n.data?.transactionInfo, let u = user(ofChain: tx.originalTransactionId) {
            revokedUsers[u] = min(revokedUsers[u] ?? .max, tx.revocationDate ?? n.signedDate)
        }
        return v
    }
    override func status(latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload], renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis) -> SubscriptionStatus {
        if let u = user(ofChain: otid), let r = revokedUsers[u], r <= t { return .revoked }
        return super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
    }
}

final class FamilyRejected: ReferenceValidator {
    override var name: String { "mutant:family-rejected" }
    override func includes(_ tx: JWSTransactionDecodedPayload) -> Bool { tx.inAppOwnershipType != .familyShared }
}

final class FamilyAsOwner: ReferenceValidator {
    override var name: String { "mutant:family-as-owner" }
    override func ownership(_ tx: JWSTransactionDecodedPayload) -> InAppOwnershipType { .purchased }
}

final class IgnoreRevoke: ReferenceValidator {
    override var name: String { "mutant:ignore-revoke" }
    override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool {
        tx.inAppOwnershipType == .familyShared ? false : super.isRevoked(tx, at: t)
    }
}

/// Answers per product from each product's own latest transaction, so an upgraded-from product stays active.
final class IgnoreIsUpgraded: ReferenceValidator {
    override var name: String { "mutant:ignore-isupgraded" }
    override func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        var answer = try super.entitlements(q)
        let t = q.at
        for (otid, chain) in chains where user(ofChain: otid) == q.userId {
            for tx in chain.transactions.values where tx.isUpgraded == true && !isRevoked(tx, at: t) {
                guard let e = tx.expiresDate, tx.purchaseDate <= t, t < e else { continue }
                if let i = answer.products.firstIndex(where: { $0.productId == tx.productId }) {
                    answer.products[i] = ProductEntitlement(productId: tx.productId, active: true, state: .active, expiresDate: e, ownership: tx.inAppOwnershipType)
                }
            }
        }
        return answer
    }
}

final class DowngradeImmediate: ReferenceValidator {
    override var name: String { "mutant:downgrade-immediate" }
    override func entitledProduct(latest: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?) -> String {
        renewal?.autoRenewProductId ?? latest.productId
    }
}

/// Keeps the earliest still-running period as current, so a mid-period PURCHASE waits for the old one to end.
class UpgradeDeferred: ReferenceValidator {
    override var name: String { "mutant:upgrade-deferred" }
    func defers(from old: JWSTransactionDecodedPayload, to new: JWSTransactionDecodedPayload) -> Bool { true }
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis) -> JWSTransactionDecodedPayload? {
        guard let latest = super.latestTransaction(txs, chain: otid, at: t) else { return nil }
        if latest.transactionReason == .purchase,
            let old = txs.last(where: { $0.isUpgraded == true && $0.purchaseDate < latest.purchaseDate && ($0.expiresDate ?? 0) > t && !isRevoked($0, at: t) }),
            defers(from: old, to: latest) {
            return old
        }
        return latest
    }
}

final class CrossgradeDeferred: UpgradeDeferred {
    override var name: String { "mutant:crossgrade-deferred" }
    override func defers(from old: JWSTransactionDecodedPayload, to new: JWSTransactionDecodedPayload) -> Bool {
        product(old.productId)?.level == product(new.productId)?.level
    }
}

final class CancelIsExpiry: ReferenceValidator {
    override var name: String { "mutant:cancel-is-expiry" }
    override func status(latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload], renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis) -> SubscriptionStatus {
        let s = super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
        return s == .active && renewal?.autoRenewStatus == .off ? .expired : s
    }
}

final class RefundIrreversible: ReferenceValidator {
    override var name: String { "mutant:refund-irreversible" }
    override func shouldReplace(_ oldSigned: Millis, with newSigned: Millis, old: JWSTransactionDecodedPayload?, new: JWSTransactionDecodedPayload?) -> Bool {
        if let old, let new, old.revocationDate != nil, new.revocationDate == nil { return false }
        return super.shouldReplace(oldSigned, with: newSigned, old: old, new: new)
    }
}

final class RefundRetroactive: ReferenceValidator {
    override var name: String { "mutant:refund-retroactive" }
    override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool { tx.revocationDate != nil }
}

final class PeriodPerTransactionId: ReferenceValidator {
    override var name: String { "mutant:period-per-transaction-id" }
    override func onePerPurchase(_ txs: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload] { txs }
}

final class OldPeriodRefundKillsCurrent: ReferenceValidator {
    override var name: String { "mutant:old-period-refund-kills-current" }
    override func status(latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload], renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis) -> SubscriptionStatus {
        if txs.contains(where: { isRevoked($0, at: t) }) { return .revoked }
        return super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
    }
}

final class IntroPerProduct: ReferenceValidator {
    override var name: String { "mutant:intro-per-product" }
    override func introEligible(group: String, own txs: [JWSTransactionDecodedPayload]) -> Bool {
        // Looks only at the group's first product, as if eligibility were per product.
        guard let first = config.catalog.products(inGroup: group).first else { return true }
        return !txs.contains { $0.productId == first.id && $0.offerType == .introductory }
    }
}

final class IntroTrialFlagOnly: ReferenceValidator {
    override var name: String { "mutant:intro-trial-flag-only" }
    override func introEligible(group: String, own txs: [JWSTransactionDecodedPayload]) -> Bool {
        !txs.contains { $0.offerType == .introductory && $0.offerDiscountType == .freeTrial }
    }
}

final class IntroFromAnyOffer: ReferenceValidator {
    override var name: String { "mutant:intro-from-offertype-any" }
    override func introEligible(group: String, own txs: [JWSTransactionDecodedPayload]) -> Bool {
        !txs.contains { $0.offerType != nil }
    }
}

final class EnvMixupAccept: ReferenceValidator {
    override var name: String { "mutant:env-mixup-accept" }
    override func rejectApp(bundleId: String, appAppleId: Int64?, environment: Environment) -> String? {
        super.rejectApp(bundleId: bundleId, appAppleId: appAppleId, environment: config.catalog.environment)
    }
    override func rejectRenewal(_ r: JWSRenewalInfoDecodedPayload) -> String? { nil }
}

final class BundleUnchecked: ReferenceValidator {
    override var name: String { "mutant:bundle-unchecked" }
    override func rejectApp(bundleId: String, appAppleId: Int64?, environment: Environment) -> String? {
        super.rejectApp(bundleId: config.catalog.bundleId, appAppleId: nil, environment: environment)
    }
}

final class WaitForExpired: ReferenceValidator {
    override var name: String { "mutant:wait-for-expired" }
    var expiredSeen: Set<String> = []
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        expiredSeen = []
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let v = super.ingestNotification(n)
        if v.isAccepted, n.notificationType == .expired || n.notificationType == .didFailToRenew, let otid = n.data?.transactionInfo?.originalTransactionId {
            expiredSeen.insert(otid)
        }
        return v
    }
    override func status(latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload], renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis) -> SubscriptionStatus {
        let s = super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
        return s == .expired && !expiredSeen.contains(otid) ? .active : s
    }
}

final class ConsumptionRequestRevokes: ReferenceValidator {
    override var name: String { "mutant:consumption-request-revokes" }
    /// transactionId → when its refund was asked for.
    var requested: [String: Millis] = [:]
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        requested = [:]
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let v = super.ingestNotification(n)
        if v.isAccepted, n.notificationType == .consumptionRequest, let tx = n.data?.transactionInfo {
            requested[tx.transactionId] = min(requested[tx.transactionId] ?? .max, n.signedDate)
        }
        return v
    }
    override func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool {
        if let r = requested[tx.transactionId], r <= t { return true }
        return super.isRevoked(tx, at: t)
    }
}

/// Acknowledges every notification of one type without reading it: the backend has no case for that type.
final class NotificationTypeDropped: ReferenceValidator {
    let mutantName: String
    let dropped: NotificationTypeV2
    init(_ name: String, _ dropped: NotificationTypeV2) {
        self.mutantName = name
        self.dropped = dropped
        super.init()
    }
    override var name: String { "mutant:\(mutantName)" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        n.notificationType == dropped ? .accepted : super.ingestNotification(n)
    }
}

final class TransactionRequired: ReferenceValidator {
    override var name: String { "mutant:transaction-required" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        if let data = n.data, data.transactionInfo == nil { return .rejected(reason: "data.signedTransactionInfo missing") }
        return super.ingestNotification(n)
    }
}

final class DuplicateRejected: ReferenceValidator {
    override var name: String { "mutant:duplicate-rejected" }
    var seenPayloads: Set<String> = []
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        seenPayloads = []
    }
    override func ingestSignedNotification(_ signedPayload: String) -> DeliveryVerdict {
        let v = super.ingestSignedNotification(signedPayload)
        guard v.isAccepted else { return v }
        return seenPayloads.insert(signedPayload).inserted ? v : .rejected(reason: "notification already processed")
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let v = super.ingestNotification(n)
        guard v.isAccepted else { return v }
        return seenPayloads.insert("\(n)").inserted ? v : .rejected(reason: "notification already processed")
    }
}

final class RecentWindow: ReferenceValidator {
    override var name: String { "mutant:recent-window" }
    override func consumableBalance(userId: String, at t: Millis) -> [String: Int] {
        // The reference's count, over the user's ten most recent purchases only.
        let all = consumableCredits
        defer { consumableCredits = all }
        let recent = all.filter { $0.value.purchaseDate <= t && user(ofChain: $0.value.originalTransactionId) == userId }
            .sorted { ($0.value.purchaseDate, $0.key) > ($1.value.purchaseDate, $1.key) }.prefix(10)
        consumableCredits = Dictionary(uniqueKeysWithValues: recent.map { ($0.key, $0.value) })
        return super.consumableBalance(userId: userId, at: t)
    }
}

final class HistoryFirstPage: ReferenceValidator {
    override var name: String { "mutant:history-first-page" }
    override func ingestAPIResponses(originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?) -> DeliveryVerdict {
        super.ingestAPIResponses(originalTransactionId: otid, history: Array(history.prefix(1)), statuses: statuses)
    }
    override func ingestHistory(_ s: APISnapshot) -> DeliveryVerdict {
        var s = s
        s.transactions = Array(s.transactions.prefix(HistoryResponse.pageSize))
        return super.ingestHistory(s)
    }
}

final class HistoryOneChain: ReferenceValidator {
    override var name: String { "mutant:history-one-chain" }
    override func ingestHistory(_ s: APISnapshot) -> DeliveryVerdict {
        var s = s
        s.transactions = s.transactions.filter { $0.originalTransactionId == s.originalTransactionId }
        s.renewalInfos = s.renewalInfos.filter { $0.originalTransactionId == s.originalTransactionId }
        return super.ingestHistory(s)
    }
}

final class PricePendingRevokes: ReferenceValidator {
    override var name: String { "mutant:price-pending-revokes" }
    override func status(latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload], renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis) -> SubscriptionStatus {
        let s = super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
        return s == .active && renewal?.priceIncreaseStatus == .customerHasNotResponded ? .expired : s
    }
}

final class NonRenewingLifetime: ReferenceValidator {
    override var name: String { "mutant:nonrenewing-lifetime" }
    override func nonRenewingEnd(_ tx: JWSTransactionDecodedPayload, start: Millis) -> Millis? { tx.expiresDate }
}

final class BoundaryInclusive: ReferenceValidator {
    override var name: String { "mutant:boundary-inclusive" }
    override func covers(start: Millis, end: Millis, at t: Millis) -> Bool { start <= t && t <= end }
}

final class UnknownTypeRejected: ReferenceValidator {
    override var name: String { "mutant:unknown-type-rejected" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        if !n.notificationType.isKnown { return .rejected(reason: "unknown notificationType \(n.notificationType)") }
        if let s = n.subtype, !s.isKnown { return .rejected(reason: "unknown subtype \(s)") }
        return super.ingestNotification(n)
    }
}

final class DataRequired: ReferenceValidator {
    override var name: String { "mutant:data-required" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        n.data == nil ? .rejected(reason: "notification without data") : super.ingestNotification(n)
    }
}

final class IncompleteRenewalInfoRejected: ReferenceValidator {
    override var name: String { "mutant:incomplete-renewal-info-rejected" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let r = n.data?.renewalInfo
        if n.subtype == .gracePeriod, r?.gracePeriodExpiresDate == nil { return .rejected(reason: "GRACE_PERIOD without gracePeriodExpiresDate") }
        if n.notificationType == .expired, r != nil, r?.expirationIntent == nil { return .rejected(reason: "EXPIRED without expirationIntent") }
        return super.ingestNotification(n)
    }
}

final class GraceAssumedAfterTrial: ReferenceValidator {
    override var name: String { "mutant:grace-assumed-after-trial" }
    override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? {
        if let g = renewal?.gracePeriodExpiresDate { return g }
        guard let setting = config.catalog.gracePeriod, let e = latest.expiresDate,
            let period = product(latest.productId)?.period else { return nil }
        return e + Int64(setting.days(forPeriod: period)) * 86_400_000
    }
}

final class ConsumablesOnlyFromNotifications: ReferenceValidator {
    override var name: String { "mutant:consumables-only-from-notifications" }
    override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: String) {
        if channel == "notification" { super.creditConsumable(tx, via: channel) }
    }
}

final class AppAccountTokenRequired: ReferenceValidator {
    override var name: String { "mutant:appaccounttoken-required" }
    override func ingestApp(_ s: AppTransactionSubmission) -> DeliveryVerdict {
        s.transaction.appAccountToken == nil ? .rejected(reason: "missing appAccountToken") : super.ingestApp(s)
    }
}

final class UnlinkedNotificationsDropped: ReferenceValidator {
    override var name: String { "mutant:unlinked-notifications-dropped" }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        if let tx = n.data?.transactionInfo, tx.appAccountToken == nil, chains[tx.originalTransactionId]?.user == nil {
            return .accepted  // "no user for this transaction", acknowledged and forgotten
        }
        return super.ingestNotification(n)
    }
}

/// A mistake in JWS verification, expressed as one loosened switch of ``SignedDataVerifier/Options``.
final class VerifierMutant: ReferenceValidator {
    let mutantName: String
    let loosen: @Sendable (inout SignedDataVerifier.Options) -> Void
    init(_ name: String, _ loosen: @escaping @Sendable (inout SignedDataVerifier.Options) -> Void) {
        self.mutantName = name
        self.loosen = loosen
    }
    override var name: String { "mutant:\(mutantName)" }
    override var verifierOptions: SignedDataVerifier.Options {
        var o = SignedDataVerifier.Options()
        loosen(&o)
        return o
    }
}

/// Checks the chain's validity at its own clock when the artifact arrives: an artifact whose leaf expired since it
/// was signed is refused, a leaf that became valid after the claimed signing is taken.
final class CertificateDatesAtDelivery: ReferenceValidator {
    override var name: String { "mutant:certificate-dates-at-delivery" }
    /// The clock of the delivery being verified (set before each one; the validator is called one at a time).
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Millis = 0
        var now: Millis {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }
    let clock = Clock()
    override var verifierOptions: SignedDataVerifier.Options {
        var o = SignedDataVerifier.Options()
        let clock = clock
        o.validityInstant = { _ in clock.now }
        return o
    }
    override func willVerify(now: Millis) { clock.now = now }
}

/// The payload of a compact JWS, decoded without any verification (what the mistakes below do).
func unverifiedPayload<T: Decodable>(_ jws: String, as: T.Type) -> T? {
    let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return nil }
    return try? JSONDecoder().decode(T.self, from: Data(bytes))
}

final class NestedUnverified: ReferenceValidator {
    override var name: String { "mutant:nested-jws-unverified" }
    override func verifyNestedTransaction(_ jws: String) -> Result<JWSTransactionDecodedPayload, SignedDataVerifier.Failure> {
        unverifiedPayload(jws, as: JWSTransactionDecodedPayload.self).map { .success($0) } ?? verifyTransaction(jws)
    }
}

/// Decodes the JWS of API answers without verifying them; app submissions and notifications are still verified.
final class APIAnswersUnverified: ReferenceValidator {
    override var name: String { "mutant:api-answers-unverified" }
    private var inAPIAnswer = false
    override func ingestAPIResponses(originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?) -> DeliveryVerdict {
        inAPIAnswer = true
        defer { inAPIAnswer = false }
        return super.ingestAPIResponses(originalTransactionId: otid, history: history, statuses: statuses)
    }
    override func verifyTransaction(_ jws: String) -> Result<JWSTransactionDecodedPayload, SignedDataVerifier.Failure> {
        if inAPIAnswer, let tx = unverifiedPayload(jws, as: JWSTransactionDecodedPayload.self) { return .success(tx) }
        return super.verifyTransaction(jws)
    }
    override func verifyRenewal(_ jws: String) -> Result<JWSRenewalInfoDecodedPayload, SignedDataVerifier.Failure> {
        if inAPIAnswer, let r = unverifiedPayload(jws, as: JWSRenewalInfoDecodedPayload.self) { return .success(r) }
        return super.verifyRenewal(jws)
    }
}

final class UpgradeAsRefund: ReferenceValidator {
    override var name: String { "mutant:upgrade-as-refund" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        let verdict = super.ingestLegacyReceipt(userId: userId, body: body)
        guard verdict.isAccepted, let r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)) else { return verdict }
        for e in r.latest_receipt_info ?? [] where e.is_upgraded == "true" {
            guard let c = e.cancellation_date_ms.flatMap({ Millis($0) }), var chain = chains[e.original_transaction_id] else { continue }
            for (id, var tx) in chain.transactions where tx.revocationDate == nil {
                tx.revocationDate = c
                chain.transactions[id] = tx
            }
            chains[e.original_transaction_id] = chain
        }
        return verdict
    }
}

final class LegacyFirstEntryLatest: PinnedLatestMutant {
    override var name: String { "mutant:legacy-first-entry-latest" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        let verdict = super.ingestLegacyReceipt(userId: userId, body: body)
        if verdict.isAccepted, let r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)) {
            var seen: Set<String> = []
            for e in r.latest_receipt_info ?? [] where seen.insert(e.original_transaction_id).inserted {
                pinned[e.original_transaction_id] = e.transaction_id
            }
        }
        return verdict
    }
}

/// Keeps no record of notification UUIDs: a replay with a newer signedDate overwrites what it knew.
final class NoUUIDDedupe: ReferenceValidator {
    override var name: String { "mutant:no-uuid-dedupe" }
    override var dedupesNotifications: Bool { false }
}
