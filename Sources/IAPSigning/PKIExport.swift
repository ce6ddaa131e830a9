import Foundation
import IAPModel

/// Files a validator under test needs to trust iapcheck's PKI, and signed samples to try it on.
public enum PKIExport {
    /// Writes `root.der`, `root.pem` and `intermediate.pem` into `directory`.
    public static func export(_ pki: TestPKI, to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files: [(String, Data)] = [
            ("root.der", Data(pki.root.der)),
            ("root.pem", Data(pki.root.pem.utf8)),
            ("intermediate.pem", Data(pki.intermediate.pem.utf8)),
        ]
        return try files.map { name, data in
            let path = (directory as NSString).appendingPathComponent(name)
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
            return path
        }
    }

    /// A genuine signed transaction, renewal info and notification for `catalog`, plus one forged transaction (or
    /// notification) per forgery class under `forged/`, and `samples.json` describing them.
    public static func samples(_ pki: TestPKI, catalog: Catalog, at t: Millis, to directory: String) throws {
        let forgedDir = (directory as NSString).appendingPathComponent("forged")
        try FileManager.default.createDirectory(atPath: forgedDir, withIntermediateDirectories: true)
        let product = catalog.products.first { $0.kind == .autoRenewable }!
        var tx = JWSTransactionDecodedPayload(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001", webOrderLineItemId: "2000000000000002",
            bundleId: catalog.bundleId, productId: product.id, subscriptionGroupIdentifier: product.groupId, purchaseDate: t,
            originalPurchaseDate: t, expiresDate: product.period!.added(to: t), quantity: 1, type: .autoRenewable,
            appAccountToken: "a1b2c3d4-0000-4000-8000-000000000001", inAppOwnershipType: .purchased, signedDate: t,
            environment: catalog.environment, transactionReason: .purchase)
        tx.storefront = "USA"
        tx.currency = "USD"
        tx.price = 4990
        var renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: tx.originalTransactionId, productId: product.id, autoRenewProductId: product.id,
            autoRenewStatus: .on, signedDate: t, environment: catalog.environment)
        renewal.renewalDate = tx.expiresDate
        renewal.isInBillingRetryPeriod = false
        let notification = ResponseBodyV2DecodedPayload(
            notificationType: .subscribed, subtype: .initialBuy, notificationUUID: "5e1f0000-0000-4000-9000-000000000001",
            signedDate: t, data: NotificationData(appAppleId: catalog.appAppleId, bundleId: catalog.bundleId,
                                                  environment: catalog.environment, transactionInfo: tx, renewalInfo: renewal, status: .active))
        let renderer = ArtifactRenderer(pki: pki)
        func write(_ text: String, _ name: String, in dir: String = directory) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: (dir as NSString).appendingPathComponent(name)), options: .atomic)
        }
        try write(renderer.transaction(tx), "transaction.jws")
        try write(renderer.renewal(renewal), "renewal.jws")
        try write(renderer.notification(notification), "notification.jws")
        let kit = ForgeryKit(pki: pki)
        var forged: [[String: String]] = []
        for f in ForgeryClass.allCases {
            var tempting = tx
            tempting.expiresDate = tx.expiresDate.map { $0 + 3 * 365 * CivilTime.msPerDay }
            let d = ForgeryKit.delivery(f, tempting: tempting, notification: notification, userId: "u")
            let kind: String, jws: String
            switch kit.render(f, d) {
            case .appTransaction(_, let s, _): (kind, jws) = ("transaction", s)
            case .notification(let s): (kind, jws) = ("notification", s)
            case .apiSnapshot, .legacyReceipt: continue
            }
            try write(jws, "\(f.rawValue).jws", in: forgedDir)
            forged.append(["class": f.rawValue, "kind": kind, "file": "forged/\(f.rawValue).jws"])
        }
        let meta: [String: Any] = [
            "bundleId": catalog.bundleId, "appAppleId": catalog.appAppleId, "environment": catalog.environment.rawValue,
            "root": "root.der", "genuine": ["transaction.jws", "renewal.jws", "notification.jws"], "forged": forged,
        ]
        try JSONSerialization.data(withJSONObject: meta, options: [.prettyPrinted, .sortedKeys])
            .write(to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent("samples.json")), options: .atomic)
        _ = try export(pki, to: directory)
    }
}
