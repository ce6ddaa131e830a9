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

    /// One request and its answer. `headers` are added as given; the body is sent with `contentType`.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: Data? = nil,
                        contentType: String = "application/json") throws(Failure) -> (status: Int, body: Data) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: keep-alive\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        if let body { head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        var request = Data(head.utf8)
        if let body { request.append(body) }
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

    /// Reads one response; nil if the connection was closed before any byte arrived.
    func readResponse() throws(Failure) -> (Int, Data)? {
        var buf = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() throws(Failure) -> Bool {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n > 0 {
                buf += chunk[0..<n]
                return true
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                close()
                throw Failure(kind: .timedOut, message: "no HTTP response within \(timeout) s")
            }
            return false
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if !(try fill()) {
                if buf.isEmpty { return nil }
                close()
                throw Failure(kind: .closed, message: "the connection closed in the middle of a response")
            }
            headerEnd = buf.firstRange(of: separator)?.lowerBound
        }
        let header = String(decoding: buf[..<headerEnd!], as: UTF8.self)
        let lines = header.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."), let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            close()
            throw Failure(kind: .malformed, message: "not an HTTP response: \(String(header.prefix(100)))")
        }
        var length = 0
        var closeAfter = false
        for l in lines.dropFirst() {
            let lower = l.lowercased()
            if lower.hasPrefix("content-length:") {
                length = Int(l.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)) ?? 0
            } else if lower.hasPrefix("transfer-encoding:") {
                close()
                throw Failure(kind: .malformed, message: "chunked responses are not supported; send Content-Length")
            } else if lower.hasPrefix("connection:") && lower.contains("close") {
                closeAfter = true
            }
        }
        let bodyStart = headerEnd! + 4
        while buf.count < bodyStart + length {
            if !(try fill()) {
                close()
                throw Failure(kind: .closed, message: "the connection closed in the middle of a response")
            }
        }
        let reply = (status, Data(buf[bodyStart..<(bodyStart + length)]))
        if closeAfter { close() }
        return reply
    }
}
