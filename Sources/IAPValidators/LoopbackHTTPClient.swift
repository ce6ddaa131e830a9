import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small blocking HTTP/1.1 client for loopback: one kept-alive connection, reconnected once when the server has
/// closed it, `Content-Length` bodies only, a receive timeout on every read. Used by the HTTP transport, the mock
/// App Store's webhook sender and the example backend's App Store Server API client.
public final class LoopbackHTTPClient {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: Sendable { case unavailable, timedOut, closed, malformed }
        public var kind: Kind
        public var message: String
        public var description: String { message }
    }

    public let host: String
    public let port: Int
    public let timeout: TimeInterval
    private var fd: Int32 = -1
    /// The last requests and answers, abbreviated, for failure reports.
    public private(set) var transcript: [String] = []

    public init(host: String, port: Int, timeout: TimeInterval) {
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.timeout = timeout
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    public func note(_ s: String) {
        transcript.append(s.count > 300 ? String(s.prefix(300)) + "…" : s)
        if transcript.count > 12 { transcript.removeFirst(transcript.count - 12) }
    }

    func connect() throws(Failure) {
        close()
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(kind: .unavailable, message: "cannot create a socket") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: .init((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if rc != 0 {
            close()
            throw Failure(kind: .unavailable, message: "cannot connect to http://\(host):\(port)")
        }
    }

    /// Receive buffer, kept across requests (no allocation per response).
    private var inbox = [UInt8](repeating: 0, count: 65536)
    private var request = [UInt8]()

    /// One request and its answer. `headers` are added as given; the body is sent with `contentType`.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: Data? = nil,
                        contentType: String = "application/json") throws(Failure) -> (status: Int, body: Data) {
        request.removeAll(keepingCapacity: true)
        func put(_ s: String) { request.append(contentsOf: s.utf8) }
        put(method); put(" "); put(path); put(" HTTP/1.1\r\nHost: "); put(host); put(":"); put(String(port))
        put("\r\nConnection: keep-alive\r\n")
        for (k, v) in headers { put(k); put(": "); put(v); put("\r\n") }
        if let body { put("Content-Type: "); put(contentType); put("\r\nContent-Length: "); put(String(body.count)); put("\r\n") }
        put("\r\n")
        if let body { request.append(contentsOf: body) }
        note("→ \(method) \(path)")
        for attempt in 0..<2 {
            if fd < 0 { try connect() }
            let sent = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent == request.count, let reply = try readResponse() {
                note("← \(reply.0) \(String(decoding: reply.1.prefix(200), as: UTF8.self))")
                return reply
            }
            close()
            if attempt == 1 { break }
        }
        throw Failure(kind: .closed, message: "the server closed the connection without a response")
    }

    /// Reads one response; nil if the connection was closed before any byte arrived. Parses the head as bytes.
    func readResponse() throws(Failure) -> (Int, Data)? {
        var filled = 0
        func fill() throws(Failure) -> Bool {
            if filled == inbox.count { inbox.append(contentsOf: [UInt8](repeating: 0, count: inbox.count)) }
            let n = inbox.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, $0.count - filled, 0) }
            if n > 0 {
                filled += n
                return true
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                close()
                throw Failure(kind: .timedOut, message: "no HTTP response within \(timeout) s")
            }
            return false
        }
        var headerEnd = -1
        var scanned = 0
        while headerEnd < 0 {
            if !(try fill()) {
                if filled == 0 { return nil }
                close()
                throw Failure(kind: .closed, message: "the connection closed in the middle of a response")
            }
            var i = max(scanned - 3, 0)
            while i + 3 < filled {
                if inbox[i] == 13 && inbox[i + 1] == 10 && inbox[i + 2] == 13 && inbox[i + 3] == 10 { headerEnd = i; break }
                i += 1
            }
            scanned = filled
        }
        // "HTTP/1.x NNN"
        guard headerEnd >= 12, inbox[0] == 0x48, inbox[1] == 0x54, inbox[2] == 0x54, inbox[3] == 0x50, inbox[4] == 0x2F,
            let status = Self.digits(inbox, 9, 12)
        else {
            close()
            throw Failure(kind: .malformed, message: "not an HTTP response: \(String(decoding: inbox[0..<min(filled, 100)], as: UTF8.self))")
        }
        var length = 0
        var closeAfter = false
        var lineStart = 0
        while lineStart < headerEnd {
            var lineEnd = lineStart
            while lineEnd < headerEnd && inbox[lineEnd] != 13 { lineEnd += 1 }
            if Self.hasPrefix(inbox, lineStart, lineEnd, "content-length:") {
                var v = 0, j = lineStart + 15
                while j < lineEnd && inbox[j] == 32 { j += 1 }
                while j < lineEnd, inbox[j] >= 48, inbox[j] <= 57 { v = v * 10 + Int(inbox[j] - 48); j += 1 }
                length = v
            } else if Self.hasPrefix(inbox, lineStart, lineEnd, "transfer-encoding:") {
                close()
                throw Failure(kind: .malformed, message: "chunked responses are not supported; send Content-Length")
            } else if Self.hasPrefix(inbox, lineStart, lineEnd, "connection:") && String(decoding: inbox[lineStart..<lineEnd], as: UTF8.self).lowercased().contains("close") {
                closeAfter = true
            }
            lineStart = lineEnd + 2
        }
        let bodyStart = headerEnd + 4
        while filled < bodyStart + length {
            if !(try fill()) {
                close()
                throw Failure(kind: .closed, message: "the connection closed in the middle of a response")
            }
        }
        let reply = (status, Data(inbox[bodyStart..<(bodyStart + length)]))
        if closeAfter { close() }
        return reply
    }

    static func digits(_ b: [UInt8], _ from: Int, _ to: Int) -> Int? {
        var v = 0
        for i in from..<to {
            guard b[i] >= 48 && b[i] <= 57 else { return nil }
            v = v * 10 + Int(b[i] - 48)
        }
        return v
    }

    /// Case-insensitive ASCII prefix test of the line `b[from..<to]`.
    static func hasPrefix(_ b: [UInt8], _ from: Int, _ to: Int, _ prefix: StaticString) -> Bool {
        let n = prefix.utf8CodeUnitCount
        guard to - from >= n else { return false }
        let p = prefix.utf8Start
        for i in 0..<n where (b[from + i] | 0x20) != p[i] { return false }
        return true
    }
}
