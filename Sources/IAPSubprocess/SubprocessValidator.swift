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

/// A validator in any language, run as a subprocess speaking ``WireProtocol`` on stdin/stdout.
///
/// Every request has a deadline that holds whatever the validator does: a validator that hangs, drips a reply a
/// byte at a time, stops reading its stdin or leaves a grandchild holding the pipe is killed and reported
/// (`timed-out`); one that exits is reported at once (`crashed`, with its exit status and the tail of its stderr);
/// a reply line longer than ``maxReplyBytes`` or that is not the expected reply is reported (`bad-answer` /
/// `protocol-violation`), each with the last messages exchanged. Stderr is drained all the time into a bounded
/// tail, so a validator that logs never blocks on a full pipe. After any failure the process is stopped; the
/// next `reset` starts a fresh one, so one failure does not poison the next case.
public final class SubprocessValidator: RestartableValidator {
    public let command: String
    public let timeout: TimeInterval
    /// The longest reply line accepted (bytes); longer is `bad-answer`.
    public let maxReplyBytes: Int
    public private(set) var name: String
    private var process: Process?
    private var stdinFD: Int32 = -1
    private var stdoutFD: Int32 = -1
    private var stderrTail: StderrTail?
    private var pipes: [Pipe] = []
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already searched for a newline.
    private var scanned = 0
    private var nextId = 0
    private var transcript: [String] = []
    public private(set) var hello: WireProtocol.Reply?
    public var selfReportedName: String? { hello?.name }
    public func shutdown() { stop() }
    /// What the first `hello` declared (`answers`, `channels`); undeclared until the process said hello. A
    /// restarted process keeps the profile the run started with.
    public private(set) var profile: ValidatorProfile = .undeclared
    private var profileKnown = false
    /// Reads replies; answers under the declared profile (undeclared lists and fields are skipped).
    private var decoder = JSONDecoder()

    public func prepare() throws(ValidatorFailure) {
        if process == nil || processGone { try start() }
    }

    public init(command: String, timeout: TimeInterval = 5, maxReplyBytes: Int = 16 << 20) {
        self.command = command
        self.timeout = timeout
        self.maxReplyBytes = maxReplyBytes
        self.name = "exec:\(command)"
    }

    deinit { stop() }

    func note(_ s: String) {
        transcript.append(s.count > 400 ? String(s.prefix(400)) + "…" : s)
        if transcript.count > 12 { transcript.removeFirst(transcript.count - 12) }
    }

    /// A failure with the tail of stderr; the process is stopped so the next case starts from a fresh one.
    func fail(_ kind: ValidatorFailure.Kind, _ message: String) -> ValidatorFailure {
        var m = message
        if let tail = stderrTail?.text(last: 600), !tail.isEmpty {
            m += "; stderr: " + tail.split(separator: "\n").joined(separator: " ⏎ ")
        }
        stop()
        return ValidatorFailure(kind, m, transcript: transcript)
    }

    public func start() throws(ValidatorFailure) {
        stop()
        // A validator that closes its stdin must give iapcheck EPIPE (reported as a crash), not SIGPIPE (iapcheck dies).
        signal(SIGPIPE, SIG_IGN)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", command]
        let inPipe = Pipe(), outPipe = Pipe(), errPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        p.standardError = errPipe
        do {
            try ChildProcesses.run(p)
        } catch {
            throw ValidatorFailure(.unavailable, "cannot start \(command): \(error)")
        }
        process = p
        pipes = [inPipe, outPipe, errPipe]
        stdinFD = inPipe.fileHandleForWriting.fileDescriptor
        // Writes must never block past a deadline (a validator that stops reading its stdin).
        _ = fcntl(stdinFD, F_SETFL, fcntl(stdinFD, F_GETFL) | O_NONBLOCK)
        stdoutFD = outPipe.fileHandleForReading.fileDescriptor
        stderrTail = StderrTail(fd: errPipe.fileHandleForReading.fileDescriptor)
        buffer = []
        scanned = 0
        nextId = 0
        let h = try request(WireProtocol.Request(id: 0, type: "hello"))
        guard h.type == "hello", h.protocol == WireProtocol.version else {
            throw fail(
                .protocolViolation,
                "expected a hello for protocol \(WireProtocol.version), got type \(h.type) protocol \(h.protocol.map(String.init) ?? "none")"
            )
        }
        hello = h
        // The name a program gives itself goes into every report line: shown, never obeyed.
        hello?.name = h.name.map { Terminal.visible(String($0.prefix(200))) }
        if let n = hello?.name { name = "exec:\(n)" }
        if !profileKnown {
            do {
                profile = try ValidatorProfile.parse(answers: h.answers, channels: h.channels, prefix: "hello.")
            } catch {
                throw fail(.protocolViolation, error.message)
            }
            if let p = h.datePrecision {
                guard p >= 1 && p <= 86_400_000 else {
                    throw fail(
                        .protocolViolation,
                        "hello.datePrecision: \(p) is not a number of milliseconds from 1 to 86400000")
                }
                profile.datePrecision = p
            }
            profileKnown = true
            decoder.userInfo[ValidatorProfile.codingKey] = profile
        }
    }

    /// Kills the process and everything it started (a shell's children would otherwise keep running), and closes
    /// the pipes: a grandchild that still holds them cannot make iapcheck wait. The process leads its own process
    /// group, so descendants that outlived their parent are killed with the group.
    public func stop() {
        if let p = process {
            let pid = p.processIdentifier
            // Before it is reaped: a pid may be reused once it is.
            ChildProcesses.unregister(pid)
            // The group outlives its leader while any member lives; its id cannot be reused until then.
            kill(-pid, SIGKILL)
            if !ProcessTree.hasExited(pid) {
                for child in ProcessTree.descendants(of: pid) { kill(child, SIGKILL) }
                kill(pid, SIGKILL)
                // Bounded: Foundation's own wait also waits for the pipes, which a detached grandchild may hold.
                let limit = Date().addingTimeInterval(2)
                while !ProcessTree.hasExited(pid) && Date() < limit { usleep(2_000) }
            }
        }
        stderrTail?.stop()
        stderrTail = nil
        for pipe in pipes {
            try? pipe.fileHandleForWriting.close()
            try? pipe.fileHandleForReading.close()
        }
        pipes = []
        stdinFD = -1
        stdoutFD = -1
        process = nil
    }

    /// "status N" or "killed by signal N" for a process that has exited.
    func exitStatus() -> String? {
        guard let p = process else { return nil }
        let pid = p.processIdentifier
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // Field 52 of stat (the 50th after the name): the wait status of a zombie.
            if fields.first == "Z", fields.count > 49, let raw = Int(fields[49]) {
                return raw & 0x7F != 0 ? "killed by signal \(raw & 0x7F)" : "status \(raw >> 8)"
            }
        }
        if !p.isRunning {
            return p.terminationReason == .uncaughtSignal
                ? "killed by signal \(p.terminationStatus)" : "status \(p.terminationStatus)"
        }
        return nil
    }

    var processGone: Bool { process.map { ProcessTree.hasExited($0.processIdentifier) } ?? true }

    func request(_ r: WireProtocol.Request) throws(ValidatorFailure) -> WireProtocol.Reply {
        guard process != nil, !processGone, stdinFD >= 0 else {
            throw fail(.crashed, "the validator process is not running")
        }
        var r = r
        nextId += 1
        r.id = nextId
        guard var line = try? WireProtocol.encoder.encode(r) else {
            throw ValidatorFailure(.protocolViolation, "cannot encode request")
        }
        note("→ " + String(decoding: line, as: UTF8.self))
        line.append(0x0A)
        let deadline = Date().addingTimeInterval(timeout)
        try write(Array(line), deadline: deadline)
        let replyLine = try readLine(deadline: deadline)
        note("← " + String(decoding: replyLine.prefix(2000), as: UTF8.self))
        let reply: WireProtocol.Reply
        do {
            reply = try decoder.decode(WireProtocol.Reply.self, from: Data(replyLine))
        } catch {
            throw fail(
                .badAnswer,
                "the reply is not a protocol reply (\(ValidatorFailure.decodingProblem(error, in: Data(replyLine)))): \(String(decoding: replyLine.prefix(200), as: UTF8.self))"
            )
        }
        guard reply.id == r.id else {
            throw fail(.protocolViolation, "reply id \(reply.id) does not answer request \(r.id)")
        }
        if reply.type == "error" {
            throw fail(.protocolViolation, "validator error \(reply.code ?? "?"): \(reply.message ?? "")")
        }
        return reply
    }

    /// Writes all of `bytes` to the validator's stdin before `deadline`, or fails.
    func write(_ bytes: [UInt8], deadline: Date) throws(ValidatorFailure) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(stdinFD, $0.baseAddress! + offset, $0.count - offset) }
            if n > 0 {
                offset += n
                continue
            }
            if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                throw exited("stopped reading its stdin (\(String(cString: strerror(errno))))")
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { throw timedOut("it did not read the request within \(timeout) s") }
            if processGone { throw exited("exited before reading the request") }
            var pfd = pollfd(fd: stdinFD, events: Int16(POLLOUT), revents: 0)
            _ = poll(&pfd, 1, Int32(min(remaining, 0.1) * 1000) + 1)
        }
    }

    func timedOut(_ why: String) -> ValidatorFailure {
        let pid = process?.processIdentifier ?? 0
        return fail(.timedOut, "no reply within \(timeout) s (\(why)); killed process \(pid)")
    }

    /// The process has exited (or is about to): waits briefly for its status and reports it.
    func exited(_ what: String) -> ValidatorFailure {
        let limit = Date().addingTimeInterval(1)
        var status: String?
        while Date() < limit {
            // A zombie shows its status in /proc; once reaped, Foundation has it (a moment later).
            if processGone, let s = exitStatus() { status = s; break }
            usleep(5_000)
        }
        if let status { return fail(.crashed, "the validator \(what); it exited (\(status))") }
        return fail(.crashed, "the validator \(what)")
    }

    func readLine(deadline: Date) throws(ValidatorFailure) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let nl = buffer[scanned...].firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                scanned = 0
                return line
            }
            scanned = buffer.count
            if buffer.count > maxReplyBytes {
                throw fail(
                    .badAnswer,
                    "a reply line longer than \(maxReplyBytes >> 20) MiB (\(buffer.count) bytes without a newline)")
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                throw timedOut(
                    buffer.isEmpty ? "nothing received" : "\(buffer.count) bytes of an unfinished line received")
            }
            var pfd = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining, 0.1) * 1000) + 1)
            if ready <= 0 {
                // Nothing to read: a validator that exited (even if a grandchild still holds the pipe) is done.
                if processGone { throw exited("exited without replying") }
                continue
            }
            let got = read(stdoutFD, &chunk, chunk.count)
            if got < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if got <= 0 { throw exited("closed its stdout without replying") }
            buffer += chunk[0..<got]
        }
    }

    /// SIGKILL, then a fresh process that gets no `reset`: it must recover from whatever it persisted.
    public func killAndRestart() throws(ValidatorFailure) {
        note("✕ killed (fault profile), restarting without reset")
        stop()
        try start()
    }

    public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        // Every case starts here: its failure report shows its own exchanges, not a shrink's earlier attempts.
        transcript = []
        if process == nil || processGone { try start() }
        let r = try request(WireProtocol.Request(id: 0, type: "reset", config: config))
        guard r.type == "ok" else { throw fail(.protocolViolation, "reset answered with \(r.type)") }
    }

    public func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let r = try request(WireProtocol.Request(id: 0, type: "deliver", now: now, delivery: delivery))
        guard r.type == "verdict", let accepted = r.accepted else {
            throw fail(.protocolViolation, "deliver answered with \(r.type)")
        }
        return accepted ? .accepted : .rejected(reason: Terminal.visible(r.reason ?? ""))
    }

    public func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        let r = try request(WireProtocol.Request(id: 0, type: "query", query: query))
        guard r.type == "answer", let a = r.answer else {
            throw fail(.protocolViolation, "query answered with \(r.type)")
        }
        let answer = a.sorted
        if let problem = answer.problems.first { throw fail(.badAnswer, "malformed answer: \(problem)") }
        return answer
    }
}

/// Drains a validator's stderr on a thread of its own into a bounded tail (the last 64 KiB), so a validator that
/// logs can never fill the pipe and block; the tail goes into failure reports.
final class StderrTail: Sendable {
    private let state = Locked(State())
    private let fd: Int32
    private let done = DispatchSemaphore(value: 0)
    static let keep = 64 << 10

    struct State {
        var bytes: [UInt8] = []
        var stopped = false
    }

    init(fd: Int32) {
        self.fd = fd
        let thread = Thread { [self] in self.drain() }
        thread.name = "iapcheck-stderr"
        thread.start()
    }

    private func drain() {
        var chunk = [UInt8](repeating: 0, count: 65536)
        defer { done.signal() }
        while true {
            if state.withLock({ $0.stopped }) { return }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { return }
            state.withLock {
                $0.bytes += chunk[0..<n]
                if $0.bytes.count > 2 * Self.keep { $0.bytes.removeFirst($0.bytes.count - Self.keep) }
            }
        }
    }

    /// The last `n` bytes written, as text.
    func text(last n: Int) -> String {
        let tail = state.withLock { $0.bytes.suffix(n) }
        return String(decoding: tail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops draining (before the pipe is closed) and waits for the thread to leave the descriptor.
    func stop() {
        state.withLock { $0.stopped = true }
        done.wait()
    }
}

extension SubprocessValidator: DoctorHinting {
    /// Fixes in the wire protocol's terms (docs/wire-protocol.md).
    public var doctorHints: DoctorHints {
        var h = DoctorHints()
        h.unreachableFix = "check the command: it must start and answer hello (docs/wire-protocol.md)"
        h.timeout = timeout
        h.clockFix =
            "the program must answer for the query's \"at\" and take \"now\" from each deliver request, never from its own clock (docs/wire-protocol.md)"
        return h
    }
}
