import Foundation
import IAPEncoding
import IAPModel

/// Renders decoded deliveries as Apple would send them: JWS transactions and renewal info, notification
/// `signedPayload`s with nested JWS, API snapshots as lists of JWS. A renderer memoizes per fact version, since one
/// version travels in several deliveries (app, notification, duplicates, API).
public final class ArtifactRenderer {
    public let signer: JWSSigner
    /// The App Apple ID API bodies carry.
    public var appAppleId: Int64?
    /// Tokens by their payload's JSON, found by a 64-bit ``ByteHash`` of it and confirmed byte for byte (SipHash over a
    /// notification's kilobytes, and `Data` keys, showed in profiles).
    private var memo: [UInt64: [(json: [UInt8], token: String)]] = [:]
    /// The leaf that signed last, kept while the tokens' `signedDate`s stay in its slot (consecutive facts mostly
    /// do): asking the PKI takes a lock and copies the leaf.
    private var leaf: TestPKI.Leaf?

    public init(pki: TestPKI, appAppleId: Int64? = nil) {
        self.signer = JWSSigner(pki: pki)
        self.appAppleId = appAppleId
        memo.reserveCapacity(64)
    }

    func jws<T: Encodable>(_ value: T, signedDate: Millis) -> String {
        let json = JWSSigner.json(value)
        let hash = json.withUnsafeBytes { ByteHash.of($0) }
        if let known = memo[hash]?.first(where: { Self.same($0.json, json) }) { return known.token }
        if leaf?.signsDuring?.contains(signedDate) != true { leaf = signer.pki.leaf(at: signedDate) }
        let token = JWSSigner.es256(leaf!.es256Prefix, json: json, key: leaf!.key)
        memo[hash, default: []].append((json, token))
        return token
    }

    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return a.count == b.count }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
    }

    public func transaction(_ tx: JWSTransactionDecodedPayload) -> String { jws(tx, signedDate: tx.signedDate) }
    public func renewal(_ r: JWSRenewalInfoDecodedPayload) -> String { jws(r, signedDate: r.signedDate) }

    /// The notification's decoded payload in Apple's wire shape (nested facts as JWS strings).
    public func wire(_ n: ResponseBodyV2DecodedPayload) -> ResponseBodyV2SignedPayload {
        ResponseBodyV2SignedPayload(
            notificationType: n.notificationType, subtype: n.subtype, notificationUUID: n.notificationUUID,
            version: n.version, signedDate: n.signedDate,
            data: n.data.map { d in
                ResponseBodyV2SignedPayload.Data(
                    appAppleId: d.appAppleId, bundleId: d.bundleId, environment: d.environment,
                    signedTransactionInfo: d.transactionInfo.map(transaction),
                    signedRenewalInfo: d.renewalInfo.map(renewal),
                    status: d.status, consumptionRequestReason: d.consumptionRequestReason)
            },
            summary: n.summary, externalPurchaseToken: n.externalPurchaseToken)
    }

    public func notification(_ n: ResponseBodyV2DecodedPayload) -> String { jws(wire(n), signedDate: n.signedDate) }

    public func render(_ d: Delivery) -> SignedDelivery {
        switch d {
        case .appTransaction(let s):
            .appTransaction(userId: s.userId, signedTransaction: transaction(s.transaction), deviceTime: s.deviceTime)
        case .notification(let n):
            .notification(signedPayload: notification(n))
        case .apiSnapshot(let s):
            apiResponses(s, sign: transaction, renewal)
        case .legacyReceipt(let l):
            .legacyReceipt(
                userId: l.userId,
                responseBody: LegacyReceiptRenderer.body(l, shuffleSeed: UInt64(truncatingIfNeeded: l.requestDate)))
        }
    }

    /// History pages (20 transactions each, in the snapshot's order, every page but the last with `hasMore`) and,
    /// when the customer has subscriptions, the statuses: one item per group, each listing every chain of that
    /// group with its latest transaction and renewal info, its status as of `statusesAt` (default: when the renewal
    /// info was signed, which a snapshot of the simulator re-signs at the call).
    public func apiResponses(
        _ s: APISnapshot, sign tx: (JWSTransactionDecodedPayload) -> String,
        _ rn: (JWSRenewalInfoDecodedPayload) -> String, statusesAt: Millis? = nil
    ) -> SignedDelivery {
        let first = s.transactions.first
        let bundleId = first?.bundleId ?? "", environment = first?.environment ?? .production
        let signed = s.transactions.map(tx)
        let pageSize = HistoryResponse.pageSize
        var pages: [HistoryResponse] = []
        var i = 0
        repeat {
            let chunk = Array(signed[min(i, signed.count)..<min(i + pageSize, signed.count)])
            pages.append(
                HistoryResponse(
                    revision: "rev-\(s.originalTransactionId)-\(pages.count + 1)", hasMore: i + pageSize < signed.count,
                    bundleId: bundleId, appAppleId: appAppleId, environment: environment, signedTransactions: chunk))
            i += pageSize
        } while i < signed.count
        var groups: [SubscriptionGroupIdentifierItem] = []
        for r in s.renewalInfos {
            guard
                let latest = s.transactions.filter({ $0.originalTransactionId == r.originalTransactionId })
                    .max(by: JWSTransactionDecodedPayload.purchasedBefore),
                let group = latest.subscriptionGroupIdentifier
            else { continue }
            let item = LastTransactionsItem(
                originalTransactionId: r.originalTransactionId,
                status: .derive(latest: latest, renewal: r, at: statusesAt ?? r.signedDate),
                signedTransactionInfo: tx(latest), signedRenewalInfo: rn(r))
            if let k = groups.firstIndex(where: { $0.subscriptionGroupIdentifier == group }) {
                groups[k].lastTransactions.append(item)
            } else {
                groups.append(
                    SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: group, lastTransactions: [item]))
            }
        }
        let statuses =
            groups.isEmpty
            ? nil : StatusResponse(data: groups, environment: environment, appAppleId: appAppleId, bundleId: bundleId)
        return .apiSnapshot(originalTransactionId: s.originalTransactionId, history: pages, statuses: statuses)
    }

    /// Get Transaction Info for one transaction.
    public func transactionInfo(_ t: JWSTransactionDecodedPayload) -> TransactionInfoResponse {
        TransactionInfoResponse(signedTransactionInfo: transaction(t))
    }

    /// Get Notification History: the original signed payloads with their send attempts (at most 6, Apple's retry
    /// schedule), paged.
    public func notificationHistory(
        _ items: [(ResponseBodyV2DecodedPayload, [SendAttemptItem])], pageSize: Int = 20, page: Int = 0
    ) -> NotificationHistoryResponse {
        let slice = items.dropFirst(page * pageSize).prefix(pageSize)
        let more = items.count > (page + 1) * pageSize
        return NotificationHistoryResponse(
            paginationToken: more ? "page-\(page + 1)" : nil, hasMore: more,
            notificationHistory: slice.map {
                NotificationHistoryResponseItem(signedPayload: notification($0.0), sendAttempts: Array($0.1.prefix(6)))
            })
    }
}
