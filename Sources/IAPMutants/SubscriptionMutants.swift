import Foundation
import IAPModel
import IAPReference
import IAPValidatorAPI

// Mistakes in deciding what a subscription grants: revocation, expiry, the latest transaction, grace, upgrades,
// refunds, intro offers, consumables. Each overrides one decision of the reference validator.

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
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis)
        -> JWSTransactionDecodedPayload?
    {
        if let id = pinned[otid], let tx = txs.first(where: { $0.transactionId == id }) { return tx }
        return super.latestTransaction(txs, chain: otid, at: t)
    }
}

final class LatestByMaxExpires: ReferenceValidator {
    override var name: String { "mutant:latest-by-max-expires" }
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis)
        -> JWSTransactionDecodedPayload?
    {
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
    override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? {
        nil
    }
}

final class RetryAsActive: ReferenceValidator {
    override var name: String { "mutant:retry-as-active" }
    override func isEntitled(_ s: SubscriptionStatus) -> Bool {
        s == .active || s == .billingGracePeriod || s == .billingRetry
    }
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
    override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        deliveries += 1
        var copy = tx
        copy.transactionId += "#\(deliveries)"
        consumableCredits[copy.transactionId] = copy
    }
}

final class ArrivalOrderWins: ReferenceValidator {
    override var name: String { "mutant:arrival-order-wins" }
    override func shouldReplace(
        _ oldSigned: Millis, with newSigned: Millis, old: JWSTransactionDecodedPayload?,
        new: JWSTransactionDecodedPayload?
    ) -> Bool { true }
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
        if v.isAccepted, n.notificationType == .refund, let tx = n.data?.transactionInfo,
            let u = user(ofChain: tx.originalTransactionId)
        {
            revokedUsers[u] = min(revokedUsers[u] ?? .max, tx.revocationDate ?? n.signedDate)
        }
        return v
    }
    override func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
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
                    answer.products[i] = ProductEntitlement(
                        productId: tx.productId, active: true, state: .active, expiresDate: e,
                        ownership: tx.inAppOwnershipType)
                }
            }
        }
        return answer
    }
}

final class DowngradeImmediate: ReferenceValidator {
    override var name: String { "mutant:downgrade-immediate" }
    override func entitledProduct(latest: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?)
        -> String
    {
        renewal?.autoRenewProductId ?? latest.productId
    }
}

/// Keeps the earliest still-running period as current, so a mid-period PURCHASE waits for the old one to end.
class UpgradeDeferred: ReferenceValidator {
    override var name: String { "mutant:upgrade-deferred" }
    func defers(from old: JWSTransactionDecodedPayload, to new: JWSTransactionDecodedPayload) -> Bool { true }
    override func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis)
        -> JWSTransactionDecodedPayload?
    {
        guard let latest = super.latestTransaction(txs, chain: otid, at: t) else { return nil }
        if latest.transactionReason == .purchase,
            let old = txs.last(where: {
                $0.isUpgraded == true && $0.purchaseDate < latest.purchaseDate && ($0.expiresDate ?? 0) > t
                    && !isRevoked($0, at: t)
            }),
            defers(from: old, to: latest)
        {
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
    override func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
        let s = super.status(latest: latest, all: txs, renewal: renewal, chain: otid, at: t)
        return s == .active && renewal?.autoRenewStatus == .off ? .expired : s
    }
}

final class RefundIrreversible: ReferenceValidator {
    override var name: String { "mutant:refund-irreversible" }
    override func shouldReplace(
        _ oldSigned: Millis, with newSigned: Millis, old: JWSTransactionDecodedPayload?,
        new: JWSTransactionDecodedPayload?
    ) -> Bool {
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
    override func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
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

/// J58: month arithmetic without clamping. A non-renewing period of months ends on the same day of the month N
/// months on; where that month is shorter, the days left over run into the next month, as JavaScript's
/// `date.setMonth(date.getMonth() + n)` and PHP's `strtotime("+1 month")` do (docs/mistakes.md#j58-months-added-without-clamping).
final class MonthOverflow: ReferenceValidator {
    override var name: String { "mutant:month-overflow" }
    override func nonRenewingEnd(_ tx: JWSTransactionDecodedPayload, start: Millis) -> Millis? {
        guard let period = product(tx.productId)?.period, period.unit == .month || period.unit == .year else {
            return super.nonRenewingEnd(tx, start: start)
        }
        let months = Int64(period.count) * (period.unit == .year ? 12 : 1)
        let day = CivilTime.floorDiv(start, CivilTime.msPerDay)
        let (y, m, d) = CivilTime.civil(fromDays: day)
        let total = y * 12 + (m - 1) + months
        let ny = CivilTime.floorDiv(total, 12)
        let nm = total - ny * 12 + 1
        // The first of the target month, plus the day of the month less one: 31 days into a 28-day month overflow.
        return (CivilTime.days(fromCivil: ny, nm, 1) + d - 1) * CivilTime.msPerDay + (start - day * CivilTime.msPerDay)
    }
}

/// J59: the past answered from the current state (docs/mistakes.md#j59-the-past-answered-from-the-current-state).
/// The backend keeps a current entitlement row per user and one day of events: a question about an instant further
/// back than a day before the newest fact it holds is answered as of that fact. Questions about now (even under a
/// skewed clock, at most an hour off) are right; only questions in hindsight show it.
final class PastFromCurrentState: ReferenceValidator {
    override var name: String { "mutant:past-from-current-state" }
    private var newest: Millis = 0

    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        newest = 0
    }

    override func store(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        super.store(tx, via: channel)
        newest = max(newest, tx.signedDate)
    }

    override func store(_ r: JWSRenewalInfoDecodedPayload) {
        super.store(r)
        newest = max(newest, r.signedDate)
    }

    override func evaluationInstant(_ q: EntitlementQuery) -> Millis {
        q.at < newest - CivilTime.msPerDay ? newest : q.at
    }
}
