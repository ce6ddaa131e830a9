/// Response bodies of the App Store Server API, with Apple's field names (docs/semantics.md#app-store-server-api).

/// Get Transaction History (v2): one page of up to 20 signed transactions.
/// https://developer.apple.com/documentation/appstoreserverapi/historyresponse
public struct HistoryResponse: Codable, Hashable, Sendable {
    public var revision: String
    public var hasMore: Bool
    public var bundleId: String
    public var appAppleId: Int64?
    public var environment: Environment
    public var signedTransactions: [String]

    /// Apple's page size for Get Transaction History and Get Refund History.
    public static let pageSize = 20
    /// Pages an answer of `count` transactions takes (an empty history is one empty page).
    public static func pages(forTransactions count: Int) -> Int { max(1, (count + pageSize - 1) / pageSize) }

    public init(
        revision: String, hasMore: Bool, bundleId: String, appAppleId: Int64?, environment: Environment,
        signedTransactions: [String]
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}

/// Get All Subscription Statuses.
/// https://developer.apple.com/documentation/appstoreserverapi/statusresponse
public struct StatusResponse: Codable, Hashable, Sendable {
    public var data: [SubscriptionGroupIdentifierItem]
    public var environment: Environment
    public var appAppleId: Int64?
    public var bundleId: String

    public init(data: [SubscriptionGroupIdentifierItem], environment: Environment, appAppleId: Int64?, bundleId: String)
    {
        self.data = data
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleId = bundleId
    }
}

/// https://developer.apple.com/documentation/appstoreserverapi/subscriptiongroupidentifieritem
public struct SubscriptionGroupIdentifierItem: Codable, Hashable, Sendable {
    public var subscriptionGroupIdentifier: String
    public var lastTransactions: [LastTransactionsItem]
    public init(subscriptionGroupIdentifier: String, lastTransactions: [LastTransactionsItem]) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}

/// https://developer.apple.com/documentation/appstoreserverapi/lasttransactionsitem
public struct LastTransactionsItem: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var status: SubscriptionStatus
    public var signedTransactionInfo: String
    public var signedRenewalInfo: String
    public init(
        originalTransactionId: String, status: SubscriptionStatus, signedTransactionInfo: String,
        signedRenewalInfo: String
    ) {
        self.originalTransactionId = originalTransactionId
        self.status = status
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}

/// Get Transaction Info. https://developer.apple.com/documentation/appstoreserverapi/transactioninforesponse
public struct TransactionInfoResponse: Codable, Hashable, Sendable {
    public var signedTransactionInfo: String
    public init(signedTransactionInfo: String) { self.signedTransactionInfo = signedTransactionInfo }
}

/// Get Notification History. https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponse
public struct NotificationHistoryResponse: Codable, Hashable, Sendable {
    public var paginationToken: String?
    public var hasMore: Bool
    public var notificationHistory: [NotificationHistoryResponseItem]
    public init(paginationToken: String?, hasMore: Bool, notificationHistory: [NotificationHistoryResponseItem]) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponseitem
public struct NotificationHistoryResponseItem: Codable, Hashable, Sendable {
    public var signedPayload: String
    public var sendAttempts: [SendAttemptItem]
    public init(signedPayload: String, sendAttempts: [SendAttemptItem]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// https://developer.apple.com/documentation/appstoreserverapi/sendattemptitem
public struct SendAttemptItem: Codable, Hashable, Sendable {
    /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `CIRCULAR_REDIRECT`, `NO_RESPONSE`, `SOCKET_ISSUE`,
    /// `UNSUPPORTED_CHARSET`, `INVALID_RESPONSE`, `PREMATURE_CLOSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `OTHER`.
    public var sendAttemptResult: String
    public var attemptDate: Millis
    public init(attemptDate: Millis, sendAttemptResult: String) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// Get Refund History (v2): one page of up to 20 refunded or revoked transactions of the customer, ascending by
/// `revocationDate`; `revision` asks for the next page while `hasMore`.
/// https://developer.apple.com/documentation/appstoreserverapi/refundhistoryresponse
public struct RefundHistoryResponse: Codable, Hashable, Sendable {
    public var signedTransactions: [String]
    public var revision: String
    public var hasMore: Bool
    public init(signedTransactions: [String], revision: String, hasMore: Bool) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}

extension SubscriptionStatus {
    /// Apple's status of a chain at `t` reconstructed from its latest transaction and renewal info (docs/semantics.md#subscription-status).
    public static func derive(
        latest: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?, at t: Millis
    ) -> SubscriptionStatus {
        if latest.isRevoked(at: t) { return .revoked }
        if let e = latest.expiresDate, e > t { return .active }
        // An extension signed only in the renewal info (policy extensionSignedAs `renewal-info`): the renewal
        // date of the same product, out of billing retry, is the paid-through date.
        if let r = renewal, r.isInBillingRetryPeriod != true, r.productId == latest.productId,
            r.signedDate >= latest.purchaseDate,
            let d = r.renewalDate, d > t
        {
            return .active
        }
        if renewal?.isInBillingRetryPeriod == true {
            if let g = renewal?.gracePeriodExpiresDate, g > t { return .billingGracePeriod }
            return .billingRetry
        }
        return .expired
    }
}
