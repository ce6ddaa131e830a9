import IAPSimulator

/// The properties iapcheck checks (docs/check.md#what-is-checked). Each names itself in output and in Corpus files, and switches on
/// the delivery perturbations that exercise it; every case checks entitlement agreement at every question.
public enum PropertyName: String, Codable, Hashable, Sendable, CaseIterable {
    /// Validator == oracle at every asked instant, with realistic delays.
    case entitlementAgreement = "entitlement-agreement"
    /// The same artifact delivered twice (app + notification, retried notification, API) changes nothing.
    case idempotentDelivery = "idempotent-delivery"
    /// Retried (late, out of order) and lost-then-reconciled notifications give the same answers.
    case orderInsensitivity = "order-insensitivity"
    /// Foreign artifacts (other environment, bundle, app) are rejected and change no answer.
    case forgeryRejected = "forgery-rejected"
    /// Unknown notification types, subtypes and enum values are accepted and tolerated.
    case robustInput = "robust-input"
    /// Answers stay correct when the validator's and the device's clocks differ from Apple's.
    case clockSkew = "clock-skew"
    /// An artifact the validator acknowledged is still reflected after the validator is killed and restarted
    /// (needs a restartable validator: `exec:` with `--faults kill`).
    case durableAck = "durable-ack"

    /// A history's prefix delivered in order, then the rest from two concurrent clients: the final answers must be
    /// those of some sequential order (needs a validator that takes concurrent calls; `check --parallel`).
    case parallelDelivery = "parallel-delivery"

    /// The properties a plain `check` runs (durable-ack needs a fault profile).
    public static let standard: [PropertyName] = [
        .entitlementAgreement, .idempotentDelivery, .orderInsensitivity, .forgeryRejected, .robustInput, .clockSkew,
    ]

    public var perturbations: Perturbations {
        var p = Perturbations()
        switch self {
        case .entitlementAgreement: p = .realistic
        case .idempotentDelivery:
            p.duplicates = true
            p.legacyReceipts = true
        case .orderInsensitivity:
            p.retries = true
            p.drops = true
        case .forgeryRejected: p.foreign = true
        case .robustInput: p.unknownValues = true
        case .clockSkew: p.clockSkew = true
        case .durableAck: p.duplicates = true
        case .parallelDelivery: p.duplicates = true
        }
        return p
    }
}
