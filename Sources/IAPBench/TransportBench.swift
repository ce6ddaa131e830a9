import Dispatch
import Foundation
import IAPConformance
import IAPModel
import IAPSigning
import IAPValidatorAPI
import PropertyEngine

/// `iapcheck bench transport`: operations per second through each transport, on the same pre-rendered operations.
public enum TransportBench {
    /// One operation of the mix: a reset, a signed delivery, or a question.
    public struct Operation: Sendable {
        public var reset: ValidatorConfig?
        public var delivery: SignedDelivery?
        public var now: Millis
        public var query: EntitlementQuery?
    }

    /// A realistic operation mix: the steps of 60 generated cases, rendered once, before any clock starts.
    public static func operations() -> [Operation] {
        let pki = TestPKI.harness
        let generator = CaseGenerator(catalog: .standard, policy: .default)
        var ops: [Operation] = []
        for i in 0..<60 {
            let (c, _) = generator.generate(.entitlementAgreement, ChoiceSource(seed: SplitMix64.derive(7, UInt64(i))))
            var config = c.config
            config.trustedRoots = pki.trustedRoots
            let renderer = ArtifactRenderer(pki: pki, appAppleId: c.config.catalog.appAppleId)
            ops.append(Operation(reset: config, now: 0))
            for step in c.steps {
                switch step {
                case .deliver(let d): ops.append(Operation(delivery: renderer.render(d.delivery), now: d.now))
                case .query(let q): ops.append(Operation(now: 0, query: q.query))
                }
            }
        }
        return ops
    }

    /// One client sends the operations in order, round after round, for `seconds`; the line says operations/s.
    public static func sequential(
        _ name: String, _ v: any Validator, _ ops: [Operation], seconds: Double
    ) throws -> String {
        let deadline = Measure.now() + UInt64(seconds * 1e9)
        let start = Measure.now()
        var n = 0, i = 0
        while Measure.now() < deadline {
            let op = ops[i % ops.count]
            if i % ops.count == 0 { try v.reset(ops[0].reset!) }
            if let config = op.reset { try v.reset(config) }
            if let delivery = op.delivery { _ = try v.deliver(delivery, now: op.now) }
            if let query = op.query { _ = try v.entitlements(query) }
            n += 1
            i += 1
        }
        let elapsed = Measure.seconds(since: start)
        return
            "\(name.column(36)) \(String(Int(Double(n) / elapsed)).leftPad(7)) ops/s  (\(n) operations: resets, signed deliveries, questions)"
    }

    /// Several clients at once, as a backend serves them, each on its own validator (connection) and from its own
    /// offset. The backend holds one state, so it is reset once before the clock: a client resetting it would wipe
    /// the others' histories mid-run. Only operations that succeeded count; failures are reported.
    public static func concurrent(
        _ name: String, _ validators: [any Validator], _ ops: [Operation], seconds: Double
    ) throws -> String {
        try validators[0].reset(ops[0].reset!)
        // Safe: each client thread uses only its own validator, `vs[k]`, and the operations are read-only.
        nonisolated(unsafe) let vs = validators
        let connections = validators.count
        let shared = ops.filter { $0.reset == nil }
        let total = Locked(0), failed = Locked(0)
        let group = DispatchGroup()
        let start = Measure.now()
        for c in 0..<connections {
            group.enter()
            Thread.detachNewThread {
                let v = vs[c]
                let deadline = start + UInt64(seconds * 1e9)
                var i = c * shared.count / connections, n = 0, bad = 0
                while Measure.now() < deadline {
                    let op = shared[i % shared.count]
                    do {
                        if let delivery = op.delivery { _ = try v.deliver(delivery, now: op.now) }
                        if let query = op.query { _ = try v.entitlements(query) }
                        n += 1
                    } catch {
                        bad += 1
                    }
                    i += 1
                }
                total.add(n)
                failed.add(bad)
                group.leave()
            }
        }
        group.wait()
        let elapsed = Measure.seconds(since: start)
        let (done, bad) = (total.value, failed.value)
        return
            "\(name.column(36)) \(String(Int(Double(done) / elapsed)).leftPad(7)) ops/s  (\(done) operations on \(connections) connections\(bad > 0 ? "; \(bad) FAILED, not counted" : ""))"
    }
}
