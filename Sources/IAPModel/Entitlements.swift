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

    /// Rank for "the best state among several": active, grace, billing-retry, expired, revoked (smaller is better).
    public var rank: Int {
        switch self {
        case .active: 0
        case .grace: 1
        case .billingRetry: 2
        case .expired: 3
        case .revoked: 4
        }
    }
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

    enum CodingKeys: String, CodingKey { case productId, active, state, expiresDate, ownership }

    /// Strict where the validator's profile declares a field (or no profile is set), lenient elsewhere: a field a
    /// validator does not answer may be absent or anything (see ``ValidatorProfile/codingKey``).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: decoder)
        productId = try c.decode(String.self, forKey: .productId)
        active = try c.decode(Bool.self, forKey: .active)
        state = try c.answerField(.productsState, .state, required: true, profile) ?? (active ? .active : .expired)
        expiresDate = try c.answerField(.productsExpiresDate, .expiresDate, profile)
        ownership = try c.answerField(.productsOwnership, .ownership, profile)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: encoder)
        try c.encode(productId, forKey: .productId)
        try c.encode(active, forKey: .active)
        if profile.declares(.productsState) { try c.encode(state, forKey: .state) }
        if profile.declares(.productsExpiresDate) { try c.encodeIfPresent(expiresDate, forKey: .expiresDate) }
        if profile.declares(.productsOwnership) { try c.encodeIfPresent(ownership, forKey: .ownership) }
    }
}

/// One entitlement of the catalog (``CatalogEntitlement``) for one user at an instant: what a backend that answers
/// in entitlements (RevenueCat's entitlements, Adapty's access levels, a team's own `isPro`) says.
public struct EntitlementGrant: Codable, Hashable, Sendable {
    public var entitlementId: String
    /// Any product that unlocks it is active.
    public var active: Bool
    /// The best state among its products (active, grace, billing-retry, expired, revoked).
    public var state: EntitlementState
    /// The latest `expiresDate` among its active products; nil when not active, or when an active product never
    /// ends (a non-consumable).
    public var expiresDate: Millis?
    /// `PURCHASED` if any active product that unlocks it is the user's own, else `FAMILY_SHARED`; nil when not active.
    public var ownership: InAppOwnershipType?

    public init(
        entitlementId: String, active: Bool, state: EntitlementState, expiresDate: Millis?,
        ownership: InAppOwnershipType?
    ) {
        self.entitlementId = entitlementId
        self.active = active
        self.state = state
        self.expiresDate = expiresDate
        self.ownership = ownership
    }

    enum CodingKeys: String, CodingKey { case entitlementId, active, state, expiresDate, ownership }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: decoder)
        entitlementId = try c.decode(String.self, forKey: .entitlementId)
        active = try c.decode(Bool.self, forKey: .active)
        state = try c.answerField(.entitlementsState, .state, required: true, profile) ?? (active ? .active : .expired)
        expiresDate = try c.answerField(.entitlementsExpiresDate, .expiresDate, profile)
        ownership = try c.answerField(.entitlementsOwnership, .ownership, profile)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: encoder)
        try c.encode(entitlementId, forKey: .entitlementId)
        try c.encode(active, forKey: .active)
        if profile.declares(.entitlementsState) { try c.encode(state, forKey: .state) }
        if profile.declares(.entitlementsExpiresDate) {
            try c.encodeIfPresent(expiresDate, forKey: .expiresDate)
        }
        if profile.declares(.entitlementsOwnership) { try c.encodeIfPresent(ownership, forKey: .ownership) }
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

    enum CodingKeys: String, CodingKey { case groupId, effectiveProductId, introEligible }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: decoder)
        groupId = try c.decode(String.self, forKey: .groupId)
        effectiveProductId = try c.answerField(.groupsEffectiveProductId, .effectiveProductId, profile)
        introEligible = try c.answerField(.groupsIntroEligible, .introEligible, required: true, profile) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let profile = ValidatorProfile.declared(in: encoder)
        try c.encode(groupId, forKey: .groupId)
        if profile.declares(.groupsEffectiveProductId) {
            try c.encodeIfPresent(effectiveProductId, forKey: .effectiveProductId)
        }
        if profile.declares(.groupsIntroEligible) { try c.encode(introEligible, forKey: .introEligible) }
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
    /// One per entitlement of the catalog that any of the user's listed products unlocks (empty when the catalog
    /// declares no entitlements).
    public var entitlements: [EntitlementGrant]

    public init(
        products: [ProductEntitlement] = [], groups: [GroupEntitlement] = [], consumables: [ConsumableBalance] = [],
        entitlements: [EntitlementGrant] = []
    ) {
        self.products = Self.sortedById(products, \.productId)
        self.groups = Self.sortedById(groups, \.groupId)
        self.consumables = Self.sortedById(consumables, \.productId)
        self.entitlements = Self.sortedById(entitlements, \.entitlementId)
    }

    /// The same answer with its lists sorted (what a transport hands on after decoding a validator's reply).
    public var sorted: EntitlementAnswer {
        EntitlementAnswer(products: products, groups: groups, consumables: consumables, entitlements: entitlements)
    }

    enum CodingKeys: String, CodingKey { case products, groups, consumables, entitlements }

    /// A list the decoder's profile declares is required (a v1 validator, which declares nothing, must send
    /// products, groups and consumables); a list it does not declare is not read at all, so whatever a validator
    /// sends there cannot fail the answer. Without a profile (stored reports, corpus files) every list present is
    /// read.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let declared = ValidatorProfile.declared(in: decoder)
        func list<T: Decodable>(_ key: CodingKeys, _ group: AnswerField.List) throws -> [T] {
            guard let declared else { return try c.decodeIfPresent([T].self, forKey: key) ?? [] }
            guard declared.answers.contains(where: { $0.list == group }) else { return [] }
            return try c.decode([T].self, forKey: key)
        }
        products = try list(.products, .products)
        groups = try list(.groups, .groups)
        consumables = try list(.consumables, .consumables)
        entitlements = try list(.entitlements, .entitlements)
    }

    /// Every list (entitlements only when there are any), or with a profile in the encoder's user info only the
    /// lists and fields it declares (what `serve --answers` sends).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let declared = ValidatorProfile.declared(in: encoder)
        func has(_ group: AnswerField.List) -> Bool { declared?.answers.contains { $0.list == group } ?? true }
        if has(.products) { try c.encode(products, forKey: .products) }
        if has(.groups) { try c.encode(groups, forKey: .groups) }
        if has(.consumables) { try c.encode(consumables, forKey: .consumables) }
        if has(.entitlements) && (declared != nil || !entitlements.isEmpty) {
            try c.encode(entitlements, forKey: .entitlements)
        }
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
        agrees(with: expected) ? [] : allDifferences(from: expected, ignoring: ignoring)
    }

    package typealias Difference = AnswerDifference

    /// ``answerDifferences(from:ignoring:)`` without its shortcut for answers that agree.
    package func allDifferences(from expected: EntitlementAnswer, ignoring: Set<Difference.Key>) -> [Difference] {
        var out: [AnswerDifference] = []
        func add(_ s: AnswerSubject, _ f: AnswerDifference.Field, _ text: String) {
            if !ignoring.contains(AnswerDifference.Key(subject: s, field: f)) {
                out.append(AnswerDifference(subject: s, field: f, text: text))
            }
        }
        /// One product or entitlement: active and state always; expiry and ownership when both say active.
        func grant(
            _ id: String, _ s: AnswerSubject, _ label: String,
            expected e: (active: Bool, state: EntitlementState, expires: Millis?, ownership: InAppOwnershipType?)?,
            observed o: (active: Bool, state: EntitlementState, expires: Millis?, ownership: InAppOwnershipType?)?
        ) {
            switch (e, o) {
            case let (e?, o?):
                if e.active != o.active { add(s, .active, "\(label): active expected \(e.active), got \(o.active)") }
                if e.state != o.state {
                    add(s, .state, "\(label): state expected \(e.state.rawValue), got \(o.state.rawValue)")
                }
                if e.active && o.active {
                    if e.expires != o.expires {
                        add(
                            s, .expiresDate,
                            "\(label): expiresDate expected \(Self.date(e.expires)), got \(Self.date(o.expires))")
                    }
                    if e.ownership != o.ownership {
                        add(
                            s, .ownership,
                            "\(label): ownership expected \(e.ownership?.rawValue ?? "none"), got \(o.ownership?.rawValue ?? "none")"
                        )
                    }
                }
            case let (e?, nil):
                if e.active { add(s, .active, "\(label): expected \(e.state.rawValue), validator does not list it") }
            case let (nil, o?):
                if o.active { add(s, .active, "\(label): not expected at all, validator says \(o.state.rawValue)") }
            case (nil, nil): break
            }
        }
        let mine = Self.firstById(products, \.productId), theirs = Self.firstById(expected.products, \.productId)
        for id in Set(mine.keys).union(theirs.keys).sorted() {
            grant(
                id, .product(id), id, expected: theirs[id].map { ($0.active, $0.state, $0.expiresDate, $0.ownership) },
                observed: mine[id].map { ($0.active, $0.state, $0.expiresDate, $0.ownership) })
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
        let me = Self.firstById(entitlements, \.entitlementId)
        let te = Self.firstById(expected.entitlements, \.entitlementId)
        for id in Set(me.keys).union(te.keys).sorted() {
            grant(
                id, .entitlement(id), "entitlement \(id)",
                expected: te[id].map { ($0.active, $0.state, $0.expiresDate, $0.ownership) },
                observed: me[id].map { ($0.active, $0.state, $0.expiresDate, $0.ownership) })
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

/// What one part of an answer is about: a product, a group, a consumable balance or an entitlement.
public enum AnswerSubject: Hashable, Sendable, Comparable, CustomStringConvertible {
    case product(String)
    case group(String)
    case consumable(String)
    case entitlement(String)

    public var description: String {
        switch self {
        case .product(let id): "product \(id)"
        case .group(let id): "group \(id)"
        case .consumable(let id): "consumable \(id)"
        case .entitlement(let id): "entitlement \(id)"
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
