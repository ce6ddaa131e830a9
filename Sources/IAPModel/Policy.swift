import Foundation
import IAPEncoding

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

    /// A renewal info with a `gracePeriodExpiresDate` still ahead but `isInBillingRetryPeriod` false. Apple documents
    /// the flag as true throughout a grace period, and such payloads have been seen in production
    /// (docs/semantics.md#q4-malformed-grace-and-expiry-payloads): the payload contradicts itself.
    public enum GraceWithoutRetryFlag: String, Codable, Sendable, CaseIterable {
        /// Either reading is accepted: while such a renewal info is the one in force, the chain's state and
        /// whether it entitles are not compared (default).
        case either
        /// The grace date decides: the chain is in billing retry, in grace until `gracePeriodExpiresDate`.
        case grant
        /// The flag decides: not in billing retry, so no grace; the subscription is expired after `expiresDate`.
        case deny
    }

    /// A refund of a consumable purchase carries one `revocationPercentage` for every unit of its `quantity`
    /// (docs/semantics.md#q17-partial-refund-of-a-consumable-quantity); how many units that takes back.
    public enum ConsumableRefundShare: String, Codable, Sendable, CaseIterable {
        /// Every unit of the purchase, whatever the percentage (default).
        case all
        /// The refunded share of the units, rounded down: `quantity × revocationPercentage / 100000`.
        case share
    }

    /// An immediate product change (an upgrade or crossgrade) while the subscription is in an introductory offer
    /// period (docs/semantics.md#q2-upgrade-during-an-introductory-offer). Apple documents that the new product
    /// starts at once; a widely used service reports the introductory transaction staying active beside it.
    public enum UpgradeDuringIntro: String, Codable, Sendable, CaseIterable {
        /// Either reading is accepted: while the introductory period would still run, whether its product is
        /// active (and its expiry and ownership) is not compared (default).
        case either
        /// The change ends the introductory period, as it ends any other period.
        case cut
        /// The introductory transaction keeps granting its product until its own `expiresDate`.
        case union
    }

    /// How the App Store signs a renewal-date extension (docs/semantics.md#q9-how-an-extension-is-represented).
    /// Apple does not say whether the current transaction is re-signed with the new `expiresDate`, or only the
    /// renewal info's `renewalDate` moves.
    public enum ExtensionSignedAs: String, Codable, Sendable, CaseIterable {
        /// The current transaction is re-signed with the new `expiresDate`, and `renewalDate` moves with it
        /// (default): a validator that reads either date passes.
        case transaction
        /// Only the renewal info moves: its `renewalDate` is the new end, while the transaction keeps its old
        /// `expiresDate`. A validator must take the later of the two (while the renewal info is not in billing
        /// retry) to keep access to the new end.
        case renewalInfo = "renewal-info"
    }

    /// A product no grant covers, held in several chains that end in different states (one chain of the user's own in
    /// billing retry, a family-shared one expired): which state the answer gives. Apple reports a status per chain
    /// and leaves combining them to the app (docs/semantics.md#q18-one-product-several-chains).
    public enum InactiveState: String, Codable, Sendable, CaseIterable {
        /// Any of the chains' states is accepted: where they differ, the product's state is not compared (default).
        case either
        /// The state of the chain whose latest transaction was purchased last.
        case latestPurchase = "latest-purchase"
    }

    /// What a product's `expiresDate` and `ownership` mean where the user's own grace period and a paid grant (a
    /// family share) cover it at once (docs/semantics.md#q18-one-product-several-chains): Apple says to keep giving
    /// service through the grace period, and nothing about which grant a backend reports.
    public enum ExpiresMeaning: String, Codable, Sendable, CaseIterable {
        /// Either reading passes: there, the end and the ownership are not compared (default).
        case either
        /// The access end: the latest end of every grant covering the instant, grace included, and the user's own
        /// ownership (`PURCHASED`) when the grace is theirs.
        case accessEnd = "access-end"
        /// The paid grant first: its end and ownership while a paid grant covers; the grace end once none does.
        case paidFirst = "paid-first"
        /// Paid through: the end of paid access only — the paid grant's end while one covers, and in the user's own
        /// grace period the end of the period that lapsed (a grace date is a separate field, as RevenueCat reports
        /// `expires_date` and `grace_period_expires_date` apart).
        case paidThrough = "paid-through"
    }

    public var refundScope: RefundScope
    /// Consumable refunds take back the credited quantity (a business choice; default on).
    public var consumableClawback: Bool
    public var introEligibility: IntroEligibility
    /// Back-to-back purchases of a non-renewing subscription extend each other instead of overlapping (default off).
    public var nonRenewingStacking: Bool
    public var graceWithoutRetryFlag: GraceWithoutRetryFlag
    /// With `consumableClawback`: how much of a partly refunded consumable purchase is taken back.
    public var consumableRefundShare: ConsumableRefundShare
    public var upgradeDuringIntro: UpgradeDuringIntro
    public var extensionSignedAs: ExtensionSignedAs
    public var inactiveState: InactiveState
    public var expiresMeaning: ExpiresMeaning
    /// A hardening choice of the application, not App Store semantics: signed tokens larger than this many bytes
    /// must be refused. Apple documents no size limit and its libraries set none, so by default (nil) a validly
    /// signed token of any size may be accepted or refused (docs/semantics.md#q19-token-size).
    public var tokenSizeLimit: Int?

    public init(
        refundScope: RefundScope = .transaction, consumableClawback: Bool = true,
        introEligibility: IntroEligibility = .neverReceivedIntro, nonRenewingStacking: Bool = false,
        graceWithoutRetryFlag: GraceWithoutRetryFlag = .either, consumableRefundShare: ConsumableRefundShare = .all,
        upgradeDuringIntro: UpgradeDuringIntro = .either, extensionSignedAs: ExtensionSignedAs = .transaction,
        inactiveState: InactiveState = .either, expiresMeaning: ExpiresMeaning = .either, tokenSizeLimit: Int? = nil
    ) {
        self.inactiveState = inactiveState
        self.expiresMeaning = expiresMeaning
        self.tokenSizeLimit = tokenSizeLimit
        self.upgradeDuringIntro = upgradeDuringIntro
        self.extensionSignedAs = extensionSignedAs
        self.consumableRefundShare = consumableRefundShare
        self.refundScope = refundScope
        self.consumableClawback = consumableClawback
        self.introEligibility = introEligibility
        self.nonRenewingStacking = nonRenewingStacking
        self.graceWithoutRetryFlag = graceWithoutRetryFlag
    }

    /// Decoding accepts policies written before a key existed: a missing key takes its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        refundScope = try c.decodeIfPresent(RefundScope.self, forKey: .refundScope) ?? refundScope
        consumableClawback = try c.decodeIfPresent(Bool.self, forKey: .consumableClawback) ?? consumableClawback
        introEligibility = try c.decodeIfPresent(IntroEligibility.self, forKey: .introEligibility) ?? introEligibility
        nonRenewingStacking = try c.decodeIfPresent(Bool.self, forKey: .nonRenewingStacking) ?? nonRenewingStacking
        graceWithoutRetryFlag =
            try c.decodeIfPresent(GraceWithoutRetryFlag.self, forKey: .graceWithoutRetryFlag) ?? graceWithoutRetryFlag
        consumableRefundShare =
            try c.decodeIfPresent(ConsumableRefundShare.self, forKey: .consumableRefundShare) ?? consumableRefundShare
        upgradeDuringIntro =
            try c.decodeIfPresent(UpgradeDuringIntro.self, forKey: .upgradeDuringIntro) ?? upgradeDuringIntro
        extensionSignedAs =
            try c.decodeIfPresent(ExtensionSignedAs.self, forKey: .extensionSignedAs) ?? extensionSignedAs
        inactiveState = try c.decodeIfPresent(InactiveState.self, forKey: .inactiveState) ?? inactiveState
        expiresMeaning = try c.decodeIfPresent(ExpiresMeaning.self, forKey: .expiresMeaning) ?? expiresMeaning
        tokenSizeLimit = try c.decodeIfPresent(Int.self, forKey: .tokenSizeLimit)
    }

    public static let `default` = Policy()

    /// This policy with the meaning a validator declares for its `expiresDate` (``ValidatorProfile/expiresMeaning``,
    /// a target's `"meaning"`): the oracle then computes that meaning exactly. A policy that already says another
    /// meaning is a contradiction, refused naming both (`file` is the target file, for the message).
    public func adopting(_ profile: ValidatorProfile, file: String) throws(ConfigError) -> Policy {
        guard let declared = profile.expiresMeaning, declared != expiresMeaning else { return self }
        guard expiresMeaning == .either else {
            throw ConfigError(
                file: file,
                problems: [
                    .init(
                        key: "answer.*.expiresDate.meaning",
                        message:
                            "the answer mapping says expiresDate means \(declared.rawValue), the policy says \(expiresMeaning.rawValue): drop one of them"
                    )
                ])
        }
        var p = self
        p.expiresMeaning = declared
        return p
    }

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
        if let s = o.choice("graceWithoutRetryFlag", GraceWithoutRetryFlag.allCases.map(\.rawValue), required: false) {
            p.graceWithoutRetryFlag = GraceWithoutRetryFlag(rawValue: s)!
        }
        if let s = o.choice("consumableRefundShare", ConsumableRefundShare.allCases.map(\.rawValue), required: false) {
            p.consumableRefundShare = ConsumableRefundShare(rawValue: s)!
        }
        if let s = o.choice("upgradeDuringIntro", UpgradeDuringIntro.allCases.map(\.rawValue), required: false) {
            p.upgradeDuringIntro = UpgradeDuringIntro(rawValue: s)!
        }
        if let s = o.choice("extensionSignedAs", ExtensionSignedAs.allCases.map(\.rawValue), required: false) {
            p.extensionSignedAs = ExtensionSignedAs(rawValue: s)!
        }
        if let s = o.choice("inactiveState", InactiveState.allCases.map(\.rawValue), required: false) {
            p.inactiveState = InactiveState(rawValue: s)!
        }
        if let s = o.choice("expiresMeaning", ExpiresMeaning.allCases.map(\.rawValue), required: false) {
            p.expiresMeaning = ExpiresMeaning(rawValue: s)!
        }
        if let n = o.int("tokenSizeLimit", required: false, range: 1024...(64 << 20)) { p.tokenSizeLimit = Int(n) }
        o.rejectUnknownKeys()
        try r.finish()
        return p
    }
}
