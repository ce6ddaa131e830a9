import Foundation
import IAPModel

/// Signed deliveries taken apart: every JWS verified on its own (envelope, nested transaction and renewal info,
/// every history page and status item) before its facts reach the hooks of the class.
extension ReferenceValidator {
    /// Verifies the envelope, checks the app, drops a replayed UUID, then verifies the nested JWS separately.
    func verifyNotification(_ signedPayload: String) -> DeliveryVerdict {
        let envelope: ResponseBodyV2SignedPayload
        switch verifier.verify(signedPayload, as: ResponseBodyV2SignedPayload.self, signedDate: { $0.signedDate }) {
        case .failure(let f): return .rejected(reason: "notification: \(f)")
        case .success(let e): envelope = e
        }
        var data: NotificationData?
        if let d = envelope.data {
            guard let bundleId = d.bundleId, let environment = d.environment else {
                return .rejected(reason: "notification data without bundleId or environment")
            }
            if let why = rejectApp(bundleId: bundleId, appAppleId: d.appAppleId, environment: environment) {
                return .rejected(reason: why)
            }
            if dedupesNotifications && seenNotifications.contains(envelope.notificationUUID) { return .accepted }
            var tx: JWSTransactionDecodedPayload?
            var renewal: JWSRenewalInfoDecodedPayload?
            if let jws = d.signedTransactionInfo {
                switch verifyNestedTransaction(jws) {
                case .failure(let f): return .rejected(reason: "nested transaction: \(f)")
                case .success(let v): tx = v
                }
            }
            if let jws = d.signedRenewalInfo {
                switch verifyRenewal(jws) {
                case .failure(let f): return .rejected(reason: "nested renewal info: \(f)")
                case .success(let v): renewal = v
                }
            }
            data = NotificationData(
                appAppleId: d.appAppleId, bundleId: bundleId, environment: environment,
                transactionInfo: tx, renewalInfo: renewal, status: d.status)
            data?.consumptionRequestReason = d.consumptionRequestReason
        }
        var decoded = ResponseBodyV2DecodedPayload(
            notificationType: envelope.notificationType, subtype: envelope.subtype,
            notificationUUID: envelope.notificationUUID, signedDate: envelope.signedDate, data: data,
            summary: envelope.summary, externalPurchaseToken: envelope.externalPurchaseToken)
        decoded.version = envelope.version ?? "2.0"
        return ingestNotification(decoded)
    }

    /// History pages and statuses: the app identity of every body, then every signed transaction and renewal info.
    /// Transactions keep the order the pages gave (Apple promises none).
    func verifyAPIResponses(originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?)
        -> DeliveryVerdict
    {
        var txs: [JWSTransactionDecodedPayload] = []
        for page in history {
            if let why = rejectApp(bundleId: page.bundleId, appAppleId: page.appAppleId, environment: page.environment)
            {
                return .rejected(reason: "history: \(why)")
            }
            for jws in page.signedTransactions {
                switch verifyTransaction(jws) {
                case .failure(let f): return .rejected(reason: "history transaction: \(f)")
                case .success(let tx): txs.append(tx)
                }
            }
        }
        // Statuses list every subscription chain of the customer, in every group: each renewal info counts.
        var infos: [JWSRenewalInfoDecodedPayload] = []
        if let statuses {
            if let why = rejectApp(
                bundleId: statuses.bundleId, appAppleId: statuses.appAppleId, environment: statuses.environment)
            {
                return .rejected(reason: "statuses: \(why)")
            }
            for item in statuses.data.flatMap(\.lastTransactions) {
                switch verifyRenewal(item.signedRenewalInfo) {
                case .failure(let f): return .rejected(reason: "renewal info: \(f)")
                case .success(let r): infos.append(r)
                }
                if case .failure(let f) = verifyTransaction(item.signedTransactionInfo) {
                    return .rejected(reason: "status transaction: \(f)")
                }
            }
        }
        return ingestHistory(APISnapshot(originalTransactionId: otid, transactions: txs, renewalInfos: infos))
    }
}
