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

    public init(productId: String, active: Bool, state: EntitlementState, expiresDate: Millis?, ownership: InAppOwnershipType?) {
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
        var out: [String] = []
        let mine = Dictionary(uniqueKeysWithValues: products.map { ($0.productId, $0) })
        let theirs = Dictionary(uniqueKeysWithValues: expected.products.map { ($0.productId, $0) })
        for id in Set(mine.keys).union(theirs.keys).sorted() {
            let o = mine[id], e = theirs[id]
            switch (e, o) {
            case let (e?, o?):
                if e.active != o.active { out.append("\(id): active expected \(e.active), got \(o.active)") }
                if e.state != o.state { out.append("\(id): state expected \(e.state.rawValue), got \(o.state.rawValue)") }
                if e.active && o.active {
                    if e.expiresDate != o.expiresDate {
                        out.append("\(id): expiresDate expected \(Self.date(e.expiresDate)), got \(Self.date(o.expiresDate))")
                    }
                    if e.ownership != o.ownership {
                        out.append("\(id): ownership expected \(e.ownership?.rawValue ?? "none"), got \(o.ownership?.rawValue ?? "none")")
                    }
                }
            case let (e?, nil):
                if e.active { out.append("\(id): expected \(e.state.rawValue), validator does not list it") }
            case let (nil, o?):
                if o.active { out.append("\(id): not expected at all, validator says \(o.state.rawValue)") }
            case (nil, nil): break
            }
        }
        let mg = Dictionary(uniqueKeysWithValues: groups.map { ($0.groupId, $0) })
        for e in expected.groups {
            guard let o = mg[e.groupId] else {
                out.append("group \(e.groupId): missing from the answer")
                continue
            }
            if e.effectiveProductId != o.effectiveProductId {
                out.append("group \(e.groupId): effective product expected \(e.effectiveProductId ?? "none"), got \(o.effectiveProductId ?? "none")")
            }
            if e.introEligible != o.introEligible {
                out.append("group \(e.groupId): introEligible expected \(e.introEligible), got \(o.introEligible)")
            }
        }
        let mc = Dictionary(uniqueKeysWithValues: consumables.map { ($0.productId, $0.balance) })
        let ec = Dictionary(uniqueKeysWithValues: expected.consumables.map { ($0.productId, $0.balance) })
        for id in Set(mc.keys).union(ec.keys).sorted() where (mc[id] ?? 0) != (ec[id] ?? 0) {
            out.append("\(id): balance expected \(ec[id] ?? 0), got \(mc[id] ?? 0)")
        }
        return out
    }

    static func date(_ t: Millis?) -> String { t.map(CivilTime.iso8601) ?? "none" }
}
