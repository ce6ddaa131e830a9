import Foundation
import IAPHTTP
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// iapcheck's own HTTP server (the mock App Store's, the bench endpoint's) against what real clients send: chunked
/// bodies, `Expect: 100-continue`, pipelined keep-alive requests, HTTP/1.0, and what it must refuse.
@Suite struct LoopbackHTTPServerTests {
    /// Echoes what it read: method, path, the query's `q`, a header and the body's length and text.
    static func echo() throws -> LoopbackHTTPServer {
        let server = try LoopbackHTTPServer(port: 0, maxBody: 4 << 20) { r in
            let text =
                "\(r.method) \(r.path) q=\(r.query["q"] ?? "-") x=\(r.headers["x-thing"] ?? "-") \(r.body.count):\(String(decoding: r.body.prefix(16), as: UTF8.self))"
            return .init(status: 200, text: text)
        }
        server.start()
        return server
    }

    /// Sends raw bytes and reads until the peer closes or `timeout` passes.
    static func exchange(_ port: Int, _ parts: [String], pause: useconds_t = 0, timeout: Int = 2) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        for p in parts {
            _ = p.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) }
            if pause > 0 { usleep(pause) }
        }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += chunk[..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func pipelinedKeepAliveRequestsAreAnsweredInOrder() throws {
        let s = try Self.echo()
        defer { s.stop() }
        let reply = Self.exchange(
            s.port,
            [
                "GET /a?q=one%20two+three HTTP/1.1\r\nHost: x\r\nX-Thing: 1\r\n\r\n"
                    + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                    + "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            ])
        let bodies = reply.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.prefix(while: { $0 != "H" }) }
        #expect(reply.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "\(reply)")
        #expect(reply.contains("GET /a q=one two three x=1 0:"))
        #expect(reply.contains("POST /b q=- x=- 5:hello"))
        #expect(reply.contains("GET /c q=- x=- 0:"))
        #expect(reply.hasSuffix("GET /c q=- x=- 0:"), "the connection closes after Connection: close (\(bodies))")
    }

    @Test func aChunkedBodyArrivingInPiecesIsReadWhole() throws {
        let s = try Self.echo()
        defer { s.stop() }
        let reply = Self.exchange(
            s.port,
            [
                "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                "5;ext=1\r\nhello\r\n", "6\r\n world\r\n", "0\r\nTrailer: t\r\n\r\n",
            ], pause: 20_000)
        #expect(reply.contains("POST /p q=- x=- 11:hello world"), "\(reply)")
    }

    @Test func expectContinueGetsAnInterimAnswerFirst() throws {
        let s = try Self.echo()
        defer { s.stop() }
        let reply = Self.exchange(
            s.port,
            [
                "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
                "abc",
            ],
            pause: 50_000)
        #expect(reply.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"), "\(reply)")
        #expect(reply.contains("3:abc"))
    }

    /// Bare LF line ends, empty lines before a request and an absolute-form target are read as clients mean them.
    @Test func lenientWhereClientsDifferHarmlessly() throws {
        let s = try Self.echo()
        defer { s.stop() }
        #expect(Self.exchange(s.port, ["GET /lf HTTP/1.1\nHost: x\nConnection: close\n\n"]).contains("GET /lf q=-"))
        #expect(
            Self.exchange(s.port, ["\r\n\r\nGET /e?q=a&q=b HTTP/1.1\r\nConnection: close\r\n\r\n"]).contains(
                "GET /e q=a"))
        #expect(
            Self.exchange(s.port, ["GET http://127.0.0.1:9/abs?q=1 HTTP/1.1\r\nConnection: close\r\n\r\n"]).contains(
                "GET /abs q=1"))
        // HTTP/1.0 has no 100-continue: the body is read without one.
        let old = Self.exchange(s.port, ["POST /o HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"])
        #expect(!old.contains("100 Continue") && old.contains("2:hi"))
    }

    /// Connections beyond the cap, when every open one is within a request, are answered 503 (with Retry-After)
    /// and closed, not given a thread each; a slot freed by a closed connection serves again. (When some are idle,
    /// the one idle longest makes room instead: LoopbackAbuseTests.)
    @Test func aConnectionOverTheCapIsTurnedAway() throws {
        let s = try LoopbackHTTPServer(port: 0, maxConnections: 2) { _ in .init(status: 200, text: "ok") }
        s.start()
        defer { s.stop() }
        let held = (0..<2).map { _ in Self.connected(s.port) }
        for fd in held { _ = send(fd, "GET / HTTP/1.1\r\n", 16, Int32(MSG_NOSIGNAL)) }
        usleep(200_000)
        let turned = Self.exchange(s.port, ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
        #expect(turned.hasPrefix("HTTP/1.1 503 ") && turned.contains("Retry-After: 1"), "\(turned.prefix(80))")
        for fd in held { close(fd) }
        var served = ""
        for _ in 0..<40 where !served.hasPrefix("HTTP/1.1 200") {
            usleep(50_000)
            served = Self.exchange(s.port, ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
        }
        #expect(served.hasPrefix("HTTP/1.1 200"), "\(served.prefix(80))")
    }

    /// At the cap, an idle connection (one that never sent a byte, or waits between requests) is closed to make
    /// room for a newcomer, the one idle longest first; stopping the server closes the idle ones at once.
    @Test func anIdleConnectionMakesRoomAtTheCap() throws {
        let s = try LoopbackHTTPServer(port: 0, maxConnections: 2) { _ in .init(status: 200, text: "ok") }
        s.start()
        let oldest = Self.connected(s.port)
        usleep(100_000)
        let newer = Self.connected(s.port)
        defer { for fd in [oldest, newer] { close(fd) } }
        usleep(200_000)
        let served = Self.exchange(s.port, ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
        #expect(served.hasPrefix("HTTP/1.1 200"), "\(served.prefix(80))")
        #expect(Self.closedByPeer(oldest) && !Self.closedByPeer(newer))
        s.stop()
        usleep(200_000)
        #expect(Self.closedByPeer(newer))
        #expect(s.openConnections == 0)
    }

    /// The server closed this connection (a read returns its end at once rather than waiting).
    static func closedByPeer(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// A request trickled a header at a time past its deadline is closed unanswered: the peer cannot keep the
    /// connection's thread by sending slowly. The same request sent at once is answered.
    @Test func aRequestTrickledPastItsDeadlineIsClosed() throws {
        let s = try LoopbackHTTPServer(port: 0, requestSeconds: 0.5) { _ in .init(status: 200, text: "ok") }
        s.start()
        defer { s.stop() }
        let parts = ["GET / HTTP/1.1\r\nHost: x\r\n"] + (0..<6).map { "X-\($0): 1\r\n" } + ["Connection: close\r\n\r\n"]
        let trickled = Self.exchange(s.port, parts, pause: 200_000, timeout: 3)
        #expect(!trickled.contains("200"), "\(trickled.prefix(80))")
        #expect(Self.exchange(s.port, [parts.joined()]).hasPrefix("HTTP/1.1 200"))
    }

    /// A connected socket to the server, sending nothing.
    static func connected(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return fd
    }

    /// A refused upload still reads its refusal: the server drains what the client sends before closing.
    @Test func aRefusedUploadGetsItsStatusNotAReset() throws {
        let s = try LoopbackHTTPServer(port: 0, maxBody: 1 << 10) { _ in .init(status: 200, text: "ok") }
        s.start()
        defer { s.stop() }
        let body = String(repeating: "x", count: 3 << 20)
        let reply = Self.exchange(s.port, ["POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n300000\r\n", body])
        #expect(reply.hasPrefix("HTTP/1.1 413 "), "\(reply.prefix(80))")
    }

    @Test func http10ClosesAfterTheAnswer() throws {
        let s = try Self.echo()
        defer { s.stop() }
        let reply = Self.exchange(s.port, ["GET /old HTTP/1.0\r\n\r\n"], timeout: 5)
        #expect(reply.contains("Connection: close") && reply.hasSuffix("GET /old q=- x=- 0:"), "\(reply)")
    }

    @Test func whatCannotBeServedIsRefusedWithAStatus() throws {
        let s = try Self.echo()
        defer { s.stop() }
        #expect(Self.exchange(s.port, ["NONSENSE\r\n\r\n"]).hasPrefix("HTTP/1.1 400 "))
        #expect(
            Self.exchange(s.port, ["POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n"]).hasPrefix("HTTP/1.1 413 "))
        // Inputs that crashed or split one request into two (found by review): each a plain refusal now.
        for bad in [
            "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: ,\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length : 22\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhelloxx",
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello", "GET / HTTP/1.1x\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n\tfolded: y\r\n\r\n",
        ] {
            let reply = Self.exchange(s.port, [bad])
            #expect(
                reply.hasPrefix("HTTP/1.1 400 ") && !reply.contains("smuggled"), "\(bad.debugDescription): \(reply)")
        }
        #expect(
            Self.exchange(
                s.port, ["POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n7fffffffffffffff\r\n"]
            )
            .hasPrefix("HTTP/1.1 4"))
        let hugeChunk = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nfffffffffffffff\r\n"
        #expect(Self.exchange(s.port, [hugeChunk]).hasPrefix("HTTP/1.1 413 "))
        #expect(
            Self.exchange(s.port, ["POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"]).hasPrefix("HTTP/1.1 501 "))
        #expect(Self.exchange(s.port, ["POST / HTTP/1.1\r\nContent-Length: -4\r\n\r\n"]).hasPrefix("HTTP/1.1 400 "))
        #expect(
            Self.exchange(s.port, ["POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]).hasPrefix(
                "HTTP/1.1 400 "))
        let huge =
            "GET / HTTP/1.1\r\n"
            + String(repeating: "X-Pad: " + String(repeating: "a", count: 1000) + "\r\n", count: 80)
        #expect(Self.exchange(s.port, [huge]).hasPrefix("HTTP/1.1 431 "))
        // A client that goes away mid-request costs nothing: the next one is served.
        _ = Self.exchange(s.port, ["POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"], timeout: 1)
        #expect(Self.exchange(s.port, ["GET /next HTTP/1.1\r\nConnection: close\r\n\r\n"]).contains("GET /next"))
    }

    /// A real client: curl sends `Expect: 100-continue` for a body over 1 MiB and reuses one connection for two URLs.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "no curl"))
    func curlIsServed() throws {
        let s = try Self.echo()
        defer { s.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID().uuidString)")
        try Data(repeating: 0x61, count: 1_500_000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = [
            "-s", "-v", "--data-binary", "@\(file.path)", "http://127.0.0.1:\(s.port)/up", "--next", "-s",
            "http://127.0.0.1:\(s.port)/again?q=2",
        ]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let trace = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(text.contains("POST /up q=- x=- 1500000:aaaa"), "\(text.prefix(200))")
        #expect(trace.contains("Expect: 100-continue") && trace.contains("100 Continue"))
        #expect(trace.contains("Re-using existing connection") || trace.contains("Reusing existing"))
        #expect(text.contains("GET /again q=2"))
    }
}
