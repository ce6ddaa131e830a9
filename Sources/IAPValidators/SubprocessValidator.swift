import Foundation
import IAPModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A validator in any language, run as a subprocess speaking ``WireProtocol`` on stdin/stdout.
///
/// Every request has a deadline: a validator that hangs is killed and reported (`timed-out`), one that exits is
/// reported (`crashed`, with its exit status and last stderr), one that prints something other than the expected
/// reply is reported (`bad-answer` / `protocol-violation`), each with the last messages exchanged. `reset` restarts
/// a process that died, so one failure does not poison the next case.
public final class SubprocessValidator: RestartableValidator {
    public let command: String
    public let timeout: TimeInterval
    public private(set) var name: String
    private var process: Process?
    private var stdin: FileHandle?
    private var stdoutFD: Int32 = -1
    private var stderrPipe: Pipe?
    private var buffer: [UInt8] = []
    private var nextId = 0
    private var transcript: [String] = []
    public private(set) var hello: WireProtocol.Reply?

    public init(command: String, timeout: TimeInterval = 5) {
        self.command = command
        self.timeout = timeout
        self.name = "exec:\(command)"
    }

    deinit { stop() }

    func note(_ s: String) {
        transcript.append(s.count > 400 ? String(s.prefix(400)) + "…" : s)
        if transcript.count > 12 { transcript.removeFirst(transcript.count - 12) }
    }

    func fail(_ kind: ValidatorFailure.Kind, _ message: String) -> ValidatorFailure {
        var m = message
        // Whatever the process wrote to stderr, without blocking (a child may still hold the pipe open).
        if let fd = stderrPipe?.fileHandleForReading.fileDescriptor {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 0) > 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = read(fd, &chunk, chunk.count)
                let tail = n > 0 ? String(decoding: chunk[0..<n].suffix(600), as: UTF8.self) : ""
                if !tail.isEmpty { m += "; stderr: " + tail.trimmingCharacters(in: .whitespacesAndNewlines) }
            }
        }
        return ValidatorFailure(kind, m, transcript: transcript)
    }

    public func start() throws(ValidatorFailure) {
        stop()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        let inPipe = Pipe(), outPipe = Pipe(), errPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        p.standardError = errPipe
        do {
            try p.run()
        } catch {
            throw ValidatorFailure(.unavailable, "cannot start \(command): \(error)")
        }
        process = p
        stdin = inPipe.fileHandleForWriting
        stdoutFD = outPipe.fileHandleForReading.fileDescriptor
        stderrPipe = errPipe
        buffer = []
        nextId = 0
        let h = try request(WireProtocol.Request(id: 0, type: "hello"))
        guard h.type == "hello", h.protocol == WireProtocol.version else {
            throw fail(.protocolViolation, "expected a hello for protocol \(WireProtocol.version), got type \(h.type) protocol \(h.protocol.map(String.init) ?? "none")")
        }
        hello = h
        if let n = h.name { name = "exec:\(n)" }
    }

    /// Kills the process and everything it started (a shell's children would otherwise keep running).
    public func stop() {
        if let p = process, p.isRunning {
            try? stdin?.close()
            for child in Self.descendants(of: p.processIdentifier) { kill(child, SIGKILL) }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        process = nil
    }

    /// Descendant pids from /proc (Linux); empty elsewhere.
    static func descendants(of pid: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var parent: [Int32: Int32] = [:]
        for e in entries {
            guard let p = Int32(e), let stat = try? String(contentsOfFile: "/proc/\(e)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let pp = Int32(fields[1]) { parent[p] = pp }
        }
        var out: [Int32] = []
        var frontier = [pid]
        while let next = frontier.popLast() {
            for (child, pp) in parent where pp == next {
                out.append(child)
                frontier.append(child)
            }
        }
        return out
    }

    func request(_ r: WireProtocol.Request) throws(ValidatorFailure) -> WireProtocol.Reply {
        guard let p = process, p.isRunning, let stdin else { throw fail(.crashed, "the validator process is not running") }
        var r = r
        nextId += 1
        r.id = nextId
        guard var line = try? WireProtocol.encoder.encode(r) else { throw ValidatorFailure(.protocolViolation, "cannot encode request") }
        note("→ " + String(decoding: line, as: UTF8.self))
        line.append(0x0A)
        do {
            try stdin.write(contentsOf: line)
        } catch {
            throw fail(.crashed, "writing to the validator failed (\(error)); it exited with status \(p.isRunning ? "?" : String(p.terminationStatus))")
        }
        let replyLine = try readLine(deadline: Date().addingTimeInterval(timeout))
        note("← " + String(decoding: replyLine, as: UTF8.self))
        guard let reply = try? JSONDecoder().decode(WireProtocol.Reply.self, from: Data(replyLine)) else {
            throw fail(.badAnswer, "the reply is not a protocol reply: \(String(decoding: replyLine.prefix(200), as: UTF8.self))")
        }
        guard reply.id == r.id else { throw fail(.protocolViolation, "reply id \(reply.id) does not answer request \(r.id)") }
        if reply.type == "error" { throw fail(.protocolViolation, "validator error \(reply.code ?? "?"): \(reply.message ?? "")") }
        return reply
    }

    func readLine(deadline: Date) throws(ValidatorFailure) -> [UInt8] {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                let pid = process?.processIdentifier ?? 0
                stop()
                throw fail(.timedOut, "no reply within \(timeout) s; killed process \(pid)")
            }
            var pfd = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            let n = poll(&pfd, 1, Int32(min(remaining, 1) * 1000))
            if n <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let got = read(stdoutFD, &chunk, chunk.count)
            if got <= 0 {
                process?.waitUntilExit()
                let status = process?.terminationStatus ?? -1
                throw fail(.crashed, "the validator exited (status \(status)) without replying")
            }
            buffer += chunk[0..<got]
            if buffer.count > 16 << 20 { throw fail(.badAnswer, "a reply line longer than 16 MiB") }
        }
    }

    /// SIGKILL, then a fresh process that gets no `reset`: it must recover from whatever it persisted.
    public func killAndRestart() throws(ValidatorFailure) {
        note("✕ killed (fault profile), restarting without reset")
        stop()
        try start()
    }

    public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        if process == nil || !(process?.isRunning ?? false) { try start() }
        let r = try request(WireProtocol.Request(id: 0, type: "reset", config: config))
        guard r.type == "ok" else { throw fail(.protocolViolation, "reset answered with \(r.type)") }
    }

    public func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let r = try request(WireProtocol.Request(id: 0, type: "deliver", now: now, delivery: delivery))
        guard r.type == "verdict", let accepted = r.accepted else { throw fail(.protocolViolation, "deliver answered with \(r.type)") }
        return accepted ? .accepted : .rejected(reason: r.reason ?? "")
    }

    public func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        let r = try request(WireProtocol.Request(id: 0, type: "query", query: query))
        guard r.type == "answer", let a = r.answer else { throw fail(.protocolViolation, "query answered with \(r.type)") }
        return EntitlementAnswer(products: a.products, groups: a.groups, consumables: a.consumables)
    }
}
