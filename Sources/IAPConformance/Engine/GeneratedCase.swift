import IAPModel
import IAPOracle
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
    /// Notifications the store sent that never reached the validator (lost for good), for timelines: what the
    /// validator could not know. Absent in cases saved before it existed.
    public var lost: [LostNotification]?
    /// Transactions in each customer's history (every product type, restores included; people without any are not
    /// customers), for coverage. Absent in cases saved before it existed.
    public var historySizes: [Int]?

    /// Number of store actions in the history (the size a shrunk counterexample is measured by): the generator's
    /// actions, however many lines each wrote (years of renewals are one action). Cases saved before events named
    /// their action count their unindented lines.
    public var actionCount: Int {
        Set(events.compactMap(\.action)).count + events.filter { $0.action == nil && !$0.summary.hasPrefix("  ") }.count
    }

    public var families: Set<ScenarioFamily> { Set(events.map(\.family)) }

    /// The case without its forged artifacts of these classes (the validator's declared divergences).
    public func leavingOut(_ classes: Set<ForgeryClass>) -> GeneratedCase {
        guard !classes.isEmpty else { return self }
        var c = self
        c.steps = steps.filter { step in
            if case .deliver(let d) = step, let f = d.forgery { return !classes.contains(f) }
            return true
        }
        return c
    }

    /// The store's notifications that no step delivers (forgeries aside).
    static func lost(_ sim: StoreSimulator, steps: [CaseStep]) -> [LostNotification] {
        var delivered: Set<String> = []
        for case .deliver(let d) in steps where d.forgery == nil {
            if case .notification(let n) = d.delivery { delivered.insert(n.notificationUUID) }
        }
        return sim.notifications.filter { !delivered.contains($0.payload.notificationUUID) }.map { n in
            let p = n.payload
            let about = p.data?.transactionInfo.map { " \($0.productId) …\($0.transactionId.suffix(4))" } ?? ""
            return LostNotification(
                signedDate: p.signedDate, person: n.person,
                kind: p.notificationType.rawValue + (p.subtype.map { "/" + $0.rawValue } ?? "") + about)
        }
    }
}

/// A notification Apple sent that was lost on the way (the validator never received it).
public struct LostNotification: Codable, Hashable, Sendable {
    public var signedDate: Millis
    public var person: Int
    /// Type/subtype and the transaction it carries, as the timeline prints it.
    public var kind: String
}

/// Generates cases for one property from a choice source (random or replayed).
public struct CaseGenerator: Sendable {
    public var catalog: Catalog
    public var policy: Policy
    public var maxActions: Int
    /// Each case draws its own catalog, `catalog` being the simplest draw (see ``CatalogGenerator``).
    public var drawsCatalogs: Bool
    /// The case's size (``HistoryGenerator/size``).
    public var size: Int
    /// The validator's declared profile: facts travel only over its channels, and when it answers entitlements a
    /// catalog without any gets some (``Catalog/withEntitlements()``).
    public var profile: ValidatorProfile
    /// Forgery classes left out of every case (declared divergences).
    public var leavingOut: Set<ForgeryClass>

    public init(
        catalog: Catalog, policy: Policy, maxActions: Int = 12, drawsCatalogs: Bool = false, size: Int = 4,
        profile: ValidatorProfile = .undeclared, leavingOut: Set<ForgeryClass> = []
    ) {
        self.leavingOut = leavingOut
        self.catalog = catalog
        self.policy = policy
        self.maxActions = maxActions
        self.drawsCatalogs = drawsCatalogs
        self.size = size
        self.profile = profile
    }

    public func generate(_ property: PropertyName, _ src: ChoiceSource) -> (GeneratedCase, StoreSimulator) {
        let (history, steps) = HistoryGenerator(
            catalog: catalog, policy: policy, maxActions: maxActions, drawsCatalog: drawsCatalogs, size: size
        ).planned(src, perturbations: property.perturbations, channels: Set(profile.channels))
        let sim = history.sim
        let catalog = profile.answersEntitlements ? sim.catalog.withEntitlements() : sim.catalog
        let kinds = sim.notifications.map { n in
            n.payload.notificationType.rawValue + (n.payload.subtype.map { "/" + $0.rawValue } ?? "")
        }
        var c = GeneratedCase(
            property: property, config: ValidatorConfig(catalog: catalog, policy: policy), persons: sim.persons,
            origin: sim.origin ?? sim.now, events: sim.events, steps: steps, notificationKinds: kinds,
            lost: GeneratedCase.lost(sim, steps: steps))
        var sizes = [Int](repeating: 0, count: sim.persons.count)
        for id in sim.txOrder {
            if let otid = sim.latest(id)?.originalTransactionId, let p = sim.chains[otid]?.person,
                sizes.indices.contains(p)
            {
                sizes[p] += 1
            }
        }
        c.historySizes = sizes.filter { $0 > 0 }  // customers: people with at least one transaction
        return (c.leavingOut(leavingOut).holdingQuestions(at: profile.datePrecision, profile: profile), sim)
    }
}

extension GeneratedCase {
    /// The case as a validator whose dates are exact only to `precision` milliseconds can be asked it
    /// (docs/http-target.md#precision): a question closer than that to an instant where the oracle's answer changes
    /// moves a whole precision earlier or later, to an instant on the same side of every change (the same answer),
    /// or is dropped when neither is. A backend that keeps seconds is then never asked about the second in which
    /// it cannot tell an expiry from its truncation. Cases stay as they are at 1 ms.
    public func holdingQuestions(at precision: Millis, profile: ValidatorProfile) -> GeneratedCase {
        if !profile.questionsInHindsight {
            var asked = profile
            asked.questionsInHindsight = true
            return withoutHindsight.holdingQuestions(at: precision, profile: asked)
        }
        guard precision > 1 else { return self }
        var knowledge = Knowledge(config: config)
        var out: [CaseStep] = []
        out.reserveCapacity(steps.count)
        for step in steps {
            switch step {
            case .deliver(let d):
                // What the runner will have delivered and the oracle learned by then (CaseRunner.run).
                if profile.accepts(d.delivery.channel), d.forgery == nil, knowledge.rejection(d.delivery) == nil {
                    _ = knowledge.learn(d.delivery)
                }
                out.append(step)
            case .query(let q):
                let user = q.query.userId
                func answer(_ t: Millis) -> (EntitlementAnswer, Set<AnswerDifference.Key>) {
                    let j = Oracle.judge(knowledge, user: user, at: t)
                    return (j.answer, j.undetermined)
                }
                /// No change of the answer within `precision` on either side.
                func steady(_ t: Millis) -> Bool {
                    let here = answer(t)
                    return answer(t - (precision - 1)) == here && answer(t + (precision - 1)) == here
                }
                let at = q.query.at
                if steady(at) {
                    out.append(step)
                    continue
                }
                let here = answer(at)
                for shift in [-precision, precision, -2 * precision, 2 * precision]
                where answer(at + shift) == here && steady(at + shift) {
                    var moved = q
                    // A question in hindsight stays where it is asked; only the instant it asks about moves.
                    if !q.isHindsight { moved.appleTime += shift }
                    moved.query.at += shift
                    moved.query.deviceTime = q.query.deviceTime.map { $0 + shift }
                    out.append(.query(moved))
                    break
                }
            }
        }
        var c = self
        c.steps = out
        return c
    }

    /// The case without its questions in hindsight: for a validator asked only about its present
    /// (``ValidatorProfile/questionsInHindsight``).
    var withoutHindsight: GeneratedCase {
        var c = self
        c.steps = steps.filter {
            guard case .query(let q) = $0 else { return true }
            return !q.isHindsight
        }
        return c
    }
}
