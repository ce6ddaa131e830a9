// swift-format-ignore-file: AlwaysUseLowerCamelCase
// The field names are Apple's `verifyReceipt` JSON keys, snake_case as Apple sends them.

/// The legacy `verifyReceipt` response body (deprecated by Apple, still used by older validators): every number
/// and date is a string, dates come as `_ms` epoch milliseconds plus formatted variants (docs/semantics.md#receipt-fields).
/// https://developer.apple.com/documentation/appstorereceipts/responsebody
public struct LegacyReceiptResponse: Codable, Hashable, Sendable {
    /// 0 valid; 21000–21010 errors (21007: a sandbox receipt sent to production; 21008 the reverse).
    public var status: Int
    public var environment: String?
    public var receipt: Receipt?
    public var latest_receipt_info: [InApp]?
    public var pending_renewal_info: [PendingRenewal]?
    public var latest_receipt: String?

    public struct Receipt: Codable, Hashable, Sendable {
        public var bundle_id: String
        public var application_version: String?
        public var request_date_ms: String
        public var request_date: String?
        public var receipt_creation_date_ms: String?
        public var in_app: [InApp]
        public init(bundle_id: String, request_date_ms: String, request_date: String?, in_app: [InApp]) {
            self.bundle_id = bundle_id
            self.request_date_ms = request_date_ms
            self.request_date = request_date
            self.in_app = in_app
        }
    }

    /// One entry of `in_app` / `latest_receipt_info`.
    public struct InApp: Codable, Hashable, Sendable {
        public var quantity: String
        public var product_id: String
        public var transaction_id: String
        public var original_transaction_id: String
        public var purchase_date: String
        public var purchase_date_ms: String
        public var purchase_date_pst: String?
        public var original_purchase_date: String?
        public var original_purchase_date_ms: String?
        public var expires_date: String?
        public var expires_date_ms: String?
        public var expires_date_pst: String?
        public var cancellation_date: String?
        public var cancellation_date_ms: String?
        public var cancellation_reason: String?
        public var web_order_line_item_id: String?
        public var is_trial_period: String?
        public var is_in_intro_offer_period: String?
        public var is_upgraded: String?
        public var in_app_ownership_type: String?
        public var subscription_group_identifier: String?
        public var promotional_offer_id: String?
        public var offer_code_ref_name: String?
        public var app_account_token: String?

        public init(
            quantity: String, product_id: String, transaction_id: String, original_transaction_id: String,
            purchase_date: String, purchase_date_ms: String
        ) {
            self.quantity = quantity
            self.product_id = product_id
            self.transaction_id = transaction_id
            self.original_transaction_id = original_transaction_id
            self.purchase_date = purchase_date
            self.purchase_date_ms = purchase_date_ms
        }
    }

    /// One entry of `pending_renewal_info` (one per subscription chain).
    public struct PendingRenewal: Codable, Hashable, Sendable {
        public var original_transaction_id: String
        public var product_id: String
        public var auto_renew_product_id: String?
        public var auto_renew_status: String
        public var expiration_intent: String?
        public var is_in_billing_retry_period: String?
        public var grace_period_expires_date: String?
        public var grace_period_expires_date_ms: String?
        public var price_consent_status: String?
        public var price_increase_status: String?
        public var promotional_offer_id: String?
        public var offer_code_ref_name: String?

        public init(original_transaction_id: String, product_id: String, auto_renew_status: String) {
            self.original_transaction_id = original_transaction_id
            self.product_id = product_id
            self.auto_renew_status = auto_renew_status
        }
    }

    public init(
        status: Int, environment: String?, receipt: Receipt?, latest_receipt_info: [InApp]?,
        pending_renewal_info: [PendingRenewal]?
    ) {
        self.status = status
        self.environment = environment
        self.receipt = receipt
        self.latest_receipt_info = latest_receipt_info
        self.pending_renewal_info = pending_renewal_info
    }
}

extension LegacyReceiptFacts {
    /// A transaction as a legacy receipt can express it, signed (as of) `requestDate`: no transaction reason, no
    /// storefront or price, revocation without type, offers reduced to intro (trial or not), promotional and
    /// offer-code; win-back offers leave no trace.
    public static func legacyView(_ tx: JWSTransactionDecodedPayload, requestDate: Millis)
        -> JWSTransactionDecodedPayload
    {
        var t = JWSTransactionDecodedPayload(
            transactionId: tx.transactionId, originalTransactionId: tx.originalTransactionId,
            webOrderLineItemId: tx.webOrderLineItemId,
            bundleId: tx.bundleId, productId: tx.productId, subscriptionGroupIdentifier: tx.subscriptionGroupIdentifier,
            purchaseDate: tx.purchaseDate, originalPurchaseDate: tx.originalPurchaseDate, expiresDate: tx.expiresDate,
            quantity: tx.quantity ?? 1, type: tx.type, appAccountToken: tx.appAccountToken,
            inAppOwnershipType: tx.inAppOwnershipType,
            signedDate: requestDate, environment: tx.environment, transactionReason: nil)
        t.revocationDate = tx.revocationDate
        t.revocationReason = tx.revocationDate == nil ? nil : (tx.revocationReason ?? .refundedForOtherReason)
        t.isUpgraded = tx.isUpgraded == true ? true : nil
        switch tx.offerType {
        case .introductory?:
            t.offerType = .introductory
            t.offerDiscountType = tx.offerDiscountType == .freeTrial ? .freeTrial : .payAsYouGo
        case .promotional?:
            t.offerType = .promotional
            t.offerIdentifier = tx.offerIdentifier
        case .offerCode?:
            t.offerType = .offerCode
            t.offerIdentifier = tx.offerIdentifier
        default: break
        }
        return t
    }

    /// Renewal info as `pending_renewal_info` can express it.
    public static func legacyView(_ r: JWSRenewalInfoDecodedPayload, requestDate: Millis)
        -> JWSRenewalInfoDecodedPayload
    {
        var v = JWSRenewalInfoDecodedPayload(
            originalTransactionId: r.originalTransactionId, productId: r.productId,
            autoRenewProductId: r.autoRenewProductId,
            autoRenewStatus: r.autoRenewStatus ?? .off, signedDate: requestDate, environment: r.environment)
        v.expirationIntent = r.expirationIntent
        v.isInBillingRetryPeriod = r.isInBillingRetryPeriod ?? false
        v.gracePeriodExpiresDate = r.gracePeriodExpiresDate
        v.priceIncreaseStatus = r.priceIncreaseStatus
        return v
    }
}
