import IAPModel
import IAPSimulator
import PropertyEngine

/// One concrete test case: the app configuration, the store's history (for people to read), and the steps the
/// validator goes through. A case is everything needed to replay it; the seed is only metadata.
public struct GeneratedCase: Codable, Hashable, Sendable {
    public var property: PropertyName
    public var config: ValidatorConfig
    public var persons: [Person]
    /// Instant of the first purchase: timelines print instants relative to it.
    public var origin: Millis
    public var events: [StoreEvent]
    public var steps: [CaseStep]
    /// Notification type/subtype pairs emitted by the store in this case (coverage).
    public var notificationKinds: [String]

    /// Number of store actions in the history (the size a shrunk counterexample is measured by).
    public var actionCount: Int { events.filter { !$0.summary.hasPrefix("  ") }.count }

    public var families: Set<ScenarioFamily> { Set(events.map(\.family)) }
}

/// Generates cases for one property from a choice source (random or replayed).
public struct CaseGenerator: Sendable {
    public var catalog: Catalog
    public var policy: Policy
    public var maxActions: Int

    public init(catalog: Catalog, policy: Policy, maxActions: Int = 12) {
        self.catalog = catalog
        self.policy = policy
        self.maxActions = maxActions
    }

    public func generate(_ property: PropertyName, _ src: ChoiceSource) -> (GeneratedCase, StoreSimulator) {
        let history = HistoryGenerator(catalog: catalog, policy: policy, maxActions: maxActions).generate(src)
        let sim = history.sim
        let steps = DeliveryPlanner(perturbations: property.perturbations).plan(history)
        let kinds = sim.notifications.map { n in
            n.payload.notificationType.rawValue + (n.payload.subtype.map { "/" + $0.rawValue } ?? "")
        }
        let c = GeneratedCase(
            property: property, config: ValidatorConfig(catalog: sim.catalog, policy: policy), persons: sim.persons,
            origin: sim.origin ?? sim.now, events: sim.events, steps: steps, notificationKinds: kinds)
        return (c, sim)
    }
}
