import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// iapcheck's loopback server (the mock App Store's, the bench endpoint's) under attack: idle connections by the
/// thousand, a client trickling one byte a second, a 100 MB body, a flood of connections abandoned mid-request. It
/// runs alone in a process of its own (`iapcheck-loopback-probe`), so that its threads and memory are measured, not
/// the test process's; .ci/run runs these tests again against a ThreadSanitizer build of the probe
/// (`IAPCHECK_LOOPBACK_PROBE`), and a report from it fails them.
@Suite struct LoopbackAbuseTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binary =
        ProcessInfo.processInfo.environment["IAPCHECK_LOOPBACK_PROBE"].flatMap { $0.isEmpty ? nil : $0 }
        ?? root.appendingPathComponent(".build/debug/iapcheck-loopback-probe").path
    static let ok = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    /// With 1,000 connections open and silent (four times the cap), other clients are still answered: each newcomer
    /// takes the place of the connection that has waited longest. The probe never holds more threads than the cap,
    /// and when the connections close its threads and memory return to where they started.
    @Test func aThousandIdleConnectionsLeaveRoomForOtherClients() throws {
        let probe = try Probe()
        let start = probe.snapshot()
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        var answers: [String] = []
        for i in 0..<1000 {
            idle.append(LoopbackHTTPServerTests.connected(probe.port))
            if i % 100 == 99 { answers.append(Self.first(LoopbackHTTPServerTests.exchange(probe.port, [Self.ok]))) }
        }
        #expect(answers == Array(repeating: "HTTP/1.1 200 OK", count: 10), "\(answers)")
        let held = probe.snapshot()
        #expect(held.threads <= start.threads + 256 + 64, "\(held.threads) threads, from \(start.threads)")
        for fd in idle { close(fd) }
        idle = []
        let end = probe.settle(to: start)
        #expect(end.threads <= start.threads, "\(end.threads) threads left, from \(start.threads)")
        #expect(probe.memoryReturned(from: start, to: end), "RSS \(start.rssKB) kB → \(end.rssKB) kB")
        try probe.finish()
    }

    /// A client sending its request one byte a second is closed at the request deadline, unanswered, while other
    /// clients are answered the whole time.
    @Test(.long) func aClientSendingOneByteASecondIsClosedAtItsDeadline() throws {
        let probe = try Probe(["--request-seconds", "3"])
        let start = probe.snapshot()
        let slow = LoopbackHTTPServerTests.connected(probe.port)
        defer { close(slow) }
        var answers: [String] = []
        for byte in Array("GET / HTTP/1.1\r\nHost: x\r\nX".utf8).prefix(7) {
            _ = Self.send(slow, Data([byte]))
            answers.append(Self.first(LoopbackHTTPServerTests.exchange(probe.port, [Self.ok])))
            sleep(1)
        }
        #expect(answers == Array(repeating: "HTTP/1.1 200 OK", count: 7), "\(answers)")
        // Closed by now (3 s after its first byte), with nothing sent back.
        var brief = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(slow, SOL_SOCKET, SO_RCVTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
        var reply = [UInt8](repeating: 0, count: 256)
        let n = reply.withUnsafeMutableBytes { recv(slow, $0.baseAddress, $0.count, 0) }
        let timedOut = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        #expect(n <= 0 && !timedOut, "the trickling connection is still open (recv \(n))")
        let end = probe.settle(to: start)
        #expect(end.threads <= start.threads, "\(end.threads) threads left, from \(start.threads)")
        try probe.finish()
    }

    /// A 100 MB body, declared or chunked, is answered 413 without being held: the probe's peak memory stays far
    /// below the body's size, and it goes on answering.
    @Test(.long, arguments: ["Content-Length: \(100 << 20)", "Transfer-Encoding: chunked"])
    func aHundredMegabyteBodyIsRefusedWithoutBeingHeld(framing: String) throws {
        let probe = try Probe()
        let start = probe.snapshot()
        let fd = LoopbackHTTPServerTests.connected(probe.port)
        defer { close(fd) }
        var wait = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        let chunked = framing.hasPrefix("Transfer")
        let sender = Thread {
            _ = Self.send(fd, Data("POST /upload HTTP/1.1\r\nHost: x\r\n\(framing)\r\n\r\n".utf8))
            let piece = Data(repeating: 0x78, count: 1 << 20)
            for _ in 0..<100 {
                let framed = chunked ? Data("100000\r\n".utf8) + piece + Data("\r\n".utf8) : piece
                guard Self.send(fd, framed) else { return }
            }
        }
        sender.start()
        var reply = [UInt8](repeating: 0, count: 512)
        let n = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        let head = n > 0 ? String(decoding: reply[..<n], as: UTF8.self) : "(nothing: \(n))"
        #expect(head.hasPrefix("HTTP/1.1 413 "), "\(head.prefix(80))")
        #expect(Self.first(LoopbackHTTPServerTests.exchange(probe.port, [Self.ok])) == "HTTP/1.1 200 OK")
        let peak = probe.status("VmHWM")
        #expect(peak <= start.rssKB + probe.slackKB, "peak RSS \(peak) kB, from \(start.rssKB) kB")
        let end = probe.settle(to: start)
        #expect(end.threads <= start.threads, "\(end.threads) threads left, from \(start.threads)")
        try probe.finish()
    }

    /// 2,000 connections abandoned mid-request from four threads at once (half-closed after part of a body, reset,
    /// or closed before a byte) while another client asks every few milliseconds: that client is answered every
    /// time, and no thread is left behind per dead connection.
    @Test func aFloodOfHalfOpenConnectionsLeavesNothingBehind() throws {
        let probe = try Probe()
        let start = probe.snapshot()
        let port = probe.port
        let done = DispatchGroup()
        for worker in 0..<4 {
            DispatchQueue.global().async(group: done) {
                for i in 0..<500 {
                    let fd = LoopbackHTTPServerTests.connected(port)
                    switch (worker + i) % 3 {
                    case 0:
                        _ = Self.send(fd, Data("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npart".utf8))
                        shutdown(fd, Int32(SHUT_WR))
                    case 1:
                        _ = Self.send(fd, Data("GET / HTTP/1.1\r\nHost".utf8))
                        var reset = linger(l_onoff: 1, l_linger: 0)
                        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                    default: break
                    }
                    close(fd)
                }
            }
        }
        var answers: [String] = []
        while done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            answers.append(Self.first(LoopbackHTTPServerTests.exchange(port, [Self.ok])))
        }
        #expect(!answers.isEmpty && answers.allSatisfy { $0 == "HTTP/1.1 200 OK" }, "\(Set(answers))")
        let end = probe.settle(to: start)
        #expect(end.threads <= start.threads, "\(end.threads) threads left, from \(start.threads)")
        #expect(probe.memoryReturned(from: start, to: end), "RSS \(start.rssKB) kB → \(end.rssKB) kB")
        try probe.finish()
    }

    static func first(_ reply: String) -> String {
        reply.components(separatedBy: "\r\n").first ?? ""
    }

    static func send(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                sent += n
            }
            return true
        }
    }
}

/// The probe process: started with its options, measured through /proc, finished by closing its standard input.
final class Probe {
    let process = Process()
    let input = Pipe()
    let errors: URL
    let port: Int
    /// Under ThreadSanitizer (the probe says so): its runtime keeps what it learned of every thread that ran, so
    /// memory does not return to the start; the threads must, and the peak stays below a body held whole.
    let sanitized: Bool
    /// What memory may stay above the start once an attack is over (thread stacks glibc caches, malloc's arenas) or
    /// be reached at its peak; a 100 MB body held whole would be far above it.
    var slackKB: Int { sanitized ? 80 << 10 : 40 << 10 }

    /// The memory now is within `slackKB` of the start (not asked under ThreadSanitizer).
    func memoryReturned(from start: Snapshot, to end: Snapshot) -> Bool {
        sanitized || end.rssKB <= start.rssKB + slackKB
    }

    struct Snapshot {
        var threads: Int
        var rssKB: Int
    }

    init(_ arguments: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: LoopbackAbuseTests.binary) else {
            throw ProbeError(description: "no probe at \(LoopbackAbuseTests.binary): run `swift build` first")
        }
        errors = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: LoopbackAbuseTests.binary)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        var line = Data()
        while !line.contains(10) {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            line.append(more)
        }
        let said = String(decoding: line, as: UTF8.self).split(separator: " ").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let port = said.first.flatMap({ Int($0) }) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ProbeError(description: "the probe printed no port: \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
        sanitized = said.dropFirst().first == "tsan"
        // Settled: its accept thread started and any runtime threads in place.
        usleep(200_000)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: errors)
    }

    /// A field of /proc/PID/status, as a number (kB for the memory fields).
    func status(_ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
    }

    func snapshot() -> Snapshot { Snapshot(threads: status("Threads"), rssKB: status("VmRSS")) }

    /// Waits up to 10 s for the threads to return to `start`'s count; the snapshot then.
    func settle(to start: Snapshot) -> Snapshot {
        var now = snapshot()
        for _ in 0..<100 where now.threads > start.threads {
            usleep(100_000)
            now = snapshot()
        }
        return now
    }

    /// Closes its input: it must stop and exit 0 within 10 s, with nothing on its standard error (where
    /// ThreadSanitizer reports).
    func finish() throws {
        try input.fileHandleForWriting.close()
        for _ in 0..<100 where process.isRunning { usleep(100_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ProbeError(description: "the probe did not stop within 10 s of its input closing")
        }
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0 && stderr.isEmpty, "exit \(process.terminationStatus): \(stderr)")
    }
}

struct ProbeError: Error, CustomStringConvertible {
    var description: String
}
