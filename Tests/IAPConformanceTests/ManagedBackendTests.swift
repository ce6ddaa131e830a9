import Foundation
import IAPEncoding
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

    /// send keeps its backends' folders under `.iapcheck/`, relative to where iapcheck runs: {tmp} must still reach a
    /// command that changes its folder first.
    @Test func tmpIsAnAbsolutePathEvenForARelativeStateFolder() throws {
        let dir = try Self.folderWithServer()
        // The folder as a path relative to the working directory, which other tests share (so it is not changed).
        let depth =
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.pathComponents
            .count - 1
        let relative = String(repeating: "../", count: depth) + String(dir.drop { $0 == "/" }) + "/.iapcheck/backend"
        ManagedBackend.persistentDirectory.withLock { $0 = relative }
        defer { ManagedBackend.persistentDirectory.withLock { $0 = nil } }
        try startsAndStops { port, dir in
            "cd \(dir)/backend && echo started > {tmp}/mark && NOTES_PORT=\(port) python3 server.py"
        }
        let folders = try FileManager.default.contentsOfDirectory(atPath: dir + "/.iapcheck")
        #expect(folders.contains { FileManager.default.fileExists(atPath: "\(dir)/.iapcheck/\($0)/mark") })
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

/// `--jobs` on one target (docs/http-target.md#concurrent-jobs): how the target lets jobs be kept apart, and a
/// start command with `{port}` starting one instance per job.
@Suite(.serialized) struct JobSharingTests {
    static func target(_ json: String) throws -> HTTPValidator.Target {
        let file = Scratch.directory + "jobs-\(UUID().uuidString).json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: file))
        return try HTTPValidator.Target.load(path: file)
    }

    static let routes =
        #""routes": {"appTransaction": {"method": "POST", "path": "/p"}, "entitlements": {"method": "GET", "path": "/e/{userId}"}}"#
    static let reset = #""reset": {"method": "POST", "path": "/reset"}, "#

    @Test func eachTargetSaysHowJobsShareIt() throws {
        let base = #""baseURL": "http://127.0.0.1:8799", "channels": ["app-transaction"]"#
        let resetRoutes = Self.routes.replacingOccurrences(of: #""routes": {"#, with: #""routes": {"# + Self.reset)
        #expect(try Self.target("{\(base), \(resetRoutes)}").jobSharing == .one)
        #expect(try Self.target("{\(base), \"maxConcurrency\": 4, \(resetRoutes)}").jobSharing == .tenants(4))
        // Without a reset route, on the clock header: every case's ids are its own, the clock is per request.
        #expect(try Self.target("{\(base), \(Self.routes)}").jobSharing == .sharedInstance)
        let started = #""start": {"command": "run --port {port} --db {tmp}/db"}, "clock": "faketime""#
        #expect(try Self.target("{\(base), \(started), \(Self.routes)}").jobSharing == .instances)
        // Without {port} a started faketime backend is one backend with one clock.
        let fixed = started.replacingOccurrences(of: "{port}", with: "8799")
        #expect(try Self.target("{\(base), \(fixed), \(Self.routes)}").jobSharing == .one)
    }

    @Test func aStartCommandWithPortStartsAnInstancePerJob() throws {
        let dir = try ManagedBackendTests.folderWithServer()
        let json = """
            {"baseURL": "http://127.0.0.1:\(try LoopbackHTTPClient.freePort())", "channels": ["app-transaction"],
             "start": {"command": "NOTES_PORT={port} python3 \(dir)/backend/server.py", "readySeconds": 20},
             \(Self.routes)}
            """
        let t = try Self.target(json)
        let first = try t.instance(forJob: 0)
        let second = try t.instance(forJob: 1)
        #expect(first.port == t.port && second.port != t.port)
        var started: [ManagedBackend] = []
        defer { for b in started { b.stopAndForget() } }
        for instance in [first, second] {
            started.append(
                try ManagedBackend.shared(
                    command: instance.start!.command, host: instance.host, port: instance.port, readySeconds: 20))
            #expect(LoopbackHTTPClient.accepts(host: "127.0.0.1", port: instance.port))
        }
        #expect(started[0] !== started[1] && started[0].directory != started[1].directory)
    }

    /// A target's "baseline" is read relative to the target file; a missing file is named.
    @Test func aTargetsBaselineIsRelativeToItsFile() throws {
        let dir = Scratch.directory + "baseline-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(#"{"version":1,"entries":[]}"#.utf8).write(to: URL(fileURLWithPath: dir + "/accepted.json"))
        let json =
            #"{"baseURL":"http://127.0.0.1:9","baseline":"accepted.json","routes":{"entitlements":{"method":"GET","path":"/e/{userId}?at={at}"},"appTransaction":{"method":"POST","path":"/a"},"notification":{"method":"POST","path":"/n"},"apiSnapshot":{"method":"POST","path":"/s"},"legacyReceipt":{"method":"POST","path":"/l"}}}"#
        try Data(json.utf8).write(to: URL(fileURLWithPath: dir + "/target.json"))
        #expect(try HTTPValidator.Target.load(path: dir + "/target.json").baseline == dir + "/accepted.json")
        try Data(json.replacingOccurrences(of: "accepted.json", with: "gone.json").utf8)
            .write(to: URL(fileURLWithPath: dir + "/target.json"))
        #expect {
            try HTTPValidator.Target.load(path: dir + "/target.json")
        } throws: { error in
            (error as? ConfigError)?.problems.contains { $0.key == "baseline" } == true
        }
    }

    /// Reports call a backend by its target's "name" when it has one, so shards of it run on other ports merge;
    /// without one, by its address.
    @Test func aTargetsNameIsWhatReportsCallIt() throws {
        let dir = Scratch.directory + "name-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let json =
            #"{"name":"notes","baseURL":"http://127.0.0.1:9","routes":{"entitlements":{"method":"GET","path":"/e/{userId}?at={at}"},"appTransaction":{"method":"POST","path":"/a"},"notification":{"method":"POST","path":"/n"},"apiSnapshot":{"method":"POST","path":"/s"},"legacyReceipt":{"method":"POST","path":"/l"}}}"#
        try Data(json.utf8).write(to: URL(fileURLWithPath: dir + "/target.json"))
        #expect(try HTTPValidator.Target.load(path: dir + "/target.json").displayName == "notes")
        try Data(json.replacingOccurrences(of: #""name":"notes","#, with: "").utf8)
            .write(to: URL(fileURLWithPath: dir + "/target.json"))
        #expect(try HTTPValidator.Target.load(path: dir + "/target.json").displayName == "http:127.0.0.1:9")
    }

    /// A target file in `dir` whose backend iapcheck starts as `python3 backend/SCRIPT` on `port`.
    static func writeTarget(in dir: String, port: Int, script: String) throws {
        try Data(
            #"""
            {"baseURL": "http://127.0.0.1:\#(port)", "clockHeader": "X-Now",
             "start": {"command": "NOTES_PORT={port} python3 backend/\#(script)", "readySeconds": 20},
             "routes": {"reset": {"method": "POST", "path": "/reset"},
                        "appTransaction": {"method": "POST", "path": "/a"},
                        "notification": {"method": "POST", "path": "/n"},
                        "apiSnapshot": {"method": "POST", "path": "/s"},
                        "legacyReceipt": {"method": "POST", "path": "/l"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: dir + "/target.json"))
    }

    /// `iapcheck check … | head`: the reader of iapcheck's output goes away. Where SIGPIPE has its default action,
    /// iapcheck dies by it at its next line; where the parent ignores it (and iapcheck inherits that), the line
    /// fails with EPIPE, which must not crash iapcheck. Either way the backend it started must go with it, not hold
    /// its port against the next run.
    @Test(arguments: [true, false])
    func aBackendDoesNotOutliveIapcheckWhoseOutputIsClosed(sigpipeIgnored: Bool) throws {
        let dir = try ManagedBackendTests.folderWithServer()
        let port = try LoopbackHTTPClient.freePort()
        try Self.writeTarget(in: dir, port: port, script: "server.py")
        // Python as the parent: it sets SIGPIPE for its child as asked, which Foundation's Process does not.
        let launcher = """
            import os, signal, subprocess, sys
            signal.signal(signal.SIGPIPE, signal.SIG_IGN if sys.argv[2] == "ignored" else signal.SIG_DFL)
            r, w = os.pipe()
            os.close(r)
            child = subprocess.Popen([sys.argv[1], "check", "--validator", "http:target.json", "--cases", "3",
                                      "--jobs", "1", "--no-corpus"], stdout=w, stderr=w, restore_signals=False)
            print(child.wait())
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", launcher, BuiltIAPCheck.path, sigpipeIgnored ? "ignored" : "default"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        let status = Int(
            String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines))
        // Ignored: the run goes on to its end (doctor finds this server unusable: exit 2), no trap on a write.
        #expect(status == (sigpipeIgnored ? 2 : -Int(SIGPIPE)))
        let deadline = Date().addingTimeInterval(5)
        while LoopbackHTTPClient.accepts(host: "127.0.0.1", port: port) && Date() < deadline { usleep(20_000) }
        #expect(!LoopbackHTTPClient.accepts(host: "127.0.0.1", port: port), "the backend still listens on \(port)")
    }

    /// A crash of iapcheck itself (here a SIGSEGV sent while it waits on a backend that never answers) stops the
    /// backends it started at once, then goes on to the runtime's own crash report.
    @Test func aBackendDoesNotOutliveACrashOfIapcheck() throws {
        let dir = try ManagedBackendTests.folderWithServer()
        let port = try LoopbackHTTPClient.freePort()
        try Data(
            """
            import os, socket, time
            s = socket.socket()
            s.bind(("127.0.0.1", int(os.environ["NOTES_PORT"])))
            s.listen(64)
            open("backend/pid.new", "w").write(str(os.getpid()))
            os.rename("backend/pid.new", "backend/pid")
            time.sleep(600)
            """.utf8
        ).write(to: URL(fileURLWithPath: dir + "/backend/silent.py"))
        try Self.writeTarget(in: dir, port: port, script: "silent.py")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: BuiltIAPCheck.path)
        p.arguments = ["doctor", "--validator", "http:target.json", "--timeout", "60"]
        // Without the runtime's backtracer, whose helper process would outlive the test's wait: the action after the
        // handler is then the default one, the end of the process.
        p.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { p.killAndWait() }
        // The backend's pid, not a connection: a server that never accepts runs out of backlog and then looks gone.
        func backendPid() -> Int32? {
            (try? String(contentsOfFile: dir + "/backend/pid", encoding: .utf8)).flatMap { Int32($0) }
        }
        var deadline = Date().addingTimeInterval(20)
        while backendPid() == nil && Date() < deadline { usleep(20_000) }
        let pid = try #require(backendPid(), "the backend never started")
        defer { kill(pid, SIGKILL) }
        usleep(500_000)  // doctor's first request is under way, waiting on its 60 s timeout
        kill(p.processIdentifier, SIGSEGV)
        p.waitUntilExit()
        deadline = Date().addingTimeInterval(5)
        while kill(pid, 0) == 0 && Date() < deadline { usleep(20_000) }
        #expect(kill(pid, 0) != 0, "the backend (pid \(pid)) outlived iapcheck")
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGSEGV)
    }
}
