import Foundation
import IAPModel

/// Renders decoded deliveries as Apple would send them: JWS transactions and renewal info, notification
/// `signedPayload`s with nested JWS, API snapshots as lists of JWS. A renderer memoizes per fact version, since one
/// version travels in several deliveries (app, notification, duplicates, API).
public final class ArtifactRenderer {
    public let signer: JWSSigner
    private var memo: [Data: String] = [:]

    public init(pki: TestPKI) { self.signer = JWSSigner(pki: pki) }

    func jws<T: Encodable>(_ value: T, signedDate: Millis) -> String {
        let bytes = (try? JWSSigner.encoder.encode(value)) ?? Data()
        if let s = memo[bytes] { return s }
        let s = signer.sign(value, signedDate: signedDate)
        memo[bytes] = s
        return s
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
                    signedTransactionInfo: d.transactionInfo.map(transaction), signedRenewalInfo: d.renewalInfo.map(renewal),
                    status: d.status)
            })
    }

    public func notification(_ n: ResponseBodyV2DecodedPayload) -> String { jws(wire(n), signedDate: n.signedDate) }

    public func render(_ d: Delivery) -> SignedDelivery {
        switch d {
        case .appTransaction(let s):
            .appTransaction(userId: s.userId, signedTransaction: transaction(s.transaction), deviceTime: s.deviceTime)
        case .notification(let n):
            .notification(signedPayload: notification(n))
        case .apiSnapshot(let s):
            .apiSnapshot(originalTransactionId: s.originalTransactionId, signedTransactions: s.transactions.map(transaction),
                         signedRenewalInfo: s.renewalInfo.map(renewal))
        }
    }
}
