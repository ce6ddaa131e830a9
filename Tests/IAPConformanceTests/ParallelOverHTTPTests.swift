import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPSupport
import IAPTesting
import IAPValidatorAPI
import Testing

/// `check --parallel` against a backend over HTTP: the race reaches it on two connections of its own, a backend that
/// serves one connection at a time takes both sides in turn instead of hanging, and a delivery lost to a write
/// conflict in the race is sent again alone, as Apple and the app would, before anything counts against the backend.
@Suite(.long) struct ParallelOverHTTPTests {
    /// An in-process validator served over loopback HTTP, a thread per connection, as a team's backend is. With
    /// `conflicts`, a delivery that arrives while another is being handled is answered 500 without being taken, as
    /// a backend whose database refuses a concurrent write does.
    static func serve(_ v: any Validator, conflicts: Bool = false) throws -> LoopbackHTTPServer {
        nonisolated(unsafe) let v = v
        let busy = Locked(0)
        let server = try LoopbackHTTPServer(port: 0) { r in
            let now = r.headers["x-now"].flatMap { Millis($0) } ?? 0
            func verdict(_ d: SignedDelivery) -> LoopbackHTTPServer.Response {
                let others = busy.withLock { n in
                    n += 1
                    return n - 1
                }
                defer { busy.withLock { $0 -= 1 } }
                if conflicts && others > 0 {
                    usleep(1_000)
                    return .init(status: 500, text: "database is locked")
                }
                switch try? v.deliver(d, now: now) {
                case .accepted?: return .init(status: 200, text: "{}")
                case .rejected(let reason)?: return .init(status: 422, text: #"{"reason": "\#(reason)"}"#)
                case nil: return .init(status: 500, text: "the validator failed")
                }
            }
            let body = (try? JSONSerialization.jsonObject(with: r.body)) as? [String: Any] ?? [:]
            switch r.path {
            case "/reset":
                guard let config = try? JSONDecoder().decode(ValidatorConfig.self, from: r.body),
                    (try? v.reset(config)) != nil
                else { return .init(status: 500, text: "reset failed") }
                return .init(status: 200, text: "{}")
            case "/purchases":
                return verdict(
                    .appTransaction(
                        userId: body["userId"] as? String ?? "",
                        signedTransaction: body["signedTransaction"] as? String ?? "",
                        deviceTime: (body["deviceTime"] as? NSNumber)?.int64Value))
            case "/notifications":
                return verdict(.notification(signedPayload: body["signedPayload"] as? String ?? ""))
            default:
                let query = EntitlementQuery(userId: r.query["user"] ?? "", at: Millis(r.query["at"] ?? "") ?? 0)
                guard let answer = try? v.entitlements(query), let data = try? JSONEncoder().encode(answer) else {
                    return .init(status: 500, text: "no answer")
                }
                return .init(status: 200, body: data)
            }
        }
        server.start()
        return server
    }

    static func target(port: Int) throws -> HTTPValidator.Target {
        let path = Scratch.directory + "parallel-\(UUID().uuidString).json"
        try Data(
            #"""
            {"baseURL": "http://127.0.0.1:\#(port)", "clockHeader": "X-Now",
             "channels": ["app-transaction", "notification"],
             "routes": {"reset": {"method": "POST", "path": "/reset"},
                        "appTransaction": {"method": "POST", "path": "/purchases"},
                        "notification": {"method": "POST", "path": "/notifications"},
                        "entitlements": {"method": "GET", "path": "/entitlements?user={userId}&at={at}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    static func check(port: Int, cases: Int) throws -> CheckReport {
        var o = CheckOptions()
        o.cases = cases
        o.properties = [.parallelDelivery]
        let v = HTTPValidator(target: try target(port: port), name: "http:served", timeout: 5)
        return Checker(options: o, validator: v).run()
    }

    static func failure(_ r: CheckReport) -> String {
        r.failure.map { "\($0.outcome)" } ?? ""
    }

    @Test func theRaceReachesABackendOverHTTPAndCatchesCheckThenActCredits() throws {
        let server = try Self.serve(try #require(Mutants.named("check-then-act-credit")).make())
        defer { server.stop() }
        let report = try Self.check(port: server.port, cases: 400)
        let d = try #require(report.failure?.discrepancy)
        #expect(d.property == .parallelDelivery)
        #expect(d.differences.contains { $0.contains("balance") }, "\(d.differences)")
        // Where the race began, and the double credit named before the mapping's units.
        #expect(d.differences.contains { $0.contains("from delivery") && $0.contains("two concurrent clients") })
        // A balance that is a whole multiple gets the hint, and under a race it names the double credit first (the
        // shrunk case decides whether it is a multiple: 2 for 1 here, 3 for 2 under a slower build).
        for hint in d.differences where hint.contains("every differing balance") {
            #expect(hint.contains("credits every delivery of a purchase"), "\(hint)")
        }
    }

    @Test func aDeliveryLostToAWriteConflictInTheRaceIsSentAgainAloneAndACorrectBackendPasses() throws {
        let server = try Self.serve(SynchronizedReferenceValidator(), conflicts: true)
        defer { server.stop() }
        let report = try Self.check(port: server.port, cases: 60)
        #expect(report.failure == nil, "\(Self.failure(report))")
        #expect(report.passed == 60)
        #expect(report.forgeries.race.sentAlone > 0)
        #expect(report.forgeries.race.line?.contains("HTTP 500") == true, "\(report.forgeries.race)")
    }

    /// Python's `HTTPServer` (no threads) with HTTP/1.1 keep-alive serves one connection until it closes: a second
    /// client waits in the backlog. Such a backend must still pass, in front of a correct one here.
    @Test func aBackendThatServesOneConnectionAtATimeTakesBothSidesInTurn() throws {
        let server = try Self.serve(SynchronizedReferenceValidator())
        defer { server.stop() }
        let script = Scratch.directory + "one-connection-\(UUID().uuidString).py"
        try Data(Self.oneConnectionProxy.utf8).write(to: URL(fileURLWithPath: script))
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        proxy.arguments = ["python3", script, String(server.port)]
        let out = Pipe()
        proxy.standardOutput = out
        try proxy.run()
        defer { proxy.killAndWait() }
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        let port = try #require(Int(line.trimmingCharacters(in: .whitespacesAndNewlines)), "proxy said \(line)")
        let report = try Self.check(port: port, cases: 30)
        #expect(report.failure == nil, "\(Self.failure(report))")
        #expect(report.passed == 30)
        // Both sides got their answers in the race: none waited out a timeout and had to be sent again alone.
        #expect(report.forgeries.race.sentAlone == 0, "\(report.forgeries.race)")
    }

    /// A one-connection-at-a-time HTTP/1.1 server forwarding each request to `argv[1]`'s port.
    static let oneConnectionProxy = #"""
        import http.client, sys
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args):
                pass
            def forward(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "host")}
                c.request(self.command, self.path, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
                c.close()
                self.send_response(r.status)
                self.send_header("Content-Type", r.getheader("Content-Type") or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            do_GET = do_POST = forward

        server = HTTPServer(("127.0.0.1", 0), Forward)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#
}
