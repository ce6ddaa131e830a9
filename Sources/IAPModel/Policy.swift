import Foundation

/// Named policies for the points where Apple is ambiguous or the answer is the app's business
/// (docs/semantics.md#ambiguities-and-policies). The oracle takes them as a parameter and the validator is told them in `reset`, so both
/// answer the same question. Defaults follow the documented or field-semantics reading.
public struct Policy: Codable, Hashable, Sendable {
    /// Q1(a): what a refund of one transaction revokes.
    public enum RefundScope: String, Codable, Sendable, CaseIterable {
        /// Only the refunded transaction stops granting (field semantics; default).
        case transaction
        /// Refunding any period of a subscription chain ends the whole chain from the revocation date.
        case chain
    }
    /// Q7: what makes a person ineligible for an introductory offer in a group.
    public enum IntroEligibility: String, Codable, Sendable, CaseIterable {
        /// Has received an introductory offer (offerType 1) in the group before (Apple's documentation; default).
        case neverReceivedIntro = "never-received-intro"
        /// Has had any subscription in the group before (an Apple engineer's wording).
        case neverSubscribed = "never-subscribed"
    }

    public var refundScope: RefundScope
    /// Consumable refunds take back the credited quantity (a business choice; default on).
    public var consumableClawback: Bool
    public var introEligibility: IntroEligibility
    /// Back-to-back purchases of a non-renewing subscription extend each other instead of overlapping (default off).
    public var nonRenewingStacking: Bool

    public init(
        refundScope: RefundScope = .transaction, consumableClawback: Bool = true,
        introEligibility: IntroEligibility = .neverReceivedIntro, nonRenewingStacking: Bool = false
    ) {
        self.refundScope = refundScope
        self.consumableClawback = consumableClawback
        self.introEligibility = introEligibility
        self.nonRenewingStacking = nonRenewingStacking
    }

    public static let `default` = Policy()

    /// Reads a policy file: a JSON object with any of the keys above; missing keys take their defaults.
    public static func load(path: String) throws(ConfigError) -> Policy {
        let data = try StrictJSON.readFile(path)
        let r = StrictJSON(file: path)
        let o = try r.root(data)
        var p = Policy()
        if let s = o.choice("refundScope", RefundScope.allCases.map(\.rawValue), required: false) {
            p.refundScope = RefundScope(rawValue: s)!
        }
        if let b = o.bool("consumableClawback", required: false) { p.consumableClawback = b }
        if let s = o.choice("introEligibility", IntroEligibility.allCases.map(\.rawValue), required: false) {
            p.introEligibility = IntroEligibility(rawValue: s)!
        }
        if let b = o.bool("nonRenewingStacking", required: false) { p.nonRenewingStacking = b }
        o.rejectUnknownKeys()
        try r.finish()
        return p
    }
}
