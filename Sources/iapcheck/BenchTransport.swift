import ArgumentParser
import Foundation
import IAPBench
import IAPHTTP
import IAPModel
import IAPReference
import IAPSubprocess
import IAPSupport
import IAPValidatorAPI

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
                "HTTP connections in parallel (each its own client thread and keep-alive connection), besides the one-connection figure. With the target's maxConcurrency at least this, each connection is a job with its own backend state; otherwise they share one."
        ) var connections = 2

        func validate() throws {
            try BenchBounds.seconds("--seconds", seconds)
            try BenchBounds.count("--connections", connections, max: BenchBounds.maxThreads)
        }

        func run() throws {
            let ops = TransportBench.operations()
            let me = CommandLine.arguments[0]
            let sub = SubprocessValidator(
                command: command ?? "\(Shell.quote(me)) serve --validator reference", timeout: 30)
            defer { sub.stop() }
            var transports: [(String, any Validator)] = [
                ("in-process", ReferenceValidator()), ("subprocess (wire protocol)", sub),
            ]
            if let http {
                transports.append(
                    ("HTTP \((http as NSString).lastPathComponent)", try makeValidator("http:" + http, timeout: 30)))
            }
            for (name, v) in transports { print(try TransportBench.sequential(name, v, ops, seconds: seconds)) }
            if let http, connections > 1 {
                // A target that keeps a state per job (maxConcurrency, X-IAPCheck-Job) gives each client its own
                // tenant; otherwise the clients share the backend's one state.
                let target: HTTPValidator.Target
                do {
                    target = try HTTPValidator.Target.load(path: http)
                } catch {
                    throw fail("error: \(error)", code: Exit.usage)
                }
                let isolated = target.maxConcurrency >= connections
                let validators = try (0..<connections).map {
                    try makeValidator("http:" + http, timeout: 30, job: isolated ? $0 : 0)
                }
                let name = "HTTP \((http as NSString).lastPathComponent) ×\(connections)"
                let result = try TransportBench.concurrent(validators, ops, seconds: seconds, isolated: isolated)
                print(result.line(name))
                if !isolated {
                    print(
                        "  (the target's maxConcurrency is \(target.maxConcurrency): the \(connections) clients share one backend state; give it \"maxConcurrency\": \(connections) when the backend keeps a state per \(HTTPValidator.jobHeader) header)"
                    )
                }
            }
        }
    }
}
