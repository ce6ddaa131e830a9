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
    /// Returns how many genuine and forged samples it wrote.
    @discardableResult
    public static func samples(_ pki: TestPKI, catalog: Catalog, at t: Millis, to directory: String) throws -> (
        genuine: Int, forged: Int
    ) {
        let forgedDir = (directory as NSString).appendingPathComponent("forged")
        try FileManager.default.createDirectory(atPath: forgedDir, withIntermediateDirectories: true)
        guard let product = catalog.probeProduct else {
            throw PKIExportError("the catalog has no product to sign a sample for")
        }
        var tx = catalog.probeTransaction(of: product, at: t, user: "a1b2c3d4-0000-4000-8000-000000000001")
        tx.storefront = "USA"
        tx.currency = "USD"
        tx.price = 4990
        let renews = product.kind == .autoRenewable
        var renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: tx.originalTransactionId, productId: product.id, autoRenewProductId: product.id,
            autoRenewStatus: .on, signedDate: t, environment: catalog.environment)
        renewal.renewalDate = tx.expiresDate
        renewal.isInBillingRetryPeriod = false
        let notification = purchaseNotification(tx, renewal: renews ? renewal : nil, catalog: catalog, at: t)
        let renderer = ArtifactRenderer(pki: pki)
        func write(_ text: String, _ name: String, in dir: String = directory) throws {
            try Data(text.utf8).write(
                to: URL(fileURLWithPath: (dir as NSString).appendingPathComponent(name)), options: .atomic)
        }
        try write(renderer.transaction(tx), "transaction.jws")
        if renews { try write(renderer.renewal(renewal), "renewal.jws") }
        try write(renderer.notification(notification), "notification.jws")
        // Notifications without `data`: the app is named in `summary` / `externalPurchaseToken` instead.
        let (summary, token) = notificationsWithoutData(catalog, product: product.id, at: t)
        try write(renderer.notification(summary), "summary-notification.jws")
        let writesToken = [Environment.production, .sandbox].contains(catalog.environment)
        if writesToken { try write(renderer.notification(token), "external-purchase-token-notification.jws") }
        let forged = try writeForgeries(pki, tempting: tx, notification: notification, catalog: catalog, to: forgedDir)
        let genuine =
            ["transaction.jws"] + (renews ? ["renewal.jws"] : []) + ["notification.jws", "summary-notification.jws"]
            + (writesToken ? ["external-purchase-token-notification.jws"] : [])
        let meta: [String: Any] = [
            "bundleId": catalog.bundleId, "appAppleId": catalog.appAppleId, "environment": catalog.environment.rawValue,
            "root": "root.der", "genuine": genuine,
            "forged": forged, "product": product.id,
        ]
        try JSONSerialization.data(withJSONObject: meta, options: [.prettyPrinted, .sortedKeys])
            .write(
                to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent("samples.json")),
                options: .atomic)
        _ = try export(pki, to: directory)
        return (genuine.count, forged.count)
    }

    /// The purchase's notification: ONE_TIME_CHARGE for a one-time product, SUBSCRIBED/INITIAL_BUY (with its renewal
    /// info) for a subscription.
    static func purchaseNotification(
        _ tx: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?, catalog: Catalog, at t: Millis
    ) -> ResponseBodyV2DecodedPayload {
        ResponseBodyV2DecodedPayload(
            notificationType: renewal != nil ? .subscribed : .oneTimeCharge,
            subtype: renewal != nil ? .initialBuy : nil,
            notificationUUID: "5e1f0000-0000-4000-9000-000000000001",
            signedDate: t,
            data: NotificationData(
                appAppleId: catalog.appAppleId, bundleId: catalog.bundleId,
                environment: catalog.environment, transactionInfo: tx, renewalInfo: renewal,
                status: renewal != nil ? .active : nil))
    }

    /// A RENEWAL_EXTENSION/SUMMARY and an EXTERNAL_PURCHASE_TOKEN notification: the app named in `summary` and
    /// `externalPurchaseToken`, not in `data`.
    static func notificationsWithoutData(
        _ catalog: Catalog, product: String, at t: Millis
    ) -> (summary: ResponseBodyV2DecodedPayload, token: ResponseBodyV2DecodedPayload) {
        let summary = ResponseBodyV2DecodedPayload(
            notificationType: .renewalExtension, subtype: .summary,
            notificationUUID: "5e1f0000-0000-4000-9000-000000000002",
            signedDate: t, data: nil,
            summary: NotificationSummary(
                requestIdentifier: "5e1f0000-0000-4000-9000-000000000003", environment: catalog.environment,
                appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, productId: product,
                failedCount: 0, succeededCount: 1))
        let token = ResponseBodyV2DecodedPayload(
            notificationType: .externalPurchaseToken, subtype: .unreported,
            notificationUUID: "5e1f0000-0000-4000-9000-000000000004",
            signedDate: t, data: nil,
            externalPurchaseToken: ExternalPurchaseToken(
                externalPurchaseId: (catalog.environment == .production ? "" : "SANDBOX")
                    + "5e1f0000-0000-4000-9000-000000000005",
                tokenCreationDate: t, appAppleId: catalog.appAppleId, bundleId: catalog.bundleId))
        return (summary, token)
    }

    /// One forged transaction or notification per forgery class of the environment, in `dir`; their entries for
    /// `samples.json`.
    static func writeForgeries(
        _ pki: TestPKI, tempting tx: JWSTransactionDecodedPayload, notification: ResponseBodyV2DecodedPayload,
        catalog: Catalog, to dir: String
    ) throws -> [[String: String]] {
        let kit = ForgeryKit(pki: pki)
        var forged: [[String: String]] = []
        for f in ForgeryClass.allCases where f.applies(in: catalog.environment) {
            let d = ForgeryKit.delivery(f, tempting: ForgeryClass.tempting(tx), notification: notification, userId: "u")
            let kind: String, jws: String
            switch kit.render(f, d) {
            case .appTransaction(_, let s, _): (kind, jws) = ("transaction", s)
            case .notification(let s): (kind, jws) = ("notification", s)
            case .apiSnapshot, .legacyReceipt: continue
            }
            try Data(jws.utf8).write(
                to: URL(fileURLWithPath: (dir as NSString).appendingPathComponent("\(f.rawValue).jws")),
                options: .atomic)
            forged.append(["class": f.rawValue, "kind": kind, "file": "forged/\(f.rawValue).jws"])
        }
        return forged
    }
}

/// `pki sample` cannot proceed (an empty catalog).
public struct PKIExportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
