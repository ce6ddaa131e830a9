import Foundation
import IAPModel

/// Renders a legacy `verifyReceipt` response body from receipt facts: string-typed numbers, `_ms` dates with their
/// formatted (`Etc/GMT`, `America/Los_Angeles`) variants, `cancellation_date` on refunded and on upgraded-from
/// entries (legacy receipts mark an upgrade that way, with `is_upgraded`), `pending_renewal_info` per chain, and
/// the two transaction arrays as Apple fills them.
public enum LegacyReceiptRenderer {
    /// The body `verifyReceipt` answers (https://developer.apple.com/documentation/appstorereceipts/responsebody):
    /// `latest_receipt_info` holds every transaction of the receipt as of the request and is there only when the
    /// receipt has an auto-renewable subscription; `receipt.in_app` holds the receipt's own transactions of every
    /// type, as of its creation; `pending_renewal_info` one entry per subscription chain. A consumable stays in a
    /// receipt only until the app finishes its transaction; iapcheck's apps finish at once, so its receipts hold
    /// none. Apple promises no order in either array; both are rotated by `shuffleSeed`.
    public static func response(_ l: LegacyReceiptFacts, shuffleSeed: UInt64 = 0) -> LegacyReceiptResponse {
        var pending: [LegacyReceiptResponse.PendingRenewal] = []
        for chain in l.chains {
            for r in chain.renewalInfos {
                var p = LegacyReceiptResponse.PendingRenewal(
                    original_transaction_id: r.originalTransactionId, product_id: r.productId,
                    auto_renew_status: r.autoRenewStatus == .on ? "1" : "0")
                p.auto_renew_product_id = r.autoRenewProductId
                p.expiration_intent = r.expirationIntent.map { String($0.rawValue) }
                p.is_in_billing_retry_period = r.isInBillingRetryPeriod == true ? "1" : "0"
                p.grace_period_expires_date = r.gracePeriodExpiresDate.map(gmt)
                p.grace_period_expires_date_ms = r.gracePeriodExpiresDate.map { String($0) }
                p.price_consent_status = r.priceIncreaseStatus.map { String($0.rawValue) }
                pending.append(p)
            }
        }
        let latest = rotated(entries(l.chains), by: shuffleSeed)
        var receipt = LegacyReceiptResponse.Receipt(
            bundle_id: l.bundleId, request_date_ms: String(l.requestDate), request_date: gmt(l.requestDate),
            in_app: entries(l.inApp ?? l.chains))
        receipt.receipt_creation_date_ms = String(l.receiptCreationDate ?? l.requestDate)
        return LegacyReceiptResponse(
            status: 0, environment: l.environment == .production ? "Production" : "Sandbox", receipt: receipt,
            latest_receipt_info: l.hasSubscription ? latest : nil,
            pending_renewal_info: l.hasSubscription ? rotated(pending, by: shuffleSeed / 7) : nil)
    }

    /// `[a, b, c]` from its `k`-th element on: an order nothing may lean on.
    static func rotated<T>(_ xs: [T], by seed: UInt64) -> [T] {
        guard xs.count > 1 else { return xs }
        let k = Int(seed % UInt64(xs.count))
        return Array(xs[k...] + xs[..<k])
    }

    /// Every transaction of the chains (consumables aside) as a receipt entry, in purchase order per chain.
    static func entries(_ chains: [APISnapshot]) -> [LegacyReceiptResponse.InApp] {
        var entries: [LegacyReceiptResponse.InApp] = []
        for chain in chains {
            let ordered = chain.transactions.sorted(by: JWSTransactionDecodedPayload.purchasedBefore)
            for (i, t) in ordered.enumerated() where t.type != .consumable {
                var e = LegacyReceiptResponse.InApp(
                    quantity: String(t.quantity ?? 1), product_id: t.productId, transaction_id: t.transactionId,
                    original_transaction_id: t.originalTransactionId, purchase_date: gmt(t.purchaseDate),
                    purchase_date_ms: String(t.purchaseDate))
                e.purchase_date_pst = pst(t.purchaseDate)
                e.original_purchase_date = t.originalPurchaseDate.map(gmt)
                e.original_purchase_date_ms = t.originalPurchaseDate.map { String($0) }
                e.expires_date = t.expiresDate.map(gmt)
                e.expires_date_ms = t.expiresDate.map { String($0) }
                e.expires_date_pst = t.expiresDate.map(pst)
                // Legacy receipts put the upgrade instant in cancellation_date on the upgraded-from entry: the
                // purchase of the next later entry (a restored copy of the same period has the same purchaseDate).
                let upgradedAt: Millis? =
                    t.isUpgraded == true
                    ? ordered.dropFirst(i + 1).first { $0.purchaseDate > t.purchaseDate }?.purchaseDate : nil
                if let c = t.revocationDate ?? upgradedAt {
                    e.cancellation_date = gmt(c)
                    e.cancellation_date_ms = String(c)
                    e.cancellation_reason = String((t.revocationReason ?? .refundedForOtherReason).rawValue)
                }
                e.web_order_line_item_id = t.webOrderLineItemId
                if t.type == .autoRenewable {
                    e.is_trial_period = String(t.offerType == .introductory && t.offerDiscountType == .freeTrial)
                    e.is_in_intro_offer_period = String(
                        t.offerType == .introductory && t.offerDiscountType != .freeTrial)
                }
                if t.isUpgraded == true { e.is_upgraded = "true" }
                e.in_app_ownership_type = t.inAppOwnershipType.rawValue
                e.subscription_group_identifier = t.subscriptionGroupIdentifier
                if t.offerType == .promotional { e.promotional_offer_id = t.offerIdentifier }
                if t.offerType == .offerCode { e.offer_code_ref_name = t.offerIdentifier }
                e.app_account_token = t.appAccountToken
                entries.append(e)
            }
        }
        return entries
    }

    public static func body(_ l: LegacyReceiptFacts, shuffleSeed: UInt64 = 0) -> String {
        body(response(l, shuffleSeed: shuffleSeed))
    }

    public static func body(_ r: LegacyReceiptResponse) -> String {
        String(decoding: (try? JWSSigner.encoder.encode(r)) ?? Data(), as: UTF8.self)
    }

    /// `2026-03-01 00:00:00 Etc/GMT`
    static func gmt(_ t: Millis) -> String {
        let iso = CivilTime.iso8601(t)
        return "\(iso.prefix(10)) \(iso.dropFirst(11).prefix(8)) Etc/GMT"
    }

    /// The Pacific-time variant Apple adds (fixed −8 h here; only for people to read).
    static func pst(_ t: Millis) -> String {
        let iso = CivilTime.iso8601(t - 8 * CivilTime.msPerHour)
        return "\(iso.prefix(10)) \(iso.dropFirst(11).prefix(8)) America/Los_Angeles"
    }
}
