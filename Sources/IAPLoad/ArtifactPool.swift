import Foundation
import IAPConformance
import IAPModel
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
    }

    public var items: [Item]
    public var config: ValidatorConfig

    public static func build(_ profile: LoadProfile) -> ArtifactPool {
        let pki = CaseRunner.pki
        // Cache-hostile share: the same chain shape under the same root, but one of many leaves, so a bounded chain
        // cache keeps missing.
        let hostile = profile.distinctChains > 0
            ? try! TestPKI(seed: pki.seed, validFrom: pki.validFrom, validUntil: pki.validUntil, leafCount: 256) : nil
        var byOp: [LoadProfile.Operation: [Item]] = [:]
        let generator = CaseGenerator(catalog: .standard, policy: .default)
        var rng = SplitMix64(seed: profile.poolSeed)
        var i: UInt64 = 0
        let wanted = profile.mix.filter { $0.value > 0 }.keys
        func enough() -> Bool { wanted.allSatisfy { (byOp[$0]?.count ?? 0) >= profile.poolSize } }
        while !enough() && i < 100_000 {
            let (c, _) = generator.generate(.entitlementAgreement, ChoiceSource(seed: SplitMix64.derive(profile.poolSeed, i)))
            i += 1
            let renderer = ArtifactRenderer(pki: pki, appAppleId: c.config.catalog.appAppleId)
            for step in c.steps {
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
                        case .appTransaction(let s) = d.delivery {
                        let leaf = hostile.leaves[Int(rng.next() % UInt64(hostile.leaves.count))]
                        let jws = JWSSigner.es256(JWSSigner.header(alg: "ES256", x5c: leaf.chain), JWSSigner.payload(s.transaction), key: leaf.key)
                        signed = .appTransaction(userId: s.userId, signedTransaction: jws, deviceTime: s.deviceTime)
                    }
                    byOp[op, default: []].append(Item(operation: op, delivery: signed, query: nil, now: d.now))
                case .query(let q):
                    guard (byOp[.query]?.count ?? 0) < profile.poolSize else { continue }
                    byOp[.query, default: []].append(Item(operation: .query, delivery: nil, query: q.query, now: q.query.at))
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
        return ArtifactPool(items: items, config: ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: pki.trustedRoots))
    }
}
