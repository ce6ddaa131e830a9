import IAPModel
import IAPOracle

/// Apple's payloads for tests, filled in from a catalog (the standard one by default), so that an example writes only
/// what it is about: `Build.transaction("1001", product: "pro.monthly")`, a renewal info of it, the notification that
/// carries both, the facts a validator holds after some deliveries.
public enum Build {
    public static let day = CivilTime.msPerDay
    /// 2026-03-01T00:01Z, where the examples start.
    public static let t0: Millis = 1_772_323_260_000
    public static let user = "u1"

    /// A transaction of `product` bought at `purchased` (its kind and group from `catalog`): a subscription or a
    /// non-renewing pass expires one period later unless `expires` says otherwise; its chain is its own id unless
    /// `chain` names another (a renewal); it is signed at its purchase unless `signed` says later.
    public static func transaction(
        _ id: String, chain: String? = nil, product: String = "pro.monthly", purchased: Millis = t0,
        expires: Millis? = nil, signed: Millis? = nil, quantity: Int = 1,
        ownership: InAppOwnershipType = .purchased, reason: TransactionReason? = .purchase,
        catalog: Catalog = .standard
    ) -> JWSTransactionDecodedPayload {
        let p = catalog.products.first { $0.id == product }
        precondition(p != nil, "Build.transaction: \(product) is not in the catalog")
        let end = expires ?? p?.period.map { $0.added(to: purchased) }
        return JWSTransactionDecodedPayload(
            transactionId: id, originalTransactionId: chain ?? id, bundleId: catalog.bundleId, productId: product,
            subscriptionGroupIdentifier: p?.groupId, purchaseDate: purchased,
            expiresDate: p?.kind == .consumable || p?.kind == .nonConsumable ? nil : end, quantity: quantity,
            type: p!.kind.wireType, inAppOwnershipType: ownership, signedDate: signed ?? purchased,
            environment: catalog.environment, transactionReason: reason)
    }

    /// `tx` refunded at `at` (a new version, signed then): what a `REFUND` notification carries.
    public static func refunded(
        _ tx: JWSTransactionDecodedPayload, at: Millis, reason: RevocationReason = .refundedForOtherReason,
        type: RevocationType? = .refundFull, percentage: Int? = nil
    ) -> JWSTransactionDecodedPayload {
        var r = tx
        r.signedDate = at
        r.revocationDate = at
        r.revocationReason = reason
        r.revocationType = type
        r.revocationPercentage = percentage
        return r
    }

    /// `tx` with its refund reversed at `at`: the revocation fields gone, signed then (a `REFUND_REVERSED`).
    public static func reinstated(_ tx: JWSTransactionDecodedPayload, at: Millis) -> JWSTransactionDecodedPayload {
        var r = tx
        r.signedDate = at
        r.revocationDate = nil
        r.revocationReason = nil
        r.revocationType = nil
        r.revocationPercentage = nil
        return r
    }

    /// The renewal info of `tx`'s chain signed at `signed` (the transaction's expiry by default), renewing into the
    /// same product; `retry` and `grace` say a renewal charge failed.
    public static func renewalInfo(
        of tx: JWSTransactionDecodedPayload, signed: Millis? = nil, autoRenew: AutoRenewStatus = .on,
        retry: Bool? = nil, grace: Millis? = nil
    ) -> JWSRenewalInfoDecodedPayload {
        var r = JWSRenewalInfoDecodedPayload(
            originalTransactionId: tx.originalTransactionId, productId: tx.productId, autoRenewProductId: tx.productId,
            autoRenewStatus: autoRenew, signedDate: signed ?? tx.expiresDate ?? tx.signedDate,
            environment: tx.environment)
        r.isInBillingRetryPeriod = retry
        r.gracePeriodExpiresDate = grace
        if retry == true || grace != nil { r.expirationIntent = .billingError }
        return r
    }

    /// A notification of `type` carrying `tx` and `renewal` (and the subscription's `status`), signed when the newer
    /// of them was (or at `signed`).
    public static func notification(
        _ type: NotificationTypeV2, _ subtype: Subtype? = nil, tx: JWSTransactionDecodedPayload?,
        renewal: JWSRenewalInfoDecodedPayload? = nil, uuid: String? = nil, signed: Millis? = nil,
        status: SubscriptionStatus? = nil, catalog: Catalog = .standard
    ) -> Delivery {
        let signed = signed ?? max(tx?.signedDate ?? .min, renewal?.signedDate ?? .min)
        return .notification(
            ResponseBodyV2DecodedPayload(
                notificationType: type, subtype: subtype,
                notificationUUID: uuid ?? uuidOf(signed),
                signedDate: signed,
                data: NotificationData(
                    appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                    transactionInfo: tx, renewalInfo: renewal, status: status)))
    }

    /// A notification id that differs per signing instant (a repeated delivery of one notification keeps its id).
    static func uuidOf(_ t: Millis) -> String {
        let hex = String(UInt64(bitPattern: t), radix: 16)
        return "5e1f0000-0000-4000-9000-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex.suffix(12)
    }

    /// The app sending `tx` for `user` (links its chain to the user).
    public static func appTransaction(_ tx: JWSTransactionDecodedPayload, user: String = user) -> Delivery {
        .appTransaction(AppTransactionSubmission(userId: user, transaction: tx, deviceTime: nil))
    }

    /// What a validator knows after `deliveries`, in order, under `policy`.
    public static func knowledge(
        _ deliveries: [Delivery], catalog: Catalog = .standard, policy: Policy = .default
    ) -> Knowledge {
        var k = Knowledge(config: ValidatorConfig(catalog: catalog, policy: policy))
        for d in deliveries { k.learn(d) }
        return k
    }
}
