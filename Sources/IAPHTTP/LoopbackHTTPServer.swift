import Dispatch
import Foundation
import IAPModel
import IAPSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP/1.1 server of what iapcheck serves itself on 127.0.0.1: the mock App Store a backend calls, and the
/// trivial endpoint of `bench driver`. Keep-alive, `Content-Length` and chunked request bodies, `Expect:
/// 100-continue`, pipelined requests; one thread per connection (loopback peers are few: a backend's HTTP client
/// pool, a load driver's connections), at most `maxConnections` of them: at the cap, the connection that has waited
/// longest for a request is closed to make room (HTTP lets a server close an idle connection at any time), and only
/// when every connection is within a request is a newcomer turned away. Written here rather than taken from a server
/// framework so that building iapcheck costs no event-loop library (docs/release.md#building-from-source).
public final class LoopbackHTTPServer: @unchecked Sendable {
    public struct Request: Sendable {
        public var method: String
        /// The path of the request target, without its query.
        public var path: String
        /// The query's parameters, percent-decoded (`+` as a space); the last of a repeated name.
        public var query: [String: String]
        /// Header names lowercased; a repeated header's values joined with ", ".
        public var headers: [String: String]
        public var body: Data
    }

    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: Data
        public init(status: Int = 200, contentType: String = "application/json", body: Data) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
        public init(status: Int, text: String, contentType: String = "text/plain") {
            self.init(status: status, contentType: contentType, body: Data(text.utf8))
        }
    }

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The port it listens on (the one the kernel picked when asked for 0).
    public let port: Int
    let listener: Int32
    let handler: @Sendable (Request) -> Response
    /// The largest request body taken; a larger one is answered 413.
    let maxBody: Int
    /// Connections served at once (a thread each); at the cap, an idle one makes room or a newcomer is answered 503.
    let maxConnections: Int
    /// Seconds a request may take to arrive once it has begun.
    let requestSeconds: Double
    let connections = Locked(Connections())
    let stopped = Locked(false)

    /// What each open connection is doing, by descriptor: waiting for a request (since when, monotonic
    /// nanoseconds) or within one; an evicted one is closing and is not counted against the cap.
    struct Connections {
        var waitingSince: [Int32: UInt64] = [:]
        var working: Set<Int32> = []
        var evicted: Set<Int32> = []
        var counted: Int { waitingSince.count + working.count }
    }

    /// Connections open now (closing ones included): their threads.
    public var openConnections: Int { connections.withLock { $0.counted + $0.evicted.count } }

    /// Binds 127.0.0.1:`port` (0: any free port) and listens; `start()` begins accepting.
    public init(
        port: Int, maxBody: Int = 8 << 20, maxConnections: Int = 256, requestSeconds: Double = requestSeconds,
        handler: @escaping @Sendable (Request) -> Response
    ) throws(StartError) {
        // Close-on-exec: a backend iapcheck starts must not inherit the store's sockets.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 512) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw StartError(description: "127.0.0.1:\(port): \(why)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        self.listener = fd
        self.handler = handler
        self.maxBody = maxBody
        self.maxConnections = maxConnections
        self.requestSeconds = requestSeconds
    }

    /// Accepts connections on a thread of its own until `stop()`.
    public func start() {
        let thread = Thread { [self] in
            while !stopped.value {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if stopped.value { return }
                    if errno != EINTR { usleep(10_000) }  // out of descriptors: let connections finish
                    continue
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // (accept4 is a GNU extension the Glibc module leaves out)
                guard admitSoon(fd) else {
                    Self.turnAway(fd)
                    continue
                }
                let connection = Thread { [self] in
                    serve(fd)
                    connections.withLock {
                        $0.waitingSince[fd] = nil
                        $0.working.remove(fd)
                        $0.evicted.remove(fd)
                    }
                    close(fd)
                }
                connection.stackSize = 4 << 20
                connection.start()
            }
        }
        thread.start()
    }

    /// Stops accepting; a connection within a request answers it, then closes; a waiting one is closed now.
    public func stop() {
        stopped.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        connections.withLock { table in
            for fd in table.waitingSince.keys { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Takes a new connection, waiting for its first request, if there is room: below the cap, or by closing the
    /// connection that has waited longest. While evicted connections are still closing (at most a quarter of the
    /// cap), newcomers are not admitted by evicting more (``admitSoon(_:)`` waits a moment for them): the threads stay
    /// bounded under a flood.
    func admit(_ fd: Int32) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
        return connections.withLock { table in
            if table.counted >= maxConnections {
                guard table.evicted.count < max(1, maxConnections / 4),
                    let oldest = table.waitingSince.min(by: { $0.value < $1.value })?.key
                else { return false }
                // Under the lock: the descriptor is still this connection's (its thread closes it only after
                // leaving the table), so no later connection reusing the number can be shut down by mistake.
                shutdown(oldest, Int32(SHUT_RDWR))
                table.waitingSince[oldest] = nil
                table.evicted.insert(oldest)
            }
            table.waitingSince[fd] = now
            return true
        }
    }

    /// `admit`, waiting up to 100 ms while evicted connections are closing: their threads need a moment of CPU to
    /// leave, which a busy machine gives late, and a newcomer turned away then would be a client refused for
    /// nothing. The accept loop waits, not a thread per newcomer, so the threads stay bounded.
    func admitSoon(_ fd: Int32) -> Bool {
        for _ in 0..<10 {
            if admit(fd) { return true }
            guard connections.withLock({ $0.evicted.count >= max(1, maxConnections / 4) }) else { return false }
            usleep(10_000)
        }
        return admit(fd)
    }

    /// A connection began a request (false) or waits for the next one (true); an evicted one stays evicted.
    func mark(_ fd: Int32, waiting: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        connections.withLock { table in
            guard !table.evicted.contains(fd) else { return }
            if waiting {
                table.working.remove(fd)
                table.waitingSince[fd] = now
                // stop() sets `stopped` before it closes the waiting connections under this lock: one of the two
                // sees the other.
                if stopped.value { shutdown(fd, Int32(SHUT_RDWR)) }
            } else {
                table.waitingSince[fd] = nil
                table.working.insert(fd)
            }
        }
    }

    /// Seconds a connection may sit idle between requests before it is closed; said in `Keep-Alive`.
    static let idleSeconds = 600
    /// Seconds a request may take to arrive once its first byte has, by default.
    public static let requestSeconds = 60.0

    /// A connection beyond `maxConnections`: a 503 that says to retry, sent without waiting on the peer, and closed.
    static func turnAway(_ fd: Int32) {
        var brief = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
        let text = "too many connections\n"
        _ = sendAll(
            fd,
            Data(
                "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\nConnection: close\r\n\r\n\(text)"
                    .utf8))
        // What the peer sent already is read without waiting (closing on unread input would reset the connection
        // before the 503 is read); the accept loop never waits on a peer it turns away.
        shutdown(fd, Int32(SHUT_WR))
        var sink = [UInt8](repeating: 0, count: 16 << 10)
        _ = sink.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        close(fd)
    }

    /// One connection: requests in order until the peer closes, asks to, or idles for ten minutes.
    /// The caller closes `fd` once the connection has left the table.
    func serve(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var idle = timeval(tv_sec: Self.idleSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
        var reader = RequestReader(fd: fd, maxBody: maxBody)
        reader.requestSeconds = requestSeconds
        reader.began = { [self] in mark(fd, waiting: false) }
        while true {
            switch reader.next() {
            case .closed: return
            case .refused(let status, let why):
                write(fd, Response(status: status, text: why + "\n"), keepAlive: false, head: false)
                Self.linger(fd)
                return
            case .request(let request, let keepAlive):
                let response = handler(request)
                let open = keepAlive && !stopped.value
                guard write(fd, response, keepAlive: open, head: request.method == "HEAD"), open else { return }
                mark(fd, waiting: true)
            }
        }
    }

    /// After a refusal: stop sending, and read what the client still sends for a moment, so that it reads the
    /// refusal instead of a reset (closing with unread input resets the connection).
    static func linger(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var brief = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &brief, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 64 << 10)
        let until = Date().addingTimeInterval(2)
        var drained = 0
        while Date() < until, drained < 256 << 20 {
            let n = sink.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
            drained += n
        }
    }

    @discardableResult
    func write(_ fd: Int32, _ r: Response, keepAlive: Bool, head: Bool) -> Bool {
        var out = Data(
            ("HTTP/1.1 \(r.status) \(Self.reason(r.status))\r\nContent-Type: \(r.contentType)\r\n"
                + "Content-Length: \(r.body.count)\r\n"
                + (keepAlive
                    ? "Connection: keep-alive\r\nKeep-Alive: timeout=\(Self.idleSeconds)\r\n" : "Connection: close\r\n")
                + "\r\n").utf8)
        if !head { out.append(r.body) }
        return Self.sendAll(fd, out)
    }

    static func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                sent += n
            }
            return true
        }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
