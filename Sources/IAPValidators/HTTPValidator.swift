import Foundation
import IAPModel
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A running backend checked over HTTP on loopback. A target file (`--validator http:TARGET.json`, see
/// `docs/http-target.md`) maps each operation to a route; the backend's clock is given in a header.
///
/// Verdicts: 2xx accepted, 4xx rejected (with the body's `reason`), anything else a validator failure. The client
/// is a small blocking HTTP/1.1 client with keep-alive (one connection, reconnected when the server closes it).
public final class HTTPValidator: Validator {
    public struct Route: Sendable {
        public var method: String
        public var path: String
    }

    public struct Target: Sendable {
        public var host: String
        public var port: Int
        public var clockHeader: String
        public var routes: [String: Route]
        public static let operations = ["reset", "appTransaction", "notification", "apiSnapshot", "legacyReceipt", "entitlements"]

        public static func load(path: String) throws(ConfigError) -> Target {
            let data = try StrictJSON.readFile(path)
            let r = StrictJSON(file: path)
            let o = try r.root(data)
            var host = "127.0.0.1", port = 0
            if let base = o.string("baseURL") {
                let rest = base.hasPrefix("http://") ? String(base.dropFirst(7)) : ""
                let hostPort = rest.split(separator: "/").first.map(String.init) ?? ""
                let parts = hostPort.split(separator: ":")
                if parts.count == 2, let p = Int(parts[1]), p > 0, p < 65536 {
                    host = String(parts[0])
                    port = p
                } else {
                    r.problem(o.keyPath("baseURL"), "\"\(base)\" is not http://HOST:PORT")
                }
                if !["127.0.0.1", "localhost", "::1"].contains(host) {
                    r.problem(o.keyPath("baseURL"), "iapcheck sends traffic only to loopback addresses (127.0.0.1, localhost, ::1)")
                }
            }
            let clock = o.string("clockHeader", required: false) ?? "X-IAPCheck-Now"
            var routes: [String: Route] = [:]
            if let rs = o.object("routes") {
                for op in operations {
                    guard let ro = rs.object(op) else { continue }
                    let method = ro.choice("method", ["GET", "POST", "PUT"])
                    let path = ro.string("path")
                    ro.rejectUnknownKeys()
                    if let method, let path {
                        if !path.hasPrefix("/") { r.problem(ro.keyPath("path"), "must start with /") }
                        routes[op] = Route(method: method, path: path)
                    }
                }
                rs.rejectUnknownKeys()
            }
            o.rejectUnknownKeys()
            try r.finish()
            return Target(host: host == "localhost" ? "127.0.0.1" : host, port: port, clockHeader: clock, routes: routes)
        }
    }

    public let target: Target
    public let timeout: TimeInterval
    public let name: String
    private var fd: Int32 = -1
    private var transcript: [String] = []

    public init(target: Target, name: String, timeout: TimeInterval = 5) {
        self.target = target
        self.name = name
        self.timeout = timeout
    }

    deinit { if fd >= 0 { close(fd) } }

    func note(_ s: String) {
        transcript.append(s.count > 300 ? String(s.prefix(300)) + "…" : s)
        if transcript.count > 12 { transcript.removeFirst(transcript.count - 12) }
    }

    func connect() throws(ValidatorFailure) {
        if fd >= 0 { close(fd) }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ValidatorFailure(.unavailable, "cannot create a socket") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: .init((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(target.port).bigEndian)
        inet_pton(AF_INET, target.host, &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if rc != 0 {
            close(fd)
            fd = -1
            throw ValidatorFailure(.unavailable, "cannot connect to http://\(target.host):\(target.port) (is the backend running?)", transcript: transcript)
        }
    }

    /// One request; reconnects once if the kept-alive connection was closed.
    func send(_ op: String, path: String, body: Data?, now: Millis?) throws(ValidatorFailure) -> (Int, Data) {
        guard let route = target.routes[op] else { throw ValidatorFailure(.protocolViolation, "the target file has no route for \(op)") }
        var head = "\(route.method) \(path) HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\nConnection: keep-alive\r\n"
        if let now { head += "\(target.clockHeader): \(now)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        head += "\r\n"
        let request = Data(head.utf8) + (body ?? Data())
        note("→ \(route.method) \(path)")
        for attempt in 0..<2 {
            if fd < 0 { try connect() }
            let sent = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent == request.count, let reply = try readResponse() {
                note("← \(reply.0) \(String(decoding: reply.1.prefix(200), as: UTF8.self))")
                return reply
            }
            close(fd)
            fd = -1
            if attempt == 1 { break }
        }
        throw ValidatorFailure(.crashed, "the backend closed the connection without a response", transcript: transcript)
    }

    /// Reads one response; nil if the connection was closed before any byte arrived.
    func readResponse() throws(ValidatorFailure) -> (Int, Data)? {
        var buf = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() throws(ValidatorFailure) -> Bool {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n > 0 {
                buf += chunk[0..<n]
                return true
            }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw ValidatorFailure(.timedOut, "no HTTP response within \(timeout) s", transcript: transcript)
            }
            return false
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            if !(try fill()) {
                if buf.isEmpty { return nil }
                throw ValidatorFailure(.crashed, "the connection closed in the middle of a response", transcript: transcript)
            }
            headerEnd = buf.firstRange(of: separator)?.lowerBound
        }
        let header = String(decoding: buf[..<headerEnd!], as: UTF8.self)
        let lines = header.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."), let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw ValidatorFailure(.badAnswer, "not an HTTP response: \(String(header.prefix(100)))", transcript: transcript)
        }
        var length = 0
        for l in lines.dropFirst() where l.lowercased().hasPrefix("content-length:") {
            length = Int(l.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        if lines.contains(where: { $0.lowercased().hasPrefix("transfer-encoding:") }) {
            throw ValidatorFailure(.badAnswer, "chunked responses are not supported; send Content-Length", transcript: transcript)
        }
        let bodyStart = headerEnd! + 4
        while buf.count < bodyStart + length {
            if !(try fill()) { throw ValidatorFailure(.crashed, "the connection closed in the middle of a response", transcript: transcript) }
        }
        return (status, Data(buf[bodyStart..<(bodyStart + length)]))
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    func encode<T: Encodable>(_ v: T) -> Data { (try? Self.encoder.encode(v)) ?? Data() }

    public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        let (status, body) = try send("reset", path: target.routes["reset"]?.path ?? "/", body: encode(config), now: nil)
        guard (200..<300).contains(status) else {
            throw ValidatorFailure(.badAnswer, "reset answered HTTP \(status): \(String(decoding: body.prefix(200), as: UTF8.self))", transcript: transcript)
        }
    }

    struct Reason: Decodable { let reason: String? }

    /// The JSON bodies the routes receive (docs/http-target.md).
    struct AppTransactionBody: Codable { let userId: String; let signedTransaction: String; let deviceTime: Millis? }
    struct NotificationBody: Codable { let signedPayload: String }
    struct LegacyBody: Codable { let userId: String; let responseBody: String }

    public func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let op: String, body: Data
        switch delivery {
        case let .appTransaction(userId, jws, deviceTime):
            op = "appTransaction"
            body = encode(AppTransactionBody(userId: userId, signedTransaction: jws, deviceTime: deviceTime))
        case .notification(let signedPayload):
            op = "notification"
            body = encode(NotificationBody(signedPayload: signedPayload))
        case .apiSnapshot:
            op = "apiSnapshot"
            body = encode(delivery)
        case let .legacyReceipt(userId, responseBody):
            op = "legacyReceipt"
            body = encode(LegacyBody(userId: userId, responseBody: responseBody))
        }
        let (status, reply) = try send(op, path: target.routes[op]?.path ?? "/", body: body, now: now)
        switch status {
        case 200..<300: return .accepted
        case 400..<500: return .rejected(reason: (try? JSONDecoder().decode(Reason.self, from: reply).reason) ?? "HTTP \(status)")
        default: throw ValidatorFailure(.badAnswer, "HTTP \(status) for \(op)", transcript: transcript)
        }
    }

    public func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        let template = target.routes["entitlements"]?.path ?? "/"
        let path = template.replacingOccurrences(of: "{userId}", with: query.userId).replacingOccurrences(of: "{at}", with: String(query.at))
        let (status, body) = try send("entitlements", path: path, body: nil, now: query.at)
        guard status == 200, let a = try? JSONDecoder().decode(EntitlementAnswer.self, from: body) else {
            throw ValidatorFailure(.badAnswer, "entitlements answered HTTP \(status): \(String(decoding: body.prefix(200), as: UTF8.self))", transcript: transcript)
        }
        return EntitlementAnswer(products: a.products, groups: a.groups, consumables: a.consumables)
    }
}
