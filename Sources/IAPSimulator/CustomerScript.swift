import IAPModel

/// One App Store event `iapcheck send` makes for a customer (docs/send.md#scenarios).
public enum SendScenario: String, CaseIterable, Codable, Sendable {
    case buy, renew
    case failBilling = "fail-billing"
    case recover, expire, refund
    case reverseRefund = "reverse-refund"
    case declineRefund = "decline-refund"
    case upgrade, downgrade, crossgrade
    case familyShare = "family-share"
    case revoke
    case offerCode = "offer-code"
    case promotionalOffer = "promotional-offer"
    case winBack = "win-back"
    case extend
    case priceIncrease = "price-increase"
    case consumptionRequest = "consumption-request"
    case autoRenewOff = "auto-renew-off"
    case autoRenewOn = "auto-renew-on"
    case test
    case openApp = "open-app"

    /// What the App Store does, in a line (`iapcheck send --list`).
    public var summary: String {
        switch self {
        case .buy: "a purchase in the app (any product kind: --product ID, or a kind such as consumable)"
        case .renew: "the subscription renews at the end of its period (DID_RENEW)"
        case .failBilling: "the renewal charge fails: billing retry, with the app's grace unless --no-grace"
        case .recover: "billing recovers during retry (DID_RENEW/BILLING_RECOVERY)"
        case .expire: "the subscription expires: at its period's end (auto-renew turned off first) or when retry ends"
        case .refund:
            "Apple refunds the latest purchase (REFUND; --prorated for a partial refund); a refunded subscription stops renewing"
        case .reverseRefund: "Apple reverses the latest refund (REFUND_REVERSED)"
        case .declineRefund: "Apple declines a refund request (REFUND_DECLINED)"
        case .upgrade: "a move to a higher level of the group, at once (DID_CHANGE_RENEWAL_PREF/UPGRADE)"
        case .downgrade: "a move to a lower level, at the next renewal (DID_CHANGE_RENEWAL_PREF/DOWNGRADE)"
        case .crossgrade: "a move within the level (at once for the same duration, else at the next renewal)"
        case .familyShare: "a family organizer buys a shareable product and shares it with the customer"
        case .revoke: "the organizer stops sharing: the customer loses access (REVOKE)"
        case .offerCode: "an offer code redeemed in the App Store for a new subscription (then open-app)"
        case .promotionalOffer: "a promotional offer for the next renewal, or a resubscription with one"
        case .winBack: "a lapsed subscriber comes back with a win-back offer"
        case .extend: "a renewal date extension (RENEWAL_EXTENDED; --days 1-90, default 30; twice a year at most)"
        case .priceIncrease:
            "a price increase that needs consent (PRICE_INCREASE/PENDING; --no-consent-needed, --accept)"
        case .consumptionRequest: "the customer asks for a refund and Apple asks for consumption data"
        case .autoRenewOff: "the customer turns auto-renew off (DID_CHANGE_RENEWAL_STATUS)"
        case .autoRenewOn: "the customer turns auto-renew back on"
        case .test: "a TEST notification, as Request a Test Notification sends"
        case .openApp: "the customer opens the app: it submits what was bought outside it (family share, offer code)"
        }
    }
}

/// One send: a scenario at an instant with its choices, or (without a scenario) the customer's clock moved on.
public struct ScriptStep: Codable, Hashable, Sendable {
    public var scenario: SendScenario?
    public var at: Millis
    public var product: String?
    public var quantity: Int?
    public var days: Int?
    /// `prorated` (refund), `no-grace` (fail-billing), `no-consent-needed` and `accept` (price-increase).
    public var flags: [String]?

    public init(
        scenario: SendScenario?, at: Millis, product: String? = nil, quantity: Int? = nil, days: Int? = nil,
        flags: [String] = []
    ) {
        self.scenario = scenario
        self.at = at
        self.product = product
        self.quantity = quantity
        self.days = days
        self.flags = flags.isEmpty ? nil : flags
    }

    public func has(_ flag: String) -> Bool { flags?.contains(flag) ?? false }
}

/// A step the store cannot make from the customer's state, and what would make it possible.
public struct ScriptError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One customer's history as `iapcheck send` builds it across invocations, like a payment platform's test clock:
/// the sends in order. Replaying it gives the same store (the simulator is deterministic), so each invocation
/// rebuilds the history and delivers only what is new (docs/send.md#a-customers-history).
///
/// The customer is person 0 (named by `--user`); person 1 is the family organizer who shares with them.
public struct CustomerScript: Codable, Hashable, Sendable {
    public var start: Millis
    public var steps: [ScriptStep]
    /// The customer's name in what the store says (`--user`); the organizer is `organizer`.
    public var customerName: String?

    public static let customer = 0
    public static let organizer = 1

    public init(start: Millis, steps: [ScriptStep] = [], customerName: String? = nil) {
        self.start = start
        self.steps = steps
        self.customerName = customerName
    }

    /// The store after every step, or the first step it cannot make (the step's number and why).
    public func replay(catalog: Catalog, policy: Policy) throws(ScriptError) -> StoreSimulator {
        var customer = Person(index: Self.customer, familyId: 1)
        var organizer = Person(index: Self.organizer, familyId: 1)
        if let customerName {
            customer.name = customerName
            organizer.name = customerName == "organizer" ? "their organizer" : "organizer"
        }
        var sim = StoreSimulator(catalog: catalog, policy: policy, persons: [customer, organizer], start: start)
        for (i, step) in steps.enumerated() {
            sim.currentAction = i
            try step.apply(to: &sim)
        }
        return sim
    }

    /// The instant of the customer's last event (the clock a new send starts from).
    public func clock(catalog: Catalog, policy: Policy) throws(ScriptError) -> Millis {
        max(try replay(catalog: catalog, policy: policy).now, steps.last?.at ?? start)
    }
}
