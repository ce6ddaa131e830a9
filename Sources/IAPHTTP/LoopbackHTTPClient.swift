import Foundation
import IAPEncoding

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small blocking HTTP/1.1 client for loopback: one kept-alive connection, reconnected once when the server has
/// closed it; `Content-Length`, chunked and read-until-close bodies. Whatever the server does, a request ends by
/// its deadline (`timeout` for the whole exchange, so a server that drips one byte a second is cut off too), and
/// a response larger than ``maxHeaderBytes`` + ``maxBodyBytes`` is refused as malformed. Used by the HTTP transport, the mock
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
    /// The longest response head accepted.
    public static let maxHeaderBytes = 64 << 10
    /// The largest response body accepted.
    public var maxBodyBytes = 16 << 20
    /// Each request on a connection of its own, closed after the answer (`Connection: close`): for a second client
    /// of a backend that may serve one connection at a time, which would otherwise wait on the first one's next
    /// request forever.
    public var oneRequestPerConnection = false
    private var fd: Int32 = -1
    /// The last requests and answers, kept raw and rendered only when a failure report asks (not on every request).
    private enum Entry {
        case text(String)
        case sent(method: String, path: String)
        case received(status: Int, body: Data)
    }
    private var entries: [Entry] = []

    /// The last requests and answers, abbreviated, for failure reports.
    public var transcript: [String] {
        entries.map { e in
            let s: String =
                switch e {
                case .text(let t): t
                case let .sent(method, path): "→ \(method) \(path)"
                case let .received(status, body): "← \(status) \(String(decoding: body, as: UTF8.self))"
                }
            return s.count > 300 ? String(s.prefix(300)) + "…" : s
        }
    }

    public init(host: String, port: Int, timeout: TimeInterval) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    /// A client over an already connected socket, which it owns (for tests and the fuzzer: a socket pair whose
    /// other end holds a canned response).
    public init(connectedSocket fd: Int32, timeout: TimeInterval) {
        self.host = "127.0.0.1"
        self.port = 0
        self.timeout = timeout
        self.fd = fd
    }

    /// Reads one response from the connection without sending anything; nil when it closed before any byte.
    public func readOneResponse() throws(Failure) -> (status: Int, body: Data)? {
        try readResponse(deadline: Date().addingTimeInterval(timeout)).map { (status: $0.0, body: $0.1) }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    public func note(_ s: String) { keep(.text(s)) }

    /// Starts the transcript afresh (a new case), so that a failure report shows only its own case's exchanges.
    public func forgetTranscript() { entries = [] }

    private func keep(_ e: Entry) {
        entries.append(e)
        if entries.count > 12 { entries.removeFirst(entries.count - 12) }
    }

    func connect() throws(Failure) {
        close()
        guard let fd = Self.openSocket(host: host, port: port, timeout: timeout) else {
            throw Failure(
                kind: .unavailable, message: "cannot connect to http://\(Terminal.urlHost(host)):\(port)")
        }
        self.fd = fd
    }

    /// Receive buffer, kept across requests (no allocation per response).
    private var inbox = [UInt8](repeating: 0, count: 65536)
    /// Bytes of `inbox` holding the response being read.
    private var filled = 0
    private var request = [UInt8]()

    /// One request and its answer. `headers` are added as given; the body is sent with `contentType`.
    public func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: Data? = nil,
        contentType: String = "application/json"
    ) throws(Failure) -> (status: Int, body: Data) {
        request.removeAll(keepingCapacity: true)
        func put(_ s: String) { request.append(contentsOf: s.utf8) }
        put(method); put(" "); put(path); put(" HTTP/1.1\r\nHost: "); put(Terminal.urlHost(host)); put(":");
        put(String(port))
        put(oneRequestPerConnection ? "\r\nConnection: close\r\n" : "\r\nConnection: keep-alive\r\n")
        for (k, v) in headers { put(k); put(": "); put(v); put("\r\n") }
        if let body {
            put("Content-Type: "); put(contentType); put("\r\nContent-Length: "); put(String(body.count)); put("\r\n")
        }
        put("\r\n")
        if let body { request.append(contentsOf: body) }
        keep(.sent(method: method, path: path))
        let deadline = Date().addingTimeInterval(timeout)
        for attempt in 0..<2 {
            if fd < 0 { try connect() }
            if try sendAll(deadline: deadline), Self.acknowledgeAtOnce(fd),
                let reply = try readResponse(deadline: deadline)
            {
                keep(.received(status: reply.0, body: reply.1.prefix(200)))
                if oneRequestPerConnection { close() }
                return reply
            }
            close()
            if attempt == 1 { break }
        }
        throw Failure(kind: .closed, message: "the server closed the connection without a response")
    }

    /// Sends the whole request before the deadline; false when the connection turned out to be closed.
    private func sendAll(deadline: Date) throws(Failure) -> Bool {
        var offset = 0
        while offset < request.count {
            if deadline.timeIntervalSinceNow <= 0 {
                close()
                throw Failure(kind: .timedOut, message: "the server did not read the request within \(timeout) s")
            }
            let n = request.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                offset += n  // a partial send after SO_SNDTIMEO: the deadline above bounds the whole request
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                if deadline.timeIntervalSinceNow <= 0 {
                    close()
                    throw Failure(kind: .timedOut, message: "the server did not read the request within \(timeout) s")
                }
                continue
            }
            return false
        }
        return true
    }

    /// Reads one response; nil if the connection was closed before any byte arrived. Parses the head as bytes.
    // long by design: the framing of one HTTP/1.1 response (head, then length, chunks or close) as one state machine.
    func readResponse(deadline: Date) throws(Failure) -> (Int, Data)? {
        filled = 0
        func fail(_ kind: Failure.Kind, _ message: String) -> Failure {
            close()
            return Failure(kind: kind, message: message)
        }
        func fill() throws(Failure) -> Bool {
            if filled == inbox.count { inbox.append(contentsOf: [UInt8](repeating: 0, count: inbox.count)) }
            while true {
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 {
                    throw fail(.timedOut, "no complete HTTP response within \(timeout) s (\(filled) bytes received)")
                }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, Int32(min(remaining, 3600) * 1000) + 1)
                if ready < 0 && errno == EINTR { continue }
                if ready <= 0 { continue }
                let n = inbox.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + filled, $0.count - filled, 0) }
                if n > 0 {
                    filled += n
                    Self.acknowledgeAtOnce(fd)
                    return true
                }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }
                return false
            }
        }
        func need(_ count: Int) throws(Failure) {
            while filled < count {
                if !(try fill()) { throw fail(.closed, "the connection closed in the middle of a response") }
            }
        }
        var headerEnd = -1
        var status = 0
        var interim = false
        var closeAfterSwitch = false
        while true {
            var scanned = 0
            headerEnd = -1
            while true {
                var i = max(scanned - 3, 0)
                while i + 3 < filled {
                    if inbox[i] == 13 && inbox[i + 1] == 10 && inbox[i + 2] == 13 && inbox[i + 3] == 10 {
                        headerEnd = i; break
                    }
                    i += 1
                }
                scanned = filled
                if headerEnd >= 0 { break }
                if filled > Self.maxHeaderBytes {
                    throw fail(.malformed, "response headers longer than \(Self.maxHeaderBytes >> 10) KiB")
                }
                if !(try fill()) {
                    if filled == 0 && !interim { return nil }
                    throw fail(.closed, "the connection closed in the middle of a response")
                }
            }
            // "HTTP/1.x NNN"
            guard headerEnd >= 12, inbox[0] == 0x48, inbox[1] == 0x54, inbox[2] == 0x54, inbox[3] == 0x50,
                inbox[4] == 0x2F, let code = Self.digits(inbox, 9, 12)
            else {
                throw fail(
                    .malformed, "not an HTTP response: \(String(decoding: inbox[0..<min(filled, 100)], as: UTF8.self))")
            }
            status = code
            // An interim response (100 Continue, 103 Early Hints) precedes the final one; a client skips those it
            // did not ask for (RFC 9110 section 15.2). 101 would switch protocols: it stays final, and unexpected.
            guard (100..<200).contains(status), status != 101 else {
                // After a 101 the connection speaks another protocol: it is never used again.
                if status == 101 { closeAfterSwitch = true }
                break
            }
            let rest = headerEnd + 4
            inbox.withUnsafeMutableBytes { b in _ = memmove(b.baseAddress!, b.baseAddress! + rest, filled - rest) }
            filled -= rest
            interim = true
        }
        var length: Int?
        var chunked = false
        var closeAfter = closeAfterSwitch
        var lineStart = 0
        while lineStart < headerEnd {
            var lineEnd = lineStart
            while lineEnd < headerEnd && inbox[lineEnd] != 13 { lineEnd += 1 }
            if Self.hasPrefix(inbox, lineStart, lineEnd, "content-length:") {
                var v = 0, j = lineStart + 15, digits = 0
                while j < lineEnd && (inbox[j] == 32 || inbox[j] == 9) { j += 1 }
                while j < lineEnd, inbox[j] >= 48, inbox[j] <= 57, v <= maxBodyBytes {
                    v = v * 10 + Int(inbox[j] - 48)
                    j += 1
                    digits += 1
                }
                if v > maxBodyBytes {
                    throw fail(.malformed, "a response body of more than \(maxBodyBytes >> 20) MiB (Content-Length)")
                }
                if digits == 0 { throw fail(.malformed, "Content-Length is not a number") }
                length = v
            } else if Self.hasPrefix(inbox, lineStart, lineEnd, "transfer-encoding:") {
                let value = String(decoding: inbox[(lineStart + 18)..<lineEnd], as: UTF8.self).lowercased()
                guard value.trimmingCharacters(in: .whitespaces).hasSuffix("chunked") else {
                    throw fail(
                        .malformed, "unsupported Transfer-Encoding \(value.trimmingCharacters(in: .whitespaces))")
                }
                chunked = true
            } else if Self.hasPrefix(inbox, lineStart, lineEnd, "connection:")
                && String(decoding: inbox[lineStart..<lineEnd], as: UTF8.self).lowercased().contains("close")
            {
                closeAfter = true
            }
            lineStart = lineEnd + 2
        }
        let bodyStart = headerEnd + 4
        let body: Data
        if chunked {
            body = try readChunked(from: bodyStart, fill: fill, fail: fail)
        } else if let length {
            try need(bodyStart + length)
            body = Data(inbox[bodyStart..<(bodyStart + length)])
        } else if status < 200 || status == 204 || status == 304 {
            body = Data()  // no body by definition
        } else {
            // Neither a length nor chunked: the body runs to the end of the connection (HTTP/1.0 style).
            while try fill() {
                if filled - bodyStart > maxBodyBytes {
                    throw fail(.malformed, "a response body of more than \(maxBodyBytes >> 20) MiB")
                }
            }
            body = Data(inbox[bodyStart..<filled])
            closeAfter = true
        }
        if closeAfter { close() }
        return (status, body)
    }

    /// A chunked body: size lines in hex, data, CRLF, until a zero-size chunk and the trailers' empty line.
    private func readChunked(
        from start: Int, fill: () throws(Failure) -> Bool,
        fail: (Failure.Kind, String) -> Failure
    ) throws(Failure) -> Data {
        var body = Data()
        var pos = start
        /// The end of the line starting at `pos` (index of its CR), reading more as needed.
        func lineEnd() throws(Failure) -> Int {
            var i = pos
            while true {
                while i + 1 < filled {
                    if inbox[i] == 13 && inbox[i + 1] == 10 { return i }
                    i += 1
                }
                if i - pos > 4096 { throw fail(.malformed, "a chunk-size line longer than 4 KiB") }
                if !(try fill()) { throw fail(.closed, "the connection closed in the middle of a chunked response") }
            }
        }
        while true {
            // Framing too is bounded: chunk extensions and tiny chunks must not grow the buffer without end.
            if pos - start > maxBodyBytes + Self.maxHeaderBytes {
                throw fail(.malformed, "a chunked response of more than \(maxBodyBytes >> 20) MiB on the wire")
            }
            let end = try lineEnd()
            var size = 0, digits = 0, j = pos
            while j < end, let d = Self.hexValue(inbox[j]) {
                size = size * 16 + d
                digits += 1
                j += 1
                if body.count + size > maxBodyBytes {
                    throw fail(.malformed, "a chunked response body of more than \(maxBodyBytes >> 20) MiB")
                }
            }
            if digits == 0 { throw fail(.malformed, "a chunk-size line that is not hexadecimal") }
            pos = end + 2
            if size == 0 {
                // Trailers, if any, then an empty line.
                while true {
                    let e = try lineEnd()
                    let empty = e == pos
                    pos = e + 2
                    if empty { return body }
                    if pos - start > maxBodyBytes + Self.maxHeaderBytes {
                        throw fail(.malformed, "chunked trailers too long")
                    }
                }
            }
            while filled < pos + size + 2 {
                if !(try fill()) { throw fail(.closed, "the connection closed in the middle of a chunk") }
            }
            body.append(contentsOf: inbox[pos..<(pos + size)])
            guard inbox[pos + size] == 13, inbox[pos + size + 1] == 10 else {
                throw fail(.malformed, "a chunk not followed by CRLF")
            }
            pos += size + 2
        }
    }

    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 48...57: Int(b - 48)
        case 65...70: Int(b - 55)
        case 97...102: Int(b - 87)
        default: nil
        }
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
