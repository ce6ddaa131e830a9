/// A question to a validator: what may this user use at instant `at`?
///
/// `at` is the validator's clock (the harness sets it). `deviceTime` is what the user's device claims the time is;
/// it is untrusted and a correct validator ignores it.
public struct EntitlementQuery: Codable, Hashable, Sendable {
    public var userId: String
    public var at: Millis
    public var deviceTime: Millis?
    public init(userId: String, at: Millis, deviceTime: Millis? = nil) {
        self.userId = userId
        self.at = at
        self.deviceTime = deviceTime
    }
}

/// State of one product for one user at an instant (see `docs/answers.md` for the exact definition).
public enum EntitlementState: String, Codable, Hashable, Sendable, CaseIterable {
    case active
    case grace
    case billingRetry = "billing-retry"
    case expired
    case revoked

    public var isEntitled: Bool { self == .active || self == .grace }
}

public struct ProductEntitlement: Codable, Hashable, Sendable {
    public var productId: String
    public var active: Bool
    public var state: EntitlementState
    /// When the current grant ends: the covering transaction's `expiresDate`, the grace end, or a non-renewing
    /// subscription's computed end. nil for non-consumables and for products that are not active.
    public var expiresDate: Millis?
    /// `PURCHASED` if any active grant is the user's own purchase, else `FAMILY_SHARED`; nil when not active.
    public var ownership: InAppOwnershipType?

    public init(
        productId: String, active: Bool, state: EntitlementState, expiresDate: Millis?, ownership: InAppOwnershipType?
    ) {
        self.productId = productId
        self.active = active
        self.state = state
        self.expiresDate = expiresDate
        self.ownership = ownership
    }
}

public struct GroupEntitlement: Codable, Hashable, Sendable {
    public var groupId: String
    /// The active product with the highest level of service (smallest level number), ties by product id.
    public var effectiveProductId: String?
    /// Whether the user may still get an introductory offer in this group (policy `introEligibility`).
    public var introEligible: Bool
    public init(groupId: String, effectiveProductId: String?, introEligible: Bool) {
        self.groupId = groupId
        self.effectiveProductId = effectiveProductId
        self.introEligible = introEligible
    }
}

public struct ConsumableBalance: Codable, Hashable, Sendable {
    public var productId: String
    public var balance: Int
    public init(productId: String, balance: Int) {
        self.productId = productId
        self.balance = balance
    }
}

/// A user's entitlements at an instant. Lists are sorted by id so two answers compare field by field.
public struct EntitlementAnswer: Codable, Hashable, Sendable {
    public var products: [ProductEntitlement]
    public var groups: [GroupEntitlement]
    public var consumables: [ConsumableBalance]

    public init(products: [ProductEntitlement], groups: [GroupEntitlement], consumables: [ConsumableBalance]) {
        self.products = products.sorted { $0.productId < $1.productId }
        self.groups = groups.sorted { $0.groupId < $1.groupId }
        self.consumables = consumables.sorted { $0.productId < $1.productId }
    }

    /// Field-by-field differences from `expected`, one human-readable line each (empty when they agree).
    public func differences(from expected: EntitlementAnswer) -> [String] {
        answerDifferences(from: expected).map(\.description)
    }

    /// Field-by-field differences from `expected`, or only those outside `ignoring`.
    ///
    /// Total on any input: an answer that lists an id twice is compared through its first entry (transports
    /// reject such answers before they get here, see ``problems``).
    public func answerDifferences(from expected: EntitlementAnswer, ignoring: Set<AnswerDifference.Key> = [])
        -> [AnswerDifference]
    {
        var out: [AnswerDifference] = []
        func add(_ s: AnswerSubject, _ f: AnswerDifference.Field, _ text: String) {
            if !ignoring.contains(AnswerDifference.Key(subject: s, field: f)) {
                out.append(AnswerDifference(subject: s, field: f, text: text))
            }
        }
        let mine = Self.firstById(products, \.productId), theirs = Self.firstById(expected.products, \.productId)
        for id in Set(mine.keys).union(theirs.keys).sorted() {
            let o = mine[id], e = theirs[id], s = AnswerSubject.product(id)
            switch (e, o) {
            case let (e?, o?):
                if e.active != o.active { add(s, .active, "\(id): active expected \(e.active), got \(o.active)") }
                if e.state != o.state {
                    add(s, .state, "\(id): state expected \(e.state.rawValue), got \(o.state.rawValue)")
                }
                if e.active && o.active {
                    if e.expiresDate != o.expiresDate {
                        add(
                            s, .expiresDate,
                            "\(id): expiresDate expected \(Self.date(e.expiresDate)), got \(Self.date(o.expiresDate))")
                    }
                    if e.ownership != o.ownership {
                        add(
                            s, .ownership,
                            "\(id): ownership expected \(e.ownership?.rawValue ?? "none"), got \(o.ownership?.rawValue ?? "none")"
                        )
                    }
                }
            case let (e?, nil):
                if e.active { add(s, .active, "\(id): expected \(e.state.rawValue), validator does not list it") }
            case let (nil, o?):
                if o.active { add(s, .active, "\(id): not expected at all, validator says \(o.state.rawValue)") }
            case (nil, nil): break
            }
        }
        let mg = Self.firstById(groups, \.groupId)
        for e in expected.groups {
            let s = AnswerSubject.group(e.groupId)
            guard let o = mg[e.groupId] else {
                add(s, .missing, "group \(e.groupId): missing from the answer")
                continue
            }
            if e.effectiveProductId != o.effectiveProductId {
                add(
                    s, .effectiveProductId,
                    "group \(e.groupId): effective product expected \(e.effectiveProductId ?? "none"), got \(o.effectiveProductId ?? "none")"
                )
            }
            if e.introEligible != o.introEligible {
                add(
                    s, .introEligible,
                    "group \(e.groupId): introEligible expected \(e.introEligible), got \(o.introEligible)")
            }
        }
        let mc = Self.firstById(consumables, \.productId).mapValues(\.balance)
        let ec = Self.firstById(expected.consumables, \.productId).mapValues(\.balance)
        for id in Set(mc.keys).union(ec.keys).sorted() where (mc[id] ?? 0) != (ec[id] ?? 0) {
            add(.consumable(id), .balance, "\(id): balance expected \(ec[id] ?? 0), got \(mc[id] ?? 0)")
        }
        return out
    }

    /// What makes this answer malformed as a validator's reply: an id listed twice, a negative or absurd
    /// expiry. Empty for a well-formed answer. Each problem names the field.
    public var problems: [String] {
        var out: [String] = []
        func duplicates(_ ids: [String], _ field: String) {
            var seen: Set<String> = []
            for id in ids where !seen.insert(id).inserted { out.append("\(field): \"\(id)\" is listed more than once") }
        }
        duplicates(products.map(\.productId), "products[].productId")
        duplicates(groups.map(\.groupId), "groups[].groupId")
        duplicates(consumables.map(\.productId), "consumables[].productId")
        for p in products {
            if let e = p.expiresDate, e < 0 || e > 253_402_300_799_999 {
                out.append("products[\(p.productId)].expiresDate: \(e) is not an instant between 1970 and 9999")
            }
        }
        return out
    }

    static func firstById<T>(_ list: [T], _ id: (T) -> String) -> [String: T] {
        var out: [String: T] = [:]
        for x in list where out[id(x)] == nil { out[id(x)] = x }
        return out
    }

    static func date(_ t: Millis?) -> String { t.map(CivilTime.iso8601) ?? "none" }
}

/// What one part of an answer is about: a product, a group or a consumable balance.
public enum AnswerSubject: Hashable, Sendable, Comparable, CustomStringConvertible {
    case product(String)
    case group(String)
    case consumable(String)

    public var description: String {
        switch self {
        case .product(let id): "product \(id)"
        case .group(let id): "group \(id)"
        case .consumable(let id): "consumable \(id)"
        }
    }
}

/// One field of an answer that differs from the expected one.
public struct AnswerDifference: Hashable, Sendable, CustomStringConvertible {
    public enum Field: String, Hashable, Sendable {
        case active, state, expiresDate, ownership, effectiveProductId, introEligible, balance, missing
    }
    /// A field of one subject: what a difference is about, without the values.
    public struct Key: Hashable, Sendable {
        public var subject: AnswerSubject
        public var field: Field
        public init(subject: AnswerSubject, field: Field) {
            self.subject = subject
            self.field = field
        }
    }
    public var subject: AnswerSubject
    public var field: Field
    /// The human-readable line (`pro.monthly: active expected true, got false`).
    public var text: String
    public var description: String { text }
    public var key: Key { Key(subject: subject, field: field) }
}
