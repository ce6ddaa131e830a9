import Foundation
import IAPModel
import IAPReference
import IAPValidatorAPI

// Mistakes in taking deliveries in: the app identity, notification types and variants, duplicates, history
// answers, linking purchases to users.

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
        if v.isAccepted, n.notificationType == .expired || n.notificationType == .didFailToRenew,
            let otid = n.data?.transactionInfo?.originalTransactionId
        {
            expiredSeen.insert(otid)
        }
        return v
    }
    override func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
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
        if let data = n.data, data.transactionInfo == nil {
            return .rejected(reason: "data.signedTransactionInfo missing")
        }
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
        let recent = all.filter {
            $0.value.purchaseDate <= t && user(ofChain: $0.value.originalTransactionId) == userId
        }
        .sorted { ($0.value.purchaseDate, $0.key) > ($1.value.purchaseDate, $1.key) }.prefix(10)
        consumableCredits = Dictionary(uniqueKeysWithValues: recent.map { ($0.key, $0.value) })
        return super.consumableBalance(userId: userId, at: t)
    }
}

final class HistoryFirstPage: ReferenceValidator {
    override var name: String { "mutant:history-first-page" }
    override func ingestAPIResponses(
        originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?
    ) -> DeliveryVerdict {
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
    override func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
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
        if n.subtype == .gracePeriod, r?.gracePeriodExpiresDate == nil {
            return .rejected(reason: "GRACE_PERIOD without gracePeriodExpiresDate")
        }
        if n.notificationType == .expired, r != nil, r?.expirationIntent == nil {
            return .rejected(reason: "EXPIRED without expirationIntent")
        }
        return super.ingestNotification(n)
    }
}

final class GraceAssumedAfterTrial: ReferenceValidator {
    override var name: String { "mutant:grace-assumed-after-trial" }
    override func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? {
        if let g = renewal?.gracePeriodExpiresDate { return g }
        guard let setting = config.catalog.gracePeriod, let e = latest.expiresDate,
            let period = product(latest.productId)?.period
        else { return nil }
        return e + Int64(setting.days(forPeriod: period)) * 86_400_000
    }
}

final class ConsumablesOnlyFromNotifications: ReferenceValidator {
    override var name: String { "mutant:consumables-only-from-notifications" }
    override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        if channel == .notification { super.creditConsumable(tx, via: channel) }
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

/// Keeps, per subscription (`originalTransactionId`), the `signedDate` of the last notification it processed and
/// drops any signed earlier — a guard against "stale events" that loses a late notification's news when a newer one
/// about another transaction of the same chain came first (a renewal overtaken by an old period's refund).
final class SignedDateWatermark: ReferenceValidator {
    override var name: String { "mutant:signed-date-watermark" }
    var watermark: [String: Millis] = [:]
    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        watermark = [:]
    }
    override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        let chain = n.data?.transactionInfo?.originalTransactionId ?? n.data?.renewalInfo?.originalTransactionId
        if let chain, let last = watermark[chain], n.signedDate < last { return .accepted }  // "stale": acknowledged
        let verdict = super.ingestNotification(n)
        if let chain, verdict.isAccepted { watermark[chain] = max(watermark[chain] ?? .min, n.signedDate) }
        return verdict
    }
}
