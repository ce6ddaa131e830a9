import Foundation
import Hummingbird
import IAPModel
import IAPValidatorAPI

/// iapcheck's own route shapes: the reset, and one route per channel Apple delivers on (the app's transactions,
/// notifications, API snapshots, legacy receipts); a notification is answered `slowAckMs` late (a backend mutant).
func registerDeliveryRoutes(_ router: Router<BasicRequestContext>, _ backend: Backend, slowAckMs: Int) {
    router.post("/iapcheck/reset") { request, _ -> Response in
        let config = try await body(request, as: ValidatorConfig.self)
        try backend.validator(request).reset(config)
        backend.state.withLock { $0.bundleId = config.catalog.bundleId }
        try await backend.persist(.reset(config), job: Backend.job(request), truncate: true)
        return Backend.json(["ok": true], status: .ok)
    }
    router.post("/apple/app-transactions") { request, _ -> Response in
        let b = try await body(request, as: AppTransactionBody.self)
        return try await backend.deliver(
            .appTransaction(userId: b.userId, signedTransaction: b.signedTransaction, deviceTime: b.deviceTime),
            for: request)
    }
    router.post("/apple/notifications") { request, _ -> Response in
        let b = try await body(request, as: NotificationBody.self)
        let answer = try await backend.deliver(
            .notification(signedPayload: b.signedPayload), for: request)
        if slowAckMs > 0 { try await Task.sleep(for: .milliseconds(slowAckMs)) }
        return answer
    }
    router.post("/apple/api-snapshots") { request, _ -> Response in
        try await backend.deliver(
            try await body(request, as: SignedDelivery.self), for: request)
    }
    router.post("/apple/legacy-receipts") { request, _ -> Response in
        let b = try await body(request, as: LegacyBody.self)
        return try await backend.deliver(
            .legacyReceipt(userId: b.userId, responseBody: b.responseBody), for: request)
    }
}

/// The routes on which the backend asks the App Store itself: the history of a chain from the App Store Server API,
/// and a receipt from verifyReceipt. A store that cannot answer is a 502 (the backend took nothing from it).
func registerAppStoreRoutes(_ router: Router<BasicRequestContext>, _ backend: Backend) {
    router.post("/apple/reconcile") { request, _ -> Response in
        // Pull the chain from the App Store Server API, then ingest it like any signed data.
        let b = try await body(request, as: ReconcileBody.self)
        let bundleId = backend.state.withLock { $0.bundleId }
        do {
            guard
                let d = try await backend.store.chain(
                    originalTransactionId: b.originalTransactionId, bundleId: bundleId)
            else {
                return Backend.json(
                    ["accepted": false, "reason": "the App Store knows no transaction \(b.originalTransactionId)"],
                    status: .unprocessableContent)
            }
            return try await backend.deliver(d, for: request)
        } catch let e as AppStoreClient.Failure {
            return Backend.json(["error": e.description], status: .badGateway)
        }
    }
    router.post("/apple/receipts") { request, _ -> Response in
        let b = try await body(request, as: ReceiptBody.self)
        do {
            let (status, responseBody) = try await backend.store.verifyReceipt(b.receiptData)
            switch status {
            case 0:
                return try await backend.deliver(
                    .legacyReceipt(userId: b.userId, responseBody: responseBody), for: request)
            case 21002, 21003, 21010:
                return Backend.json(
                    ["accepted": false, "reason": "verifyReceipt status \(status)"], status: .unprocessableContent)
            default:
                // 21004 (shared secret), 21005 (unavailable), 21008 … : our problem or Apple's, not the receipt's
                return Backend.json(["error": "verifyReceipt status \(status)"], status: .badGateway)
            }
        } catch let e as AppStoreClient.Failure {
            return Backend.json(["error": e.description], status: .badGateway)
        }
    }
}

/// The answers: iapcheck's entitlements route, and the same answer in the shape of a subscription service's
/// subscriber record.
func registerAnswerRoutes(_ router: Router<BasicRequestContext>, _ backend: Backend) {
    router.get("/users/:id/entitlements") { request, context -> Response in
        guard let id = context.parameters.get("id") else {
            return Backend.json(["error": "no user"], status: .badRequest)
        }
        let at = request.uri.queryParameters.get("at").flatMap { Millis($0) } ?? now(request)
        return Backend.json(try backend.validator(request).entitlements(EntitlementQuery(userId: id, at: at)))
    }

    // The same answer in the shape of a subscription service's subscriber record (entitlement name → expiry,
    // ISO 8601, null for a lifetime unlock; only what is active is listed), for the mapped target
    // Examples/http/example-backend-revenuecat.json: a backend checked through its existing route.
    router.get("/v1/subscribers/:id") { request, context -> Response in
        guard let id = context.parameters.get("id") else {
            return Backend.json(["error": "no user"], status: .badRequest)
        }
        let at = request.uri.queryParameters.get("at").flatMap { Millis($0) } ?? now(request)
        let answer = try backend.validator(request).entitlements(EntitlementQuery(userId: id, at: at))
        return Backend.json(SubscriberRecord(id, answer, at: at))
    }
}
