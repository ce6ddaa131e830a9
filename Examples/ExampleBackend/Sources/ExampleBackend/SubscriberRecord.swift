import Foundation
import IAPModel

/// A subscriber record as a subscription service answers it: `{"subscriber": {"entitlements": {"pro":
/// {"expires_date": "2026-04-01T00:00:00.000Z"}}}}`, the expiry `null` for a lifetime unlock.
struct SubscriberRecord: Encodable {
    struct Entitlement: Encodable {
        var expiresDate: String?
        enum CodingKeys: String, CodingKey { case expiresDate = "expires_date" }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(expiresDate, forKey: .expiresDate)  // null, not absent
        }
    }
    struct Subscriber: Encodable {
        var originalAppUserId: String
        var entitlements: [String: Entitlement]
        enum CodingKeys: String, CodingKey {
            case originalAppUserId = "original_app_user_id", entitlements
        }
    }
    var requestDateMs: Millis
    var subscriber: Subscriber
    enum CodingKeys: String, CodingKey { case requestDateMs = "request_date_ms", subscriber }

    init(_ user: String, _ answer: EntitlementAnswer, at: Millis) {
        var out: [String: Entitlement] = [:]
        for e in answer.entitlements where e.active {
            out[e.entitlementId] = Entitlement(expiresDate: e.expiresDate.map(CivilTime.iso8601))
        }
        requestDateMs = at
        subscriber = Subscriber(originalAppUserId: user, entitlements: out)
    }
}
