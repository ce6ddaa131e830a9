import Foundation

/// What reaches a validator, through the channels a real backend has (docs/semantics.md#knowledge-model).
///
/// Facts travel decoded for now; the signing layer will carry the same facts as JWS strings without changing what
/// each message means.
public indirect enum Delivery: Codable, Hashable, Sendable {
    /// The app submits a transaction right after a purchase (or when it next sees one), saying which user is
    /// logged in. `deviceTime` is what the device's clock claims; a correct validator never trusts it.
    case appTransaction(AppTransactionSubmission)
    /// An App Store Server Notification V2 posted to the backend's webhook.
    case notification(ResponseBodyV2DecodedPayload)
    /// What the backend gets from the App Store Server API when it reconciles one subscription chain or purchase
    /// (Get Transaction History + Get All Subscription Statuses): every transaction of the chain and its renewal
    /// info, as signed at the time of the call. Arrays carry no order guarantee.
    case apiSnapshot(APISnapshot)
    /// A legacy validator's view: the user's receipt as `verifyReceipt` describes it at `requestDate` — every
    /// chain of the person, with the precision legacy receipts have (no transaction reason, no win-back offers,
    /// consumables left out once finished).
    case legacyReceipt(LegacyReceiptFacts)

    enum Key: String, CodingKey { case appTransaction, notification, apiSnapshot, legacyReceipt }

    /// The channel this delivery travels on.
    public var channel: DeliveryChannel {
        switch self {
        case .appTransaction: .app
        case .notification: .notification
        case .apiSnapshot: .api
        case .legacyReceipt: .legacy
        }
    }

    // Encoded as `{"notification": {...}}` (one key naming the channel) so corpus files read naturally.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        guard let key = c.allKeys.first, c.allKeys.count == 1 else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "expected exactly one of appTransaction, notification, apiSnapshot"))
        }
        switch key {
        case .appTransaction: self = .appTransaction(try c.decode(AppTransactionSubmission.self, forKey: key))
        case .notification: self = .notification(try c.decode(ResponseBodyV2DecodedPayload.self, forKey: key))
        case .apiSnapshot: self = .apiSnapshot(try c.decode(APISnapshot.self, forKey: key))
        case .legacyReceipt: self = .legacyReceipt(try c.decode(LegacyReceiptFacts.self, forKey: key))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .appTransaction(let s): try c.encode(s, forKey: .appTransaction)
        case .notification(let n): try c.encode(n, forKey: .notification)
        case .apiSnapshot(let s): try c.encode(s, forKey: .apiSnapshot)
        case .legacyReceipt(let l): try c.encode(l, forKey: .legacyReceipt)
        }
    }

}

public struct LegacyReceiptFacts: Codable, Hashable, Sendable {
    public var userId: String
    public var bundleId: String
    public var environment: Environment
    /// `receipt.request_date_ms`: Apple's clock when it answered; every fact of `latest_receipt_info` and
    /// `pending_renewal_info` is as of then, and so is every fact that counts.
    public var requestDate: Millis
    public var chains: [APISnapshot]
    /// The receipt's own `in_app`, as of `receiptCreationDate`, when the app sent a receipt made before the
    /// request (it sends the receipt it has, which renewals since have outdated); nil: as `chains`. Only a receipt
    /// with an auto-renewable subscription is outdated so, and a validator then reads `latest_receipt_info`
    /// (docs/semantics.md#receipt-fields).
    public var inApp: [APISnapshot]?
    /// `receipt.receipt_creation_date_ms` when it is before `requestDate`.
    public var receiptCreationDate: Millis?

    public init(userId: String, bundleId: String, environment: Environment, requestDate: Millis, chains: [APISnapshot])
    {
        self.userId = userId
        self.bundleId = bundleId
        self.environment = environment
        self.requestDate = requestDate
        self.chains = chains
    }

    /// Whether the receipt holds an auto-renewable subscription (then Apple's answer has `latest_receipt_info`).
    public var hasSubscription: Bool {
        chains.contains { $0.transactions.contains { $0.type == .autoRenewable } }
    }
}

public struct AppTransactionSubmission: Codable, Hashable, Sendable {
    /// The app account of the logged-in user (the UUID the app uses as `appAccountToken`).
    public var userId: String
    public var transaction: JWSTransactionDecodedPayload
    public var deviceTime: Millis?
    public init(userId: String, transaction: JWSTransactionDecodedPayload, deviceTime: Millis?) {
        self.userId = userId
        self.transaction = transaction
        self.deviceTime = deviceTime
    }
}

/// What the App Store Server API answers about a customer: Get Transaction History (every transaction of the
/// customer for the app, of every product type and in every state, in Apple's order) and Get All Subscription
/// Statuses (the renewal info of every subscription chain the customer has).
///
/// `originalTransactionId` names the transaction the request was made with: any transaction of the customer finds
/// the whole history, so the answer is not about that chain alone. A legacy receipt's chains use the same shape
/// with one chain each.
public struct APISnapshot: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var transactions: [JWSTransactionDecodedPayload]
    /// One per subscription chain of the customer (none for one-time products).
    public var renewalInfos: [JWSRenewalInfoDecodedPayload]
    public init(
        originalTransactionId: String, transactions: [JWSTransactionDecodedPayload],
        renewalInfos: [JWSRenewalInfoDecodedPayload]
    ) {
        self.originalTransactionId = originalTransactionId
        self.transactions = transactions
        self.renewalInfos = renewalInfos
    }
    /// One chain: its transactions and its renewal info, if any.
    public init(
        originalTransactionId: String, transactions: [JWSTransactionDecodedPayload],
        renewalInfo: JWSRenewalInfoDecodedPayload?
    ) {
        self.init(
            originalTransactionId: originalTransactionId, transactions: transactions,
            renewalInfos: renewalInfo.map { [$0] } ?? [])
    }
    /// The renewal info of the chain the request named.
    public var renewalInfo: JWSRenewalInfoDecodedPayload? {
        renewalInfos.first { $0.originalTransactionId == originalTransactionId }
    }

    enum CodingKeys: String, CodingKey { case originalTransactionId, transactions, renewalInfos, renewalInfo }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        originalTransactionId = try c.decode(String.self, forKey: .originalTransactionId)
        transactions = try c.decode([JWSTransactionDecodedPayload].self, forKey: .transactions)
        // Files written before answers were per customer carry one chain's `renewalInfo`.
        if let list = try c.decodeIfPresent([JWSRenewalInfoDecodedPayload].self, forKey: .renewalInfos) {
            renewalInfos = list
        } else {
            renewalInfos =
                try c.decodeIfPresent(JWSRenewalInfoDecodedPayload.self, forKey: .renewalInfo).map { [$0] } ?? []
        }
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(originalTransactionId, forKey: .originalTransactionId)
        try c.encode(transactions, forKey: .transactions)
        try c.encode(renewalInfos, forKey: .renewalInfos)
    }
}

/// The four ways facts reach a validator: the app's submission, a notification, App Store Server API answers,
/// a legacy `verifyReceipt` response.
public enum DeliveryChannel: String, Codable, CodingKeyRepresentable, Hashable, Sendable, CaseIterable {
    case app, notification, api, legacy

    /// The channel's name in the wire protocol's `hello` (docs/wire-protocol.md).
    public var protocolName: String {
        switch self {
        case .app: "app-transaction"
        case .notification: "notification"
        case .api: "api-snapshot"
        case .legacy: "legacy-receipt"
        }
    }
}

/// A validator's answer to a delivery.
public enum DeliveryVerdict: Codable, Hashable, Sendable {
    case accepted
    case rejected(reason: String)

    public var isAccepted: Bool { if case .accepted = self { true } else { false } }
}

/// Everything a validator is told before a case: the catalog (products, bundle, environment), the policies, and
/// later the trust roots.
public struct ValidatorConfig: Codable, Hashable, Sendable {
    public var catalog: Catalog
    public var policy: Policy
    /// Root certificates (DER) the validator must trust, in place of Apple Root CA - G3.
    public var trustedRoots: [Data]
    public init(catalog: Catalog, policy: Policy, trustedRoots: [Data] = []) {
        self.catalog = catalog
        self.policy = policy
        self.trustedRoots = trustedRoots
    }
}
