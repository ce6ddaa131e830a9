import Foundation
import IAPModel

/// Legacy `verifyReceipt` answers read as StoreKit 2 facts: the machinery behind `ingestLegacyReceipt` and
/// `convertLegacy`, which stay in the class so a subclass can replace them.
extension ReferenceValidator {
    func ingestLegacy(userId: String, body: String) -> DeliveryVerdict {
        guard let r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)) else {
            return .rejected(reason: "verifyReceipt response does not decode")
        }
        guard r.status == 0 else { return .rejected(reason: "verifyReceipt status \(r.status)") }
        guard let receipt = r.receipt, let requestDate = Millis(receipt.request_date_ms) else {
            return .rejected(reason: "verifyReceipt response without receipt.request_date_ms")
        }
        let environment: Environment = r.environment == "Production" ? .production : .sandbox
        if let why = rejectApp(bundleId: receipt.bundle_id, appAppleId: nil, environment: environment) {
            return .rejected(reason: why)
        }
        var byChain: [String: [JWSTransactionDecodedPayload]] = [:]
        var order: [String] = []
        // Apple: for a receipt with auto-renewable subscriptions, latest_receipt_info holds every transaction as of
        // the request, while in_app is the receipt's own, possibly outdated; without one, in_app is all there is.
        for e in r.latest_receipt_info ?? receipt.in_app {
            guard
                let tx = convertLegacy(
                    e, bundleId: receipt.bundle_id, environment: environment, requestDate: requestDate)
            else { continue }
            if byChain[tx.originalTransactionId] == nil { order.append(tx.originalTransactionId) }
            byChain[tx.originalTransactionId, default: []].append(tx)
        }
        var renewals: [String: JWSRenewalInfoDecodedPayload] = [:]
        for p in r.pending_renewal_info ?? [] {
            var info = JWSRenewalInfoDecodedPayload(
                originalTransactionId: p.original_transaction_id, productId: p.product_id,
                autoRenewProductId: p.auto_renew_product_id,
                autoRenewStatus: p.auto_renew_status == "1" ? .on : .off, signedDate: requestDate,
                environment: environment)
            info.expirationIntent = p.expiration_intent.flatMap { Int($0) }.map(ExpirationIntent.init(rawValue:))
            info.isInBillingRetryPeriod = p.is_in_billing_retry_period == "1"
            info.gracePeriodExpiresDate = p.grace_period_expires_date_ms.flatMap { Millis($0) }
            info.priceIncreaseStatus = p.price_consent_status.flatMap { Int($0) }.map(
                PriceIncreaseStatus.init(rawValue:))
            renewals[p.original_transaction_id] = info
            if byChain[p.original_transaction_id] == nil { order.append(p.original_transaction_id) }
        }
        for otid in order {
            _ = ingestSnapshot(
                APISnapshot(
                    originalTransactionId: otid, transactions: Self.upgradeMarkersCleared(byChain[otid] ?? []),
                    renewalInfo: renewals[otid]))
            if chains[otid] != nil, chains[otid]!.user == nil { chains[otid]!.user = userId }
        }
        return .accepted
    }

    func legacyTransaction(
        _ e: LegacyReceiptResponse.InApp, bundleId: String, environment: Environment, requestDate: Millis
    ) -> JWSTransactionDecodedPayload? {
        guard let kind = product(e.product_id)?.kind, let purchase = Millis(e.purchase_date_ms) else { return nil }
        var tx = JWSTransactionDecodedPayload(
            transactionId: e.transaction_id, originalTransactionId: e.original_transaction_id,
            webOrderLineItemId: e.web_order_line_item_id,
            bundleId: bundleId, productId: e.product_id, subscriptionGroupIdentifier: e.subscription_group_identifier,
            purchaseDate: purchase, originalPurchaseDate: e.original_purchase_date_ms.flatMap { Millis($0) },
            expiresDate: e.expires_date_ms.flatMap { Millis($0) }, quantity: Int(e.quantity) ?? 1, type: kind.wireType,
            appAccountToken: e.app_account_token,
            inAppOwnershipType: InAppOwnershipType(rawValue: e.in_app_ownership_type ?? "PURCHASED"),
            signedDate: requestDate, environment: environment, transactionReason: nil)
        // On an upgraded entry the date may only mark the upgrade: `upgradeMarkersCleared` decides, with the chain.
        if e.is_upgraded == "true" { tx.isUpgraded = true }
        if let c = e.cancellation_date_ms.flatMap({ Millis($0) }) {
            tx.revocationDate = c
            tx.revocationReason = RevocationReason(rawValue: e.cancellation_reason.flatMap { Int($0) } ?? 0)
        }
        if e.is_trial_period == "true" {
            tx.offerType = .introductory
            tx.offerDiscountType = .freeTrial
        } else if e.is_in_intro_offer_period == "true" {
            tx.offerType = .introductory
            tx.offerDiscountType = .payAsYouGo
        } else if let id = e.promotional_offer_id {
            tx.offerType = .promotional
            tx.offerIdentifier = id
        } else if let code = e.offer_code_ref_name {
            tx.offerType = .offerCode
            tx.offerIdentifier = code
        }
        return tx
    }

    /// A chain's legacy entries with the upgrade markers taken off (docs/semantics.md#refunds-and-revocation): on an
    /// entry with `is_upgraded`, a `cancellation_date` at the upgrade itself (the purchase of the chain's next later
    /// entry, or with no later entry in the receipt) is the older receipt guide's marker of the upgrade, not a
    /// refund; any other date is a refund that came after the upgrade, and stays one.
    package static func upgradeMarkersCleared(_ chain: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload]
    {
        chain.map { tx in
            guard tx.isUpgraded == true, let c = tx.revocationDate else { return tx }
            let upgrade = chain.lazy.map(\.purchaseDate).filter { $0 > tx.purchaseDate }.min()
            guard upgrade == nil || upgrade == c else { return tx }
            var marked = tx
            marked.revocationDate = nil
            marked.revocationReason = nil
            return marked
        }
    }

    func ingestDecodedLegacy(_ l: LegacyReceiptFacts) -> DeliveryVerdict {
        if let why = rejectApp(bundleId: l.bundleId, appAppleId: nil, environment: l.environment) {
            return .rejected(reason: why)
        }
        for chain in l.chains {
            _ = ingestSnapshot(chain)
            if chains[chain.originalTransactionId] != nil, chains[chain.originalTransactionId]!.user == nil {
                chains[chain.originalTransactionId]!.user = l.userId
            }
        }
        return .accepted
    }
}
