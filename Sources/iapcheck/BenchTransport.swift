import ArgumentParser
import Dispatch
import Foundation
import IAPConformance
import IAPLoad
import IAPModel
import IAPReference
import IAPSigning
import IAPSimulator
import IAPSubprocess
import IAPValidatorAPI
import PropertyEngine

extension Bench {
    struct Transport: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Operations per second through a transport: the same pre-rendered deliveries and questions sent to the reference validator in-process and over the subprocess wire protocol.",
            discussion:
                "Build with -c release. The subprocess runs `iapcheck serve --validator reference` from this binary unless --command says otherwise."
        )

        @Option(help: "Seconds per transport.") var seconds: Double = 3
        @Option(help: "Subprocess command (default: this binary's serve).") var command: String?
        @Option(
            help:
                "Also measure a running backend over HTTP through this target file (e.g. Examples/http/example-backend.json)."
        ) var http: String?
        @Option(
            help:
                "HTTP connections in parallel (each its own client thread and keep-alive connection), besides the one-connection figure."
        ) var connections = 2

        func run() throws {
            // A realistic operation mix: the steps of generated cases, rendered once, before the clock starts.
            let pki = TestPKI.harness
            let generator = CaseGenerator(catalog: .standard, policy: .default)
            var ops: [(ValidatorConfig?, SignedDelivery?, Millis, EntitlementQuery?)] = []
            for i in 0..<60 {
                let (c, _) = generator.generate(
                    .entitlementAgreement, ChoiceSource(seed: SplitMix64.derive(7, UInt64(i))))
                var config = c.config
                config.trustedRoots = pki.trustedRoots
                let renderer = ArtifactRenderer(pki: pki, appAppleId: c.config.catalog.appAppleId)
                ops.append((config, nil, 0, nil))
                for step in c.steps {
                    switch step {
                    case .deliver(let d): ops.append((nil, renderer.render(d.delivery), d.now, nil))
                    case .query(let q): ops.append((nil, nil, 0, q.query))
                    }
                }
            }
            let me = CommandLine.arguments[0]
            let sub = SubprocessValidator(command: command ?? "'\(me)' serve --validator reference", timeout: 30)
            defer { sub.stop() }
            var transports: [(String, any Validator)] = [
                ("in-process", ReferenceValidator()), ("subprocess (wire protocol)", sub),
            ]
            if let http {
                transports.append(
                    ("HTTP \((http as NSString).lastPathComponent)", try makeValidator("http:" + http, timeout: 30)))
            }
            for (name, v) in transports {
                let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
                let start = DispatchTime.now().uptimeNanoseconds
                var n = 0, i = 0
                while DispatchTime.now().uptimeNanoseconds < deadline {
                    let (config, delivery, now, query) = ops[i % ops.count]
                    if i % ops.count == 0 { try v.reset(ops[0].0!) }
                    if let config { try v.reset(config) }
                    if let delivery { _ = try v.deliver(delivery, now: now) }
                    if let query { _ = try v.entitlements(query) }
                    n += 1
                    i += 1
                }
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                print(
                    "\(name.padding(toLength: 36, withPad: " ", startingAt: 0)) \(String(Int(Double(n) / elapsed)).leftPad(7)) ops/s  (\(n) operations: resets, signed deliveries, questions)"
                )
            }
            if let http, connections > 1 {
                // Several clients at once, as a backend serves them; each runs the operations from its own offset.
                // The backend holds one state, so it is reset once before the clock: a client resetting it would wipe
                // the others' histories mid-run. Only operations that succeeded count; failures are reported.
                let validators = try (0..<connections).map { _ in try makeValidator("http:" + http, timeout: 30) }
                try validators[0].reset(ops[0].0!)
                // Safe: each client thread uses only its own validator, `vs[k]`, and the operations are read-only.
                nonisolated(unsafe) let vs = validators
                let shared = ops.filter { $0.0 == nil }
                let total = Counter(), failed = Counter()
                let seconds = self.seconds
                let group = DispatchGroup()
                let start = DispatchTime.now().uptimeNanoseconds
                for c in 0..<connections {
                    group.enter()
                    Thread.detachNewThread {
                        let v = vs[c]
                        let deadline = start + UInt64(seconds * 1e9)
                        var i = c * shared.count / connections, n = 0, bad = 0
                        while DispatchTime.now().uptimeNanoseconds < deadline {
                            let (_, delivery, now, query) = shared[i % shared.count]
                            do {
                                if let delivery { _ = try v.deliver(delivery, now: now) }
                                if let query { _ = try v.entitlements(query) }
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
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                let name = "HTTP \((http as NSString).lastPathComponent) ×\(connections)"
                print(
                    "\(name.padding(toLength: 36, withPad: " ", startingAt: 0)) \(String(Int(Double(total.value) / elapsed)).leftPad(7)) ops/s  (\(total.value) operations on \(connections) connections\(failed.value > 0 ? "; \(failed.value) FAILED, not counted" : ""))"
                )
            }
        }
    }
}
