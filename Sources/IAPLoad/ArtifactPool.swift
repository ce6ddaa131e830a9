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
        public init(operation: LoadProfile.Operation, delivery: SignedDelivery?, query: EntitlementQuery?, now: Millis)
        {
            self.operation = operation
            self.delivery = delivery
            self.query = query
            self.now = now
        }
    }

    public var items: [Item]
    public var config: ValidatorConfig
    /// Histories delivered to every worker's validator before the clock starts, and questions about them whose
    /// answers the oracle knows: the load run's check that the validator still answers right under load.
    public var samples = AnswerSamples()

    public init(items: [Item], config: ValidatorConfig) {
        self.items = items
        self.config = config
    }

    public struct AnswerSamples: Sendable {
        /// Every generated case numbers its transactions, users and notification UUIDs from the same start, so the
        /// pool's histories share identifiers. A sample gets its own: the identifiers' fixed prefixes are rewritten
        /// (lengths and formats kept), consistently in the facts, the questions and hence the oracle's answers.
        static func apart<T: Codable>(_ value: T, _ j: Int) -> T? {
            guard let data = try? JSONFormat.compact().encode(value) else { return nil }
            let tag = String(format: "%03d", j)
            var text = String(decoding: data, as: UTF8.self)
            text = text.replacingOccurrences(of: #""2000(\d{12})""#, with: "\"7\(tag)$1\"", options: .regularExpression)
            text = text.replacingOccurrences(of: "a1b2c3d4-0000-4000-8000-", with: "5a3b1e00-0\(tag)-4000-8000-")
            text = text.replacingOccurrences(of: "5e1f0000-0000-4000-9000-", with: "5a3b1e00-0\(tag)-4000-9000-")
            return try? JSONDecoder().decode(T.self, from: Data(text.utf8))
        }

        public var deliveries: [(SignedDelivery, Millis)] = []
        public var questions: [(EntitlementQuery, Oracle.Judgement)] = []
        public init() {}

        /// Eight generated histories (seeded apart from the pool's, so their users are the samples' own), every
        /// genuine artifact of each, and every question of each case with the answer the oracle gives once all of
        /// the case's facts are known — what a validator that received them all must answer, whatever came since.
        public static func build(seed: UInt64, catalog: Catalog, policy: Policy) -> AnswerSamples {
            var out = AnswerSamples()
            let pki = TestPKI.harness
            for j in 0..<8 {
                let (sim, steps) = ArtifactPool.history(
                    catalog: catalog, policy: policy,
                    ChoiceSource(seed: SplitMix64.derive(seed ^ 0x5A3D_1E00_0000_0000, UInt64(j))))
                let renderer = ArtifactRenderer(pki: pki, appAppleId: catalog.appAppleId)
                var knowledge = Knowledge(config: ValidatorConfig(catalog: sim.catalog, policy: policy))
                var queries: [EntitlementQuery] = []
                for step in steps {
                    switch step {
                    case .deliver(let d):
                        guard d.forgery == nil, let delivery = Self.apart(d.delivery, j),
                            knowledge.rejection(delivery) == nil
                        else { continue }
                        _ = knowledge.learn(delivery)
                        out.deliveries.append((renderer.render(delivery), d.now))
                    case .query(let q):
                        if let query = Self.apart(q.query, j) { queries.append(query) }
                    }
                }
                for q in queries { out.questions.append((q, Oracle.judge(knowledge, user: q.userId, at: q.at))) }
            }
            return out
        }
    }

    /// A generated history and its realistic delivery plan: what an entitlement-agreement case of `check` is made of.
    static func history(catalog: Catalog, policy: Policy, _ src: ChoiceSource) -> (StoreSimulator, [CaseStep]) {
        let (history, steps) = HistoryGenerator(catalog: catalog, policy: policy).planned(
            src, perturbations: .realistic)
        return (history.sim, steps)
    }

    public static func build(_ profile: LoadProfile) -> ArtifactPool {
        let pki = TestPKI.harness
        // Cache-hostile share: the same chain shape under the same root, but one of many leaves, so a bounded chain
        // cache keeps missing.
        let hostile =
            profile.distinctChains > 0
            ? try! TestPKI(seed: pki.seed, validFrom: pki.validFrom, validUntil: pki.validUntil, leafCount: 256) : nil
        var byOp: [LoadProfile.Operation: [Item]] = [:]
        var rng = SplitMix64(seed: profile.poolSeed)
        var i: UInt64 = 0
        let wanted = profile.mix.filter { $0.value > 0 }.keys
        func enough() -> Bool { wanted.allSatisfy { (byOp[$0]?.count ?? 0) >= profile.poolSize } }
        while !enough() && i < 100_000 {
            let (sim, steps) = Self.history(
                catalog: .standard, policy: .default, ChoiceSource(seed: SplitMix64.derive(profile.poolSeed, i)))
            i += 1
            let renderer = ArtifactRenderer(pki: pki, appAppleId: sim.catalog.appAppleId)
            for step in steps {
                switch step {
                case .deliver(let d):
                    let op: LoadProfile.Operation
                    switch d.delivery {
                    case .appTransaction: op = .appTransaction
                    case .notification: op = .notification
                    case .legacyReceipt: op = .legacyReceipt
                    case .apiSnapshot: continue
                    }
                    guard (byOp[op]?.count ?? 0) < profile.poolSize else { continue }
                    var signed = renderer.render(d.delivery)
                    if let hostile, Double(rng.next() % 10_000) / 10_000 < profile.distinctChains,
                        case .appTransaction(let s) = d.delivery
                    {
                        let leaf = hostile.leaves[Int(rng.next() % UInt64(hostile.leaves.count))]
                        let jws = JWSSigner.es256(
                            JWSSigner.header(alg: "ES256", x5c: leaf.chain), JWSSigner.payload(s.transaction),
                            key: leaf.key)
                        signed = .appTransaction(userId: s.userId, signedTransaction: jws, deviceTime: s.deviceTime)
                    }
                    byOp[op, default: []].append(Item(operation: op, delivery: signed, query: nil, now: d.now))
                case .query(let q):
                    guard (byOp[.query]?.count ?? 0) < profile.poolSize else { continue }
                    byOp[.query, default: []].append(
                        Item(operation: .query, delivery: nil, query: q.query, now: q.query.at))
                }
            }
        }
        // Interleave by weight, deterministically.
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
        var pool = ArtifactPool(
            items: items, config: ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: pki.trustedRoots))
        if profile.answerSamplePercent > 0 && (profile.mix[.query] ?? 0) > 0 {
            pool.samples = .build(seed: profile.poolSeed, catalog: .standard, policy: .default)
        }
        return pool
    }
}
