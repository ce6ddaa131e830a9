import IAPModel

/// Which delivery perturbations a plan may use (each property of the harness switches on its own).
public struct Perturbations: Codable, Hashable, Sendable {
    /// Same notification twice (same `notificationUUID`), app re-submissions, overlapping API snapshots.
    public var duplicates = false
    /// Notifications late on Apple's retry schedule (+1, +13, +37, +85, +157 h), hence out of order.
    public var retries = false
    /// Notifications that never arrive; the backend's API reconciliation recovers the chain later.
    public var drops = false
    /// The validator's clock and the device's clock differ from Apple's.
    public var clockSkew = false
    /// Copies of genuine artifacts for another environment, bundle or app (must be rejected).
    public var foreign = false
    /// Notification types, subtypes and enum values iapcheck's model does not know (must be tolerated).
    public var unknownValues = false
    /// Legacy apps: the app sends its receipt and the validator gets the `verifyReceipt` answer.
    public var legacyReceipts = false

    public init() {}

    /// Delivery as it usually goes: Apple's delays, app submissions, legacy receipts for legacy apps — no duplicates,
    /// retries, drops, clock skew, forgeries or unknown values (entitlement-agreement cases and load pools).
    public static var realistic: Perturbations {
        var p = Perturbations()
        p.legacyReceipts = true
        return p
    }
}

/// One step of a case: deliver something, or ask a question.
public enum CaseStep: Codable, Hashable, Sendable {
    case deliver(PlannedDelivery)
    case query(PlannedQuery)

    enum Key: String, CodingKey { case deliver, query }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        if c.contains(.deliver) {
            self = .deliver(try c.decode(PlannedDelivery.self, forKey: .deliver))
        } else {
            self = .query(try c.decode(PlannedQuery.self, forKey: .query))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        switch self {
        case .deliver(let d): try c.encode(d, forKey: .deliver)
        case .query(let q): try c.encode(q, forKey: .query)
        }
    }
}

public struct PlannedDelivery: Codable, Hashable, Sendable {
    /// Apple time at which the artifact reaches the validator.
    public var arrival: Millis
    /// The validator's clock at arrival.
    public var now: Millis
    public var delivery: Delivery
    /// How the harness made this delivery (timelines show it).
    public var label: DeliveryOrigin
    /// The person whose history this delivery belongs to (timelines only).
    public var person: Int
    /// Set when this is a forged artifact (the decoded `delivery` is the content the forger wants accepted).
    public var forgery: ForgeryClass?

    public init(
        arrival: Millis, now: Millis, delivery: Delivery, label: DeliveryOrigin, person: Int,
        forgery: ForgeryClass? = nil
    ) {
        self.arrival = arrival
        self.now = now
        self.delivery = delivery
        self.label = label
        self.person = person
        self.forgery = forgery
    }
}

public struct PlannedQuery: Codable, Hashable, Sendable {
    /// Apple time at which the question is asked (deliveries up to this instant have arrived).
    public var appleTime: Millis
    public var query: EntitlementQuery
    public var person: Int
    /// Asked after the fact: about an instant before `appleTime`, with what has arrived by then (nil: false; a
    /// question about now, or about the validator's "now" under a clock skew).
    public var hindsight: Bool?

    public init(appleTime: Millis, query: EntitlementQuery, person: Int, hindsight: Bool? = nil) {
        (self.appleTime, self.query, self.person, self.hindsight) = (appleTime, query, person, hindsight)
    }

    public var isHindsight: Bool { hindsight == true }
}
