import IAPModel
import PropertyEngine

/// Turns a simulated history into what a validator sees and is asked: app submissions, notifications (late,
/// duplicated, retried, dropped and reconciled through the API), foreign and unknown artifacts, clock skews, and
/// entitlement questions at and around every boundary of the truth.
public struct DeliveryPlanner: Sendable {
    public var perturbations: Perturbations
    /// At most this many questions per case (boundary questions are kept first).
    public var maxQueries: Int
    /// The channels the validator takes facts from (its declared profile): nothing is sent over another. Facts are
    /// routed through what it has: without the app channel an in-app purchase reaches it as a legacy receipt (when
    /// it takes those); without the API a notification is never lost for good (nothing could recover it); without
    /// notifications the API reconciles what a notification would have said.
    public var channels: Set<DeliveryChannel>

    public init(
        perturbations: Perturbations, maxQueries: Int = 48,
        channels: Set<DeliveryChannel> = Set(DeliveryChannel.allCases)
    ) {
        self.perturbations = perturbations
        self.maxQueries = maxQueries
        self.channels = channels
    }

    /// A case's steps: the app channel's deliveries for every transaction the store created, the notification
    /// channel's for every notification it emitted, in arrival order, with the questions between them.
    public func plan(_ history: GeneratedHistory) -> [CaseStep] {
        let sim = history.sim
        let (validatorSkew, deviceSkew) = clockSkews(history)
        var out = Outbox(channels: channels, validatorSkew: validatorSkew)
        for (ci, c) in sim.creations.enumerated() {
            planApp(c, sim, ChoiceSource(replaying: history.creationEntropy[ci]), deviceSkew: deviceSkew, into: &out)
        }
        let next = Self.nextOfChain(sim)
        for (ni, n) in sim.notifications.enumerated() {
            let src = ChoiceSource(replaying: history.notificationEntropy[ni])
            planNotification(n, next: next[ni], sim, src, into: &out)
        }
        let order = out.deliveries.enumerated().sorted { a, b in
            a.element.arrival != b.element.arrival ? a.element.arrival < b.element.arrival : a.offset < b.offset
        }.map(\.element)
        let queries = planQueries(sim, deliveries: order, validatorSkew: validatorSkew, deviceSkew: deviceSkew)
        let hindsight = hindsightQueries(sim, deliveries: order)
        // Questions about now first, then those in hindsight, each in instant and person order.
        let all = (queries + hindsight).sorted {
            ($0.appleTime, $0.isHindsight ? 1 : 0, $0.query.at, $0.person)
                < ($1.appleTime, $1.isHindsight ? 1 : 0, $1.query.at, $1.person)
        }
        return Self.interleave(order, all)
    }

    /// Perturbation `clockSkew`: how far the validator's clock and the device's are from Apple's
    /// (docs/semantics.md#time-and-clocks).
    func clockSkews(_ history: GeneratedHistory) -> (validator: Millis, device: Millis) {
        guard perturbations.clockSkew else { return (0, 0) }
        let h = CivilTime.msPerHour, m = CivilTime.msPerMinute, s = CivilTime.msPerSecond, d = CivilTime.msPerDay
        let src = ChoiceSource(replaying: history.clockEntropy)
        let validator = src.pick([0, 1 * s, -1 * s, 30 * s, -30 * s, 5 * m, -5 * m, 1 * h, -1 * h])
        let device = src.pick([0, -d, -30 * d, 2 * h, -365 * d, 400 * d])
        return (validator, device)
    }

    /// Deliveries in arrival order with each question before the first delivery that arrives after it.
    static func interleave(_ order: [PlannedDelivery], _ queries: [PlannedQuery]) -> [CaseStep] {
        var steps: [CaseStep] = []
        var qi = 0
        for d in order {
            while qi < queries.count && queries[qi].appleTime < d.arrival {
                steps.append(.query(queries[qi]))
                qi += 1
            }
            steps.append(.deliver(d))
        }
        while qi < queries.count {
            steps.append(.query(queries[qi]))
            qi += 1
        }
        return steps
    }

    /// How often a notification is lost for good under the `drops` perturbation: 15 %, and 50 % for one whose news
    /// only a later page of the customer's history carries (a one-time purchase or a refund of a customer with more
    /// than a page of transactions: Apple orders pages by the date each transaction last changed, so the news is on
    /// the last page), so a backend that reads only the first page is caught.
    static func dropChance(_ n: EmittedNotification, _ sim: StoreSimulator) -> Int {
        let decisive: Set<NotificationTypeV2> = [.oneTimeCharge, .refund, .refundReversed, .revoke]
        guard decisive.contains(n.payload.notificationType), let chain = n.chainId else { return 15 }
        return sim.history(asking: chain, at: n.payload.signedDate).transactions.count > 20 ? 50 : 15
    }

    /// The chain whose transaction id a backend reconciling `chain` asks the API with: mostly that chain, but often
    /// another of the customer's (a backend that keeps one transaction id per user; any id finds the whole history,
    /// so the facts about `chain` arrive in an answer asked about another one).
    static func askingChain(_ chain: String, _ sim: StoreSimulator, at t: Millis, _ src: ChoiceSource) -> String {
        guard src.chance(35) else { return chain }
        let existing = sim.chains(of: sim.chains[chain]!.person).filter { c in
            c.txIds.first.flatMap { sim.latest($0, at: t) } != nil
        }
        return existing.isEmpty ? chain : src.pick(existing).id
    }

    /// The person's receipt as `verifyReceipt` would describe it at `t`: every chain they hold, in the legacy view,
    /// without consumables (finished ones leave the receipt).
    static func legacyReceipt(_ sim: StoreSimulator, person: Int, at t: Millis) -> LegacyReceiptFacts {
        var chains: [APISnapshot] = []
        for c in sim.chains(of: person) where c.kind != .consumable {
            let snap = sim.snapshot(chain: c.id, at: t)
            guard !snap.transactions.isEmpty else { continue }
            chains.append(
                APISnapshot(
                    originalTransactionId: snap.originalTransactionId,
                    transactions: snap.transactions.map { LegacyReceiptFacts.legacyView($0, requestDate: t) },
                    renewalInfo: snap.renewalInfo.map { LegacyReceiptFacts.legacyView($0, requestDate: t) }))
        }
        return LegacyReceiptFacts(
            userId: sim.persons[person].accountId, bundleId: sim.catalog.bundleId,
            environment: sim.catalog.environment, requestDate: t, chains: chains)
    }

    /// Questions at and around every truth boundary (b − 1 ms, b, b + 1 ms), right after each delivery, and a
    /// final question for everyone once everything has arrived.
    func planQueries(_ sim: StoreSimulator, deliveries: [PlannedDelivery], validatorSkew: Millis, deviceSkew: Millis)
        -> [PlannedQuery]
    {
        var boundary: [(Millis, Int)] = []
        for seg in sim.segments where seg.end < StoreSimulator.forever {
            for t in [seg.start, seg.end - 1, seg.end] { boundary.append((t, seg.person)) }
        }
        for seg in sim.segments where seg.end >= StoreSimulator.forever { boundary.append((seg.start, seg.person)) }
        var after: [(Millis, Int)] = deliveries.map { ($0.arrival, $0.person) }
        var picked = Array(Set(boundary.map { Key(t: $0.0, p: $0.1) })).sorted()
        if picked.count > maxQueries {
            let stride = Double(picked.count) / Double(maxQueries)
            picked = (0..<maxQueries).map { picked[Int(Double($0) * stride)] }
        }
        let room = max(0, maxQueries - picked.count)
        if after.count > room {
            let stride = Double(after.count) / Double(max(room, 1))
            after = room == 0 ? [] : (0..<room).map { after[Int(Double($0) * stride)] }
        }
        var keys = Set(picked)
        for (t, p) in after { keys.insert(Key(t: t, p: p)) }
        let end = (deliveries.map(\.arrival).max() ?? sim.now) + CivilTime.msPerMinute
        for p in sim.persons { keys.insert(Key(t: max(end, sim.now + 1), p: p.index)) }
        return keys.sorted().map { k in
            PlannedQuery(
                appleTime: k.t,
                query: EntitlementQuery(
                    userId: sim.persons[k.p].accountId, at: k.t + validatorSkew, deviceTime: k.t + deviceSkew),
                person: k.p)
        }
    }

    /// Questions in hindsight (docs/answers.md#questions-about-the-past): right after each delivery, about the
    /// instants of its person's history that fell since that person's previous delivery — a refund's
    /// `revocationDate`, the end of a family share, an upgrade's `purchaseDate`, a recovery, an expiry — each at
    /// b − 1 ms and at b, asked now about then. Support tools, audits and revenue reports ask so; a backend
    /// that applies what it learned later to the wrong side of such an instant is wrong only here. At most the
    /// two latest instants per delivery, and `maxQueries` in all.
    func hindsightQueries(_ sim: StoreSimulator, deliveries: [PlannedDelivery]) -> [PlannedQuery] {
        var instants: [Int: Set<Millis>] = [:]
        for seg in sim.segments {
            instants[seg.person, default: []].insert(seg.start)
            if seg.end < StoreSimulator.forever { instants[seg.person, default: []].insert(seg.end) }
        }
        let sorted = instants.mapValues { $0.sorted() }
        var previous: [Int: Millis] = [:]
        var out: [PlannedQuery] = []
        var asked: Set<PlannedQuery> = []
        for d in deliveries {
            let since = previous[d.person] ?? .min
            previous[d.person] = d.arrival
            for b in (sorted[d.person] ?? []).filter({ $0 > since && $0 < d.arrival }).suffix(2) {
                for t in [b - 1, b] where t < d.arrival {
                    let q = PlannedQuery(
                        appleTime: d.arrival,
                        query: EntitlementQuery(userId: sim.persons[d.person].accountId, at: t, deviceTime: nil),
                        person: d.person, hindsight: true)
                    if asked.insert(q).inserted { out.append(q) }
                }
            }
        }
        guard out.count > maxQueries else { return out }
        let stride = Double(out.count) / Double(maxQueries)
        return (0..<maxQueries).map { out[Int(Double($0) * stride)] }
    }

    struct Key: Hashable, Comparable {
        var t: Millis
        var p: Int
        static func < (a: Key, b: Key) -> Bool { a.t != b.t ? a.t < b.t : a.p < b.p }
    }
}

extension HistoryGenerator {
    /// A generated history and its planned deliveries and questions: the start of every case and every load pool.
    public func planned(
        _ src: ChoiceSource, perturbations: Perturbations,
        channels: Set<DeliveryChannel> = Set(DeliveryChannel.allCases)
    ) -> (GeneratedHistory, [CaseStep]) {
        let history = generate(src)
        return (history, DeliveryPlanner(perturbations: perturbations, channels: channels).plan(history))
    }
}
