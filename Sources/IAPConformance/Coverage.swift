import IAPSimulator

/// How many cases exercised each scenario family and each notification type/subtype (the check's own
/// statistics: a family nobody generated is a blind spot).
public struct Coverage: Codable, Hashable, Sendable {
    public var families: [String: Int] = [:]
    public var notifications: [String: Int] = [:]
    public var properties: [String: Int] = [:]

    public init() {}

    public mutating func add(_ c: GeneratedCase) {
        for f in c.families { families[f.rawValue, default: 0] += 1 }
        for k in Set(c.notificationKinds) { notifications[k, default: 0] += 1 }
        properties[c.property.rawValue, default: 0] += 1
    }

    /// Scenario families no case exercised.
    public var missingFamilies: [String] {
        ScenarioFamily.allCases.map(\.rawValue).filter { (families[$0] ?? 0) == 0 }
    }
}
