import Foundation
import IAPHTTP
import IAPTesting
import IAPValidatorAPI
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A target's `start` command runs as written, with `/bin/sh -c` (docs/http-target.md#a-backend-iapcheck-starts):
/// services configured through their environment are the normal case, and iapcheck still stops all it started.
@Suite(.serialized) struct ManagedBackendTests {
    /// A Python program that listens on the port its environment names and answers 200 to anything.
    static let server = """
        import http.server, os
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
        http.server.HTTPServer(("127.0.0.1", int(os.environ["NOTES_PORT"])), H).serve_forever()
        """

    static func folderWithServer() throws -> String {
        let dir = Scratch.directory + "managed-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/backend", withIntermediateDirectories: true)
        try Data(server.utf8).write(to: URL(fileURLWithPath: dir + "/backend/server.py"))
        return dir
    }

    func startsAndStops(_ command: (Int, String) -> String) throws {
        let dir = try Self.folderWithServer()
        let port = try LoopbackHTTPClient.freePort()
        let backend = try ManagedBackend.shared(
            command: command(port, dir), host: "127.0.0.1", port: port, readySeconds: 20)
        #expect(LoopbackHTTPClient.accepts(host: "127.0.0.1", port: port))
        backend.stopAndForget()
        // The server was the shell's child, not the shell: it must be gone too.
        let deadline = Date().addingTimeInterval(5)
        while LoopbackHTTPClient.accepts(host: "127.0.0.1", port: port) && Date() < deadline { usleep(20_000) }
        #expect(!LoopbackHTTPClient.accepts(host: "127.0.0.1", port: port), "something still listens on \(port)")
    }

    @Test func anEnvironmentAssignmentInFrontOfTheCommandReachesTheBackend() throws {
        try startsAndStops { port, dir in "NOTES_PORT=\(port) python3 \(dir)/backend/server.py" }
    }

    @Test func aCdAndAnAndListRunsInThatFolder() throws {
        try startsAndStops { port, dir in "cd \(dir)/backend && NOTES_PORT=\(port) python3 server.py" }
    }

    @Test func aProgramTheShellCannotFindGetsAHint() throws {
        let port = try LoopbackHTTPClient.freePort()
        do {
            _ = try ManagedBackend.shared(
                command: "PORT=\(port) ./no-such-backend --port \(port)", host: "127.0.0.1", port: port,
                readySeconds: 10)
            Issue.record("a missing program started")
        } catch {
            #expect(error.message.contains("status 127"), "\(error.message)")
            #expect(error.fix?.contains("/bin/sh -c") == true, "\(String(describing: error.fix))")
        }
    }
}
