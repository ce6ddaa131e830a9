import IAPSimulator

/// How many cases exercised each scenario family and each notification type/subtype (the check's own
/// statistics: a family nobody generated is a blind spot).
public struct Coverage: Codable, Hashable, Sendable {
    public var families: [String: Int] = [:]
    public var notifications: [String: Int] = [:]
    public var properties: [String: Int] = [:]
    /// Cases with a product change in each direction (``ProductMove/directions``: level × duration).
    public var productChanges: [String: Int]? = [:]

    public init() {}

    public mutating func add(_ c: GeneratedCase) {
        for f in c.families { families[f.rawValue, default: 0] += 1 }
        for k in Set(c.notificationKinds) { notifications[k, default: 0] += 1 }
        properties[c.property.rawValue, default: 0] += 1
        for d in Set(c.events.compactMap { $0.change?.direction(in: c.config.catalog) }) { productChanges![d, default: 0] += 1 }
    }

    /// Scenario families no case exercised, then product-change directions none made (when the catalog allows
    /// any product change at all).
    public var missingFamilies: [String] {
        let families = ScenarioFamily.allCases.map(\.rawValue).filter { (self.families[$0] ?? 0) == 0 }
        let changes = productChanges ?? [:]
        guard !changes.isEmpty else { return families }
        return families + ProductMove.directions.filter { (changes[$0] ?? 0) == 0 }.map { "product change " + $0 }
    }
}
