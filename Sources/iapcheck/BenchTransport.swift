import ArgumentParser
import Foundation
import IAPBench
import IAPReference
import IAPSubprocess
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
                "HTTP connections in parallel (each its own client thread and keep-alive connection), besides the one-connection figure."
        ) var connections = 2

        func run() throws {
            let ops = TransportBench.operations()
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
            for (name, v) in transports { print(try TransportBench.sequential(name, v, ops, seconds: seconds)) }
            if let http, connections > 1 {
                let validators = try (0..<connections).map { _ in try makeValidator("http:" + http, timeout: 30) }
                let name = "HTTP \((http as NSString).lastPathComponent) ×\(connections)"
                print(try TransportBench.concurrent(name, validators, ops, seconds: seconds))
            }
        }
    }
}
