import Dispatch
import Foundation
import IAPConformance
import IAPModel
import IAPSigning
import IAPSupport
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

    /// What several clients sent at once: only operations that succeeded count; the failed ones are reported.
    public struct Throughput: Sendable {
        public var operations: Int
        public var failed: Int
        public var seconds: Double
        public var connections: Int
        /// Whether each client had a backend state of its own (a tenant per job) or all shared one.
        public var isolated: Bool

        public var perSecond: Double { Double(operations) / max(seconds, 1e-9) }

        public func line(_ name: String) -> String {
            let state = isolated ? "each its own state" : "one shared state"
            return
                "\(name.column(36)) \(String(Int(perSecond)).leftPad(7)) ops/s  (\(operations) operations on \(connections) connections, \(state)\(failed > 0 ? "; \(failed) FAILED, not counted" : ""))"
        }
    }

    /// Several clients at once, as a backend serves them, each on its own validator (connection), for `seconds`.
    ///
    /// `isolated`: each validator keeps a state of its own (an HTTP target's tenant per job, `X-IAPCheck-Job`), so
    /// each client resets it and sends the whole mix in order, resets included, as ``sequential(_:_:_:seconds:)``
    /// does. Otherwise the clients share one state: it is reset once before the clock (a client resetting it would
    /// wipe the others' histories mid-run) and each client sends the deliveries and questions from its own offset.
    /// Only operations that succeeded count.
    public static func concurrent(
        _ validators: [any Validator], _ ops: [Operation], seconds: Double, isolated: Bool
    ) throws -> Throughput {
        let first = ops.first { $0.reset != nil }?.reset
        if let first {
            if isolated {
                for v in validators { try v.reset(first) }
            } else {
                try validators[0].reset(first)
            }
        }
        // Safe: each client thread uses only its own validator, `vs[k]`, and the operations are read-only.
        nonisolated(unsafe) let vs = validators
        let connections = validators.count
        let mix = isolated ? ops : ops.filter { $0.reset == nil }
        guard !mix.isEmpty else {
            return Throughput(operations: 0, failed: 0, seconds: 0, connections: connections, isolated: isolated)
        }
        let total = Locked(0), failed = Locked(0)
        let group = DispatchGroup()
        let start = Measure.now()
        for c in 0..<connections {
            group.enter()
            Thread.detachNewThread {
                let v = vs[c]
                let deadline = start + UInt64(seconds * 1e9)
                var i = isolated ? 0 : c * mix.count / connections, n = 0, bad = 0
                // At least one operation each, even where a busy machine starts the thread after the deadline.
                repeat {
                    let op = mix[i % mix.count]
                    do {
                        if let config = op.reset { try v.reset(config) }
                        if let delivery = op.delivery { _ = try v.deliver(delivery, now: op.now) }
                        if let query = op.query { _ = try v.entitlements(query) }
                        n += 1
                    } catch {
                        bad += 1
                    }
                    i += 1
                } while Measure.now() < deadline
                total.add(n)
                failed.add(bad)
                group.leave()
            }
        }
        group.wait()
        return Throughput(
            operations: total.value, failed: failed.value, seconds: Measure.seconds(since: start),
            connections: connections, isolated: isolated)
    }
}
