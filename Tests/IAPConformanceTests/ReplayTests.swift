import Foundation
import IAPTesting
import Testing

/// `replay` without files reads the folder check saves a backend's counterexamples in, and says when it holds none
/// instead of "0 cases replayed" (a CI job replaying an empty default passed without a word), starting no backend.
@Suite struct ReplayDefaultFolderTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aBackendsReplayReadsItsOwnFolder() throws {
        let dir = try CLI.folder("replay-default")
        try Data(
            #"""
            {"name": "shop", "baseURL": "http://127.0.0.1:9", "start": {"command": "exit 7"},
             "channels": ["app-transaction"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}?at={at}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: dir + "/target.json"))
        let r = try CLI.run(["replay", "--validator", "http:target.json"], in: dir)
        #expect(r.status == 0 && r.out.contains("no saved counterexamples in Corpus/http-shop"), "\(r.out)\n\(r.err)")
    }
}

/// A replay that fails against a backend iapcheck starts keeps the backend's output and says where, as check does.
@Suite struct ReplayKeepsTheBackendsOutputTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aFailedReplaySaysWhereTheBackendsOutputIs() throws {
        let dir = try CLI.folder("replay-output")
        let port = 29_000 + Int(getpid() % 400)
        // A backend that refuses every purchase and answers every question with nothing.
        try Data(
            #"""
            import http.server, sys
            class H(http.server.BaseHTTPRequestHandler):
                def answer(self, status, body):
                    self.send_response(status); self.send_header("Content-Length", str(len(body))); self.end_headers()
                    self.wfile.write(body)
                def do_POST(self):
                    self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    print("refusing", self.path, flush=True)
                    self.answer(204 if self.path == "/r" else 422, b"" if self.path == "/r" else b'{"reason": "no"}')
                def do_GET(self): self.answer(200, b'{"products": [], "groups": [], "consumables": []}')
            http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
            """#.utf8
        ).write(to: URL(fileURLWithPath: dir + "/refuses.py"))
        try Data(
            #"""
            {"name": "refuser", "baseURL": "http://127.0.0.1:\#(port)", "start": {"command": "python3 refuses.py {port}"},
             "channels": ["app-transaction"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}?at={at}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: dir + "/target.json"))
        let check = try CLI.run(["check", "--validator", "http:target.json", "--cases", "1", "--no-doctor"], in: dir)
        #expect(check.status == 1, "\(check.out)\n\(check.err)")
        let r = try CLI.run(["replay", "--validator", "http:target.json"], in: dir)
        #expect(r.status == 1, "\(r.out)\n\(r.err)")
        let line = try #require(r.out.split(separator: "\n").first { $0.hasPrefix("the backend's output: ") })
        let log = try String(contentsOfFile: String(line.dropFirst("the backend's output: ".count)), encoding: .utf8)
        #expect(log.contains("refusing /"), "\(log)")
    }
}
