import Foundation
import IAPEncoding
import IAPModel
import IAPProcess
import IAPSupport
import IAPValidatorAPI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A backend process iapcheck starts itself (the target file's `start` command), so it can kill it and start it
/// again (fault profile `kill`). One per port in a process, shared by the load driver's workers; killed when
/// iapcheck exits. Its output goes to `log` in a directory of its own, which `{tmp}` in the command names — the
/// same directory after a restart, so a database there survives.
public final class ManagedBackend: Sendable {
    public let command: String
    public let host: String
    public let port: Int
    public let readySeconds: Double
    public let directory: String
    public var log: String { directory + "/backend.log" }
    /// The backend's wall clock, when it runs under libfaketime (`"clock": "faketime"`).
    public let clock: FakeClock?
    private let process = Locked<Process?>(nil)

    /// The backends started in this process, by port. Held while one starts, so two callers never start one twice.
    static let running = Locked<[Int: ManagedBackend]>([:])
    /// The same backends, for the exit handler: this lock is never held for long, so an exit while a backend is
    /// starting on another thread cannot hang on `running` (lock order: `running`, then this).
    static let toStopAtExit = Locked<[Int: ManagedBackend]>([:])

    /// The backend of this target, started on first use.
    public static func shared(
        command: String, host: String, port: Int, readySeconds: Double, fakeClock: Bool = false
    ) throws(ValidatorFailure) -> ManagedBackend {
        try running.withLock { started throws(ValidatorFailure) in
            if let b = started[port] { return b }
            let b = try ManagedBackend(
                command: command, host: host, port: port, readySeconds: readySeconds, fakeClock: fakeClock)
            do throws(ValidatorFailure) { try b.start() } catch {
                // A backend that ran and failed leaves its output to read; one that never ran (the port was taken)
                // leaves nothing worth a folder.
                let size = (try? FileManager.default.attributesOfItem(atPath: b.log))?[.size] as? NSNumber
                if (size?.intValue ?? 0) > 0 {
                    try? FileHandle.standardError.write(
                        contentsOf: Data("kept the backend's folder ({tmp}): \(b.directory)\n".utf8))
                } else {
                    removeOrKeep(b.directory)
                }
                throw error
            }
            if started.isEmpty { atexit { ManagedBackend.stopAll() } }
            started[port] = b
            toStopAtExit.withLock { $0[port] = b }
            return b
        }
    }

    /// Every backend running in this process, by port (a run with one instance per job has several).
    public static var allRunning: [ManagedBackend] {
        running.withLock { $0.values.sorted { $0.port < $1.port } }
    }

    /// Stops the backend and forgets it (the next `shared` for its port starts a new one).
    public func stopAndForget() {
        stop()
        Self.removeOrKeep(directory)
        Self.running.withLock { if $0[port] === self { $0[port] = nil } }
        Self.toStopAtExit.withLock { if $0[port] === self { $0[port] = nil } }
    }

    /// Whether the backends' directories (`{tmp}`: their output and state) are kept when iapcheck exits or stops a
    /// backend: no, unless a run failed and left something to read there, or `--keep-tmp` asked for them.
    public static let keepDirectories = Locked(false)

    static func stopAll() {
        for b in toStopAtExit.value.values {
            b.stop()
            removeOrKeep(b.directory)
        }
    }

    /// When set, the folder `{tmp}` names (with the port appended) and never removed: `iapcheck send` starts the
    /// backend at every send, and a database there keeps what the earlier sends gave it.
    public static let persistentDirectory = Locked<String?>(nil)

    static func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }

    /// Removes a backend's directory, or says where it stays (``keepDirectories``: a failed run, `--keep-tmp`).
    static func removeOrKeep(_ directory: String) {
        if let kept = persistentDirectory.value, directory.hasPrefix(absolute(kept)) { return }
        guard keepDirectories.value else {
            try? FileManager.default.removeItem(atPath: directory)
            return
        }
        guard FileManager.default.fileExists(atPath: directory) else { return }
        try? FileHandle.standardError.write(contentsOf: Data("kept the backend's folder ({tmp}): \(directory)\n".utf8))
    }

    init(command: String, host: String, port: Int, readySeconds: Double, fakeClock: Bool = false)
        throws(ValidatorFailure)
    {
        self.host = host
        self.port = port
        self.readySeconds = readySeconds
        // Absolute, always: a start command that begins with `cd backend &&` reads {tmp} from elsewhere (send's
        // default state folder, .iapcheck/, is relative to where iapcheck runs).
        let dir = Self.absolute(
            Self.persistentDirectory.value.map { "\($0)-\(port)" }
                ?? NSTemporaryDirectory() + "iapcheck-backend-\(getpid())-\(port)")
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        directory = dir
        self.command = command.replacingOccurrences(of: "{tmp}", with: dir).replacingOccurrences(
            of: "{port}", with: String(port))
        clock = fakeClock ? try FakeClock(directory: dir) : nil
    }

    /// Starts the command and waits until the port accepts connections.
    public func start() throws(ValidatorFailure) {
        if Self.accepts(host: host, port: port) {
            throw ValidatorFailure(
                .unavailable,
                "127.0.0.1:\(port) is already taken; stop what listens there, or drop \"start\" from the target to use it as is"
            )
        }
        let p = Process()
        // As written, so environment assignments (`PORT=8801 ./run.sh`), `cd dir && …` and pipes work; ``stop``
        // ends the shell's whole tree, so nothing it started is left running.
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        FileManager.default.createFile(atPath: log, contents: nil)
        let out = FileHandle(forWritingAtPath: log)
        out?.seekToEndOfFile()
        p.standardOutput = out
        p.standardError = out
        p.standardInput = FileHandle.nullDevice
        if let clock {
            p.environment = ProcessInfo.processInfo.environment.merging(clock.environment) { $1 }
        }
        do { try ChildProcesses.run(p) } catch {
            throw ValidatorFailure(.unavailable, "cannot start the backend (\(command)): \(error)")
        }
        process.withLock { $0 = p }
        let deadline = Date().addingTimeInterval(readySeconds)
        while Date() < deadline {
            if Self.accepts(host: host, port: port) { return }
            if !p.isRunning {
                stop()
                let output = tail(inLine: true)
                // The start command, its environment or its files are wrong: fix the target, as for a port nothing
                // listens on (exit 2, and the doctor's checklist).
                throw ValidatorFailure(
                    .unavailable,
                    "the backend exited (status \(p.terminationStatus)) before listening on \(port); the end of its output (\(log)): \(output)",
                    fix: Self.notFoundHint(status: p.terminationStatus, output: output)
                )
            }
            usleep(50_000)
        }
        stop()  // not left running, listening later on a port nothing will use
        throw ValidatorFailure(
            .unavailable,
            "the backend started but did not listen on \(host):\(port) within \(readySeconds) s; the end of its output (\(log)): \(tail(inLine: true))",
            fix:
                "make the start command listen on the port of \"baseURL\" (\(port)), or raise \"readySeconds\" if it needs longer to start"
        )
    }

    /// What to check when the shell could not find the program (exit 127, or "not found" in its output): the command
    /// runs as `/bin/sh -c COMMAND` in iapcheck's working directory, with iapcheck's PATH.
    static func notFoundHint(status: Int32, output: String) -> String? {
        guard status == 127 || output.contains("not found") || output.contains("No such file") else { return nil }
        let cwd = FileManager.default.currentDirectoryPath
        return
            "the start command runs as /bin/sh -c COMMAND in \(cwd) (where iapcheck was started) with iapcheck's PATH: "
            + "check that the program exists at that path (relative paths are from \(cwd)) and is executable, "
            + "or put `cd your/backend && ` in front of it"
    }

    /// The last lines of the backend's output, indented, for a message; `inLine`: on one line, ` | ` between them
    /// (a failure's message shows a line feed escaped, so lines would run together as `\u{A}`).
    public func tail(lines: Int = 8, inLine: Bool = false) -> String {
        // The end of the file only: the backend writes it, as much as it likes, in any encoding.
        var bytes = Data()
        if let h = FileHandle(forReadingAtPath: log) {
            let size = (try? h.seekToEnd()) ?? 0
            try? h.seek(toOffset: size > 65_536 ? size - 65_536 : 0)
            bytes = (try? h.readToEnd()) ?? Data()
            try? h.close()
        }
        let text = Terminal.visible(String(decoding: bytes, as: UTF8.self), keepingLines: true)
        let last = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines + 1)
        if inLine {
            return last.map { $0.prefix(300).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                .joined(separator: " | ")
        }
        return last.map { "    " + $0.prefix(300) }.joined(separator: "\n")
    }

    /// SIGKILL to the process and its children.
    public func stop() {
        guard let p = process.value else { return }
        // Before it is reaped: a pid may be reused once it is.
        ChildProcesses.unregister(p.processIdentifier)
        if p.isRunning {
            let pid = p.processIdentifier
            for child in ProcessTree.descendants(of: pid) { kill(child, SIGKILL) }
            // The shell's process group too, when it leads one: a child that left the tree (a daemonized server)
            // still belongs to it.
            if getpgid(pid) == pid { kill(-pid, SIGKILL) }
            kill(pid, SIGKILL)
            p.waitUntilExit()
        }
        process.withLock { $0 = nil }
    }

    public func killAndRestart() throws(ValidatorFailure) {
        stop()
        // The kernel may take a moment to release the port.
        let deadline = Date().addingTimeInterval(5)
        while Self.accepts(host: host, port: port) && Date() < deadline { usleep(20_000) }
        try start()
    }

    static func accepts(host: String, port: Int) -> Bool { LoopbackHTTPClient.accepts(host: host, port: port) }
}
