import IAPModel

/// How a change of product within a group takes effect (docs/semantics.md#levels-and-classification).
public enum ProductChange: String, Codable, Sendable {
    case upgrade, downgrade, crossgradeImmediate, crossgradeDeferred

    public var isImmediate: Bool { self == .upgrade || self == .crossgradeImmediate }
    public var family: ScenarioFamily {
        switch self {
        case .upgrade: .upgrade
        case .downgrade: .downgrade
        case .crossgradeImmediate: .crossgradeImmediate
        case .crossgradeDeferred: .crossgradeDeferred
        }
    }

    public static func classify(from p: CatalogProduct, to q: CatalogProduct) -> ProductChange {
        let lp = p.level ?? 1, lq = q.level ?? 1
        if lq < lp { return .upgrade }
        if lq > lp { return .downgrade }
        return p.period == q.period ? .crossgradeImmediate : .crossgradeDeferred
    }
}
