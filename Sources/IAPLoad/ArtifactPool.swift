import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import PropertyEngine

/// Artifacts rendered before the clock starts: signed app transactions and notifications, legacy receipt bodies and
/// entitlement questions taken from generated histories, in the profile's mix.
public struct ArtifactPool: Sendable {
    public struct Item: Sendable {
        public var operation: LoadProfile.Operation
        public var delivery: SignedDelivery?
        public var query: EntitlementQuery?
        public var now: Millis
        /// What it carries, by the ids a backend logs: for a report's sample of an error.
        public var label = ""
        public init(operation: LoadProfile.Operation, delivery: SignedDelivery?, query: EntitlementQuery?, now: Millis)
        {
            self.operation = operation
            self.delivery = delivery
            self.query = query
            self.now = now
        }

        /// `app transaction 2…0001 (pro.monthly) of user …`, `notification <uuid> DID_RENEW`, ….
        static func label(_ d: Delivery) -> String {
            switch d {
            case .appTransaction(let s):
                "app transaction \(s.transaction.transactionId) (\(s.transaction.productId)) of user \(s.userId)"
            case .notification(let n):
                "notification \(n.notificationUUID) \(n.notificationType.rawValue)\(n.subtype.map { "/" + $0.rawValue } ?? "")"
                    + (n.data?.transactionInfo.map { " of transaction \($0.transactionId)" } ?? "")
            case .legacyReceipt(let l): "legacy receipt of user \(l.userId)"
            case .apiSnapshot(let a): "API answer about \(a.originalTransactionId)"
            }
        }
    }

    public var items: [Item]
    public var config: ValidatorConfig
    /// Histories delivered to every worker's validator before the clock starts, and questions about them whose
    /// answers the oracle knows: the load run's check that the validator still answers right under load.
    public var samples = AnswerSamples()
    /// The run id the pool's namespaces come from (``Setup/runId``).
    public var runId: Int64 = 0

    public init(items: [Item], config: ValidatorConfig) {
        self.items = items
        self.config = config
    }

    public struct AnswerSamples: Sendable {
        public var deliveries: [(SignedDelivery, Millis)] = []
        public var questions: [(EntitlementQuery, Oracle.Judgement)] = []
        public init() {}

        /// Eight generated histories (seeded apart from the pool's, each in a namespace of its own, so their users
        /// are the samples' own), every genuine artifact of each on the validator's channels, and questions with the
        /// answer the oracle gives once all of the case's facts are known — what a validator that received them all
        /// must answer, whatever came since. The questions are the case's own, or with `at` one per user at that
        /// instant (a backend that answers at its own clock, frozen there). A question within the validator's date
        /// precision of a change of the answer is left out.
        public static func build(seed: UInt64, setup: Setup) -> AnswerSamples {
            var out = AnswerSamples()
            let pki = TestPKI.harness
            for j in 0..<8 {
                let ns = setup.namespace(ArtifactPool.maxHistories + j)
                let (sim, steps) = ArtifactPool.history(
                    catalog: setup.catalog, policy: setup.policy,
                    ChoiceSource(seed: SplitMix64.derive(seed ^ 0x5A3D_1E00_0000_0000, UInt64(j))))
                let renderer = ArtifactRenderer(pki: pki, appAppleId: setup.catalog.appAppleId)
                var knowledge = Knowledge(config: ValidatorConfig(catalog: sim.catalog, policy: setup.policy))
                var queries: [EntitlementQuery] = []
                let firstDelivery = out.deliveries.count
                for step in steps {
                    switch step {
                    case .deliver(let d):
                        let delivery = ns.apply(d.delivery)
                        guard d.forgery == nil, setup.validator.accepts(delivery.channel),
                            knowledge.rejection(delivery) == nil
                        else { continue }
                        _ = knowledge.learn(delivery)
                        out.deliveries.append((renderer.render(delivery), d.now))
                    case .query(let q):
                        var query = q.query
                        query.userId = ns.uuid(query.userId)
                        queries.append(query)
                    }
                }
                if let at = setup.answersAt {
                    // A backend on its own clock is asked only about histories wholly before that clock: Apple never
                    // sends an artifact dated later than the moment it arrives, so what a backend makes of one is
                    // not App Store semantics.
                    guard out.deliveries[firstDelivery...].allSatisfy({ $0.1 <= at }) else {
                        out.deliveries.removeSubrange(firstDelivery...)
                        continue
                    }
                    let users = sim.persons.map { ns.uuid($0.accountId) }
                    queries = users.map { EntitlementQuery(userId: $0, at: at) }
                }
                let precision = setup.validator.datePrecision
                for q in queries {
                    let j = Oracle.judge(knowledge, user: q.userId, at: q.at)
                    // Instants the backend may answer at instead: within its precision, and on a clock that runs on
                    // through the run (`answersWindow`), the whole window.
                    var near = precision > 1 ? [q.at - (precision - 1), q.at + (precision - 1)] : []
                    if setup.answersWindow > 0 {
                        near += (1...32).map { q.at + setup.answersWindow * Millis($0) / 32 }
                    }
                    guard near.allSatisfy({ Oracle.judge(knowledge, user: q.userId, at: $0).answer == j.answer })
                    else { continue }
                    out.questions.append((q, j))
                }
            }
            return out
        }
    }

    /// What the pool is made for: the app (catalog and policy), the validator's declared profile (its channels and
    /// the fields it answers), and the run's namespace base (every history's ids are its own, and a second run's
    /// are not the first's).
    public struct Setup: Sendable {
        public var catalog: Catalog = .standard
        public var policy: Policy = .default
        public var validator: ValidatorProfile = .everything
        /// The instant a backend answers at when iapcheck does not move its clock per request (a `faketime` target
        /// frozen for the run, a `wall` one on the real time): samples ask one question per user then; nil: each
        /// question's own.
        public var answersAt: Millis?
        /// How long after `answersAt` the backend may still be asked (a real clock runs on through the run): only
        /// answers steady over the whole window are sampled.
        public var answersWindow: Millis = 0
        /// The run's id: history i of the pool gets namespace `runId + i` (mod 10^10), the samples the next eight
        /// after ``ArtifactPool/maxHistories``. Segments of one run share it to send one pool.
        public var runId: Int64 = Self.randomRunId()
        public init() {}

        public static func randomRunId() -> Int64 { Int64.random(in: 0..<10_000_000_000) }

        func namespace(_ i: Int) -> IDNamespace { IDNamespace(value: (runId + Int64(i)) % 10_000_000_000) }
    }

    /// Histories a pool draws at most.
    public static let maxHistories = 100_000

    /// A generated history and its realistic delivery plan: what an entitlement-agreement case of `check` is made of.
    static func history(catalog: Catalog, policy: Policy, _ src: ChoiceSource) -> (StoreSimulator, [CaseStep]) {
        let (history, steps) = HistoryGenerator(catalog: catalog, policy: policy).planned(
            src, perturbations: .realistic)
        return (history.sim, steps)
    }

    /// The operations of the mix the validator takes (a legacy receipt needs its legacy channel, and so on);
    /// questions it always takes.
    public static func operations(_ profile: LoadProfile, for v: ValidatorProfile) -> (
        sent: [LoadProfile.Operation], dropped: [LoadProfile.Operation]
    ) {
        let wanted = LoadProfile.Operation.allCases.filter { (profile.mix[$0] ?? 0) > 0 }
        return (
            wanted.filter { $0.channel.map(v.accepts) ?? true }, wanted.filter { !($0.channel.map(v.accepts) ?? true) }
        )
    }

    public static func build(_ profile: LoadProfile, setup: Setup = Setup()) -> ArtifactPool {
        let pki = TestPKI.harness
        // Cache-hostile share: the same chain shape under the same root, but one of many leaves, so a bounded chain
        // cache keeps missing.
        let hostile =
            profile.distinctChains > 0
            ? try! TestPKI(seed: pki.seed, validFrom: pki.validFrom, validUntil: pki.validUntil, leafCount: 256) : nil
        var collected = Collected(wanted: Self.operations(profile, for: setup.validator).sent, size: profile.poolSize)
        var rng = SplitMix64(seed: profile.poolSeed)
        var i: UInt64 = 0
        while !collected.enough && i < UInt64(Self.maxHistories) {
            let (sim, steps) = Self.history(
                catalog: setup.catalog, policy: setup.policy,
                ChoiceSource(seed: SplitMix64.derive(profile.poolSeed, i)))
            // Ids of this history's own in this run: no two histories, and no two runs, share one.
            let ns = setup.namespace(Int(i))
            i += 1
            let renderer = ArtifactRenderer(pki: pki, appAppleId: sim.catalog.appAppleId)
            for step in steps {
                switch step {
                case .deliver(let planned):
                    guard planned.forgery == nil else { continue }
                    let delivery = ns.apply(planned.delivery)
                    guard let op = Self.operation(of: delivery), collected.wants(op) else { continue }
                    var signed = renderer.render(delivery)
                    if let hostile, Double(rng.next() % 10_000) / 10_000 < profile.distinctChains,
                        case .appTransaction(let s) = delivery
                    {
                        signed = Self.underAnotherLeaf(s, of: hostile, &rng)
                    }
                    var item = Item(operation: op, delivery: signed, query: nil, now: planned.now)
                    item.label = Item.label(delivery)
                    collected.byOp[op, default: []].append(item)
                case .query(let q):
                    guard collected.wants(.query) else { continue }
                    var query = q.query
                    query.userId = ns.uuid(query.userId)
                    var item = Item(operation: .query, delivery: nil, query: query, now: query.at)
                    item.label = "question about user \(query.userId) at \(CivilTime.iso8601(query.at))"
                    collected.byOp[.query, default: []].append(item)
                }
            }
        }
        var pool = ArtifactPool(
            items: Self.interleave(collected.byOp, profile, &rng),
            config: ValidatorConfig(catalog: setup.catalog, policy: setup.policy, trustedRoots: pki.trustedRoots))
        pool.runId = setup.runId
        if profile.answerSamplePercent > 0 && collected.wanted.contains(.query) {
            pool.samples = .build(seed: profile.poolSeed, setup: setup)
        }
        return pool
    }

    /// Items collected per operation, up to the pool's size for each operation wanted.
    struct Collected {
        let wanted: [LoadProfile.Operation]
        let size: Int
        var byOp: [LoadProfile.Operation: [Item]] = [:]

        var enough: Bool { wanted.allSatisfy { (byOp[$0]?.count ?? 0) >= size } }
        func wants(_ op: LoadProfile.Operation) -> Bool { wanted.contains(op) && (byOp[op]?.count ?? 0) < size }
    }

    /// The load operation that sends a delivery; nil for an API snapshot (the store serves it, nobody sends it).
    static func operation(of delivery: Delivery) -> LoadProfile.Operation? {
        switch delivery {
        case .appTransaction: .appTransaction
        case .notification: .notification
        case .legacyReceipt: .legacyReceipt
        case .apiSnapshot: nil
        }
    }

    /// The app transaction signed under one of the hostile PKI's many leaves, drawn with `rng`.
    static func underAnotherLeaf(
        _ s: AppTransactionSubmission, of hostile: TestPKI, _ rng: inout SplitMix64
    ) -> SignedDelivery {
        let leaf = hostile.leaves[Int(rng.next() % UInt64(hostile.leaves.count))]
        let jws = JWSSigner.es256(
            JWSSigner.header(alg: "ES256", x5c: leaf.chain), JWSSigner.payload(s.transaction), key: leaf.key)
        return .appTransaction(userId: s.userId, signedTransaction: jws, deviceTime: s.deviceTime)
    }

    /// The operations' items interleaved by the mix's weights, deterministically (`rng`).
    static func interleave(
        _ byOp: [LoadProfile.Operation: [Item]], _ profile: LoadProfile, _ rng: inout SplitMix64
    ) -> [Item] {
        let ops = LoadProfile.Operation.allCases.filter { (profile.mix[$0] ?? 0) > 0 && !(byOp[$0]?.isEmpty ?? true) }
        let total = ops.map { profile.mix[$0]! }.reduce(0, +)
        var items: [Item] = []
        var cursor: [LoadProfile.Operation: Int] = [:]
        for _ in 0..<(profile.poolSize * max(1, ops.count)) {
            var pick = Int(rng.next() % UInt64(max(total, 1)))
            for op in ops {
                let w = profile.mix[op]!
                if pick < w {
                    let list = byOp[op]!
                    items.append(list[cursor[op, default: 0] % list.count])
                    cursor[op, default: 0] += 1
                    break
                }
                pick -= w
            }
        }
        return items
    }
}
