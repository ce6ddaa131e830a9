import IAPModel

/// One line of the store's history: what happened, when (Apple time), to whom.
public struct StoreEvent: Codable, Hashable, Sendable {
    public var time: Millis
    public var person: Int
    public var family: ScenarioFamily
    public var summary: String
    /// For a product change in a subscription group: the product left and the product chosen.
    public var change: ProductMove?
    /// The generator action that made it (one "time passes" action makes years of renewals). Absent in cases saved
    /// before it existed.
    public var action: Int?

    public init(
        time: Millis, person: Int, family: ScenarioFamily, summary: String, change: ProductMove? = nil,
        action: Int? = nil
    ) {
        self.time = time
        self.person = person
        self.family = family
        self.summary = summary
        self.change = change
        self.action = action
    }
}

/// A customer's move from one product of a subscription group to another.
public struct ProductMove: Codable, Hashable, Sendable {
    public var from: String
    public var to: String

    public init(from: String, to: String) {
        self.from = from
        self.to = to
    }

    /// How the move goes in level of service and in duration, as `level-duration`: `up`, `down` or `same`
    /// (level 1 is the highest), then `shorter`, `longer` or `same` (coverage counts each of the nine).
    public func direction(in catalog: Catalog) -> String? {
        guard let p = catalog.product(from), let q = catalog.product(to) else { return nil }
        return Self.direction(from: p, to: q)
    }

    /// The direction of a move from `p` to `q` (``direction(in:)`` once the products are found): one of
    /// ``directions``, without building a string.
    public static func direction(from p: CatalogProduct, to q: CatalogProduct) -> String? {
        guard let dp = p.period?.approximateDays, let dq = q.period?.approximateDays else { return nil }
        let lp = p.level ?? 1, lq = q.level ?? 1
        let level = lq < lp ? 0 : lq > lp ? 2 : 1
        let duration = dq < dp ? 0 : dq > dp ? 2 : 1
        return directions[level * 3 + duration]
    }

    /// The nine directions, `up-shorter` … `down-longer` (level first, ``direction(from:to:)`` indexes them).
    public static let directions: [String] = ["up", "same", "down"].flatMap { l in
        ["shorter", "same", "longer"].map { l + "-" + $0 }
    }
}
