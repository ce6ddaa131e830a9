import Foundation
import Hummingbird
import IAPModel
import IAPValidatorAPI

/// A purchase posted as a subscription service's SDK posts it: `POST /v1/receipts` with the app user and the signed
/// transaction as `fetch_token`, an `X-Platform` header, and the subscriber record in the answer (422 with `code` and
/// `message` when refused). Examples/http/example-backend-receipts.json maps iapcheck's app channel onto it with a
/// request template: the backend's route stays as it is.
func registerReceiptsRoute(_ router: Router<BasicRequestContext>, _ backend: Backend) {
    router.post("/v1/receipts") { request, _ -> Response in
        guard request.headers[.init("X-Platform")!] == "ios" else {
            return Backend.json(["code": 7225, "message": "X-Platform must be ios"], status: .badRequest)
        }
        let b = try await body(request, as: ReceiptsBody.self)
        let d = SignedDelivery.appTransaction(userId: b.appUserId, signedTransaction: b.fetchToken, deviceTime: nil)
        switch try await backend.verdict(d, for: request) {
        case .accepted:
            let at = now(request)
            let answer = try backend.validator(request).entitlements(EntitlementQuery(userId: b.appUserId, at: at))
            return Backend.json(SubscriberRecord(b.appUserId, answer, at: at))
        case .rejected(let why):
            return Backend.json(["code": 7712, "message": why], status: .unprocessableContent)
        }
    }
}

struct ReceiptsBody: Decodable {
    let appUserId: String
    let fetchToken: String
    enum CodingKeys: String, CodingKey { case appUserId = "app_user_id", fetchToken = "fetch_token" }
}
