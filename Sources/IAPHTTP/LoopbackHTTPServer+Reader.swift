import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension LoopbackHTTPServer {
    /// What reading the next request of a connection gave.
    enum Next {
        case request(Request, keepAlive: Bool)
        /// The peer closed (or idled out) between requests, or mid-request: nothing to answer.
        case closed
        /// A request that cannot be served: answered with this status, then the connection is closed.
        case refused(Int, String)
    }

    /// Reads requests off one connection (RFC 9112), keeping what arrived beyond the current one (pipelining).
    /// Strict where leniency lets one request be read as two (a space before a header's colon, conflicting
    /// lengths, a length and a chunked body together are closed after), lenient where clients differ harmlessly
    /// (bare LF line ends, empty lines before a request, an absolute-form target).
    struct RequestReader {
        let fd: Int32
        let maxBody: Int
        /// Seconds one request may take to arrive once its first byte has (a peer trickling bytes cannot hold the
        /// connection's thread beyond it); between requests the connection's idle timeout applies.
        var requestSeconds = LoopbackHTTPServer.requestSeconds
        /// When the request being read must be complete (monotonic nanoseconds); nil between requests.
        var deadline: UInt64?
        /// The receive timeout was shortened to the deadline (and must be set back to the idle timeout).
        var shortened = false
        var buffer: [UInt8] = []
        /// Where the unread bytes of `buffer` start.
        var start = 0
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        /// Called when a request's first byte is in (the connection stops waiting).
        var began: () -> Void = {}
        static let maxHead = 64 << 10

        init(fd: Int32, maxBody: Int) {
            self.fd = fd
            self.maxBody = maxBody
        }

        /// Reads more bytes; false on end of stream, timeout, error, or past the request's deadline.
        mutating func fill() -> Bool {
            if let deadline {
                // Within a request: wait no longer than what is left of its time.
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { return false }
                let left = deadline - now
                var t = timeval(tv_sec: Int(left / 1_000_000_000), tv_usec: Int(left % 1_000_000_000 / 1000) + 1)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, socklen_t(MemoryLayout<timeval>.size))
                shortened = true
            }
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                buffer.append(contentsOf: chunk[..<n])
                return true
            }
        }

        /// The index just past the empty line that ends a head starting at `start` (CRLF or bare LF), or nil.
        func headEnd(from: Int) -> Int? {
            var i = max(from, start)
            while i < buffer.count {
                if buffer[i] == 10 {
                    if i + 1 < buffer.count && buffer[i + 1] == 10 { return i + 2 }
                    if i + 2 < buffer.count && buffer[i + 1] == 13 && buffer[i + 2] == 10 { return i + 3 }
                }
                i += 1
            }
            return nil
        }

        // long by design: the framing of one HTTP/1.1 request (head, then length or chunks) as one state machine.
        mutating func next() -> Next {
            // Drop what earlier requests used (indices into the buffer stay valid within one request).
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            // Between requests the connection's idle timeout applies (restored if a request shortened it).
            deadline = nil
            if shortened {
                shortened = false
                var idle = timeval(tv_sec: LoopbackHTTPServer.idleSeconds, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, socklen_t(MemoryLayout<timeval>.size))
            }
            // Empty lines before a request line are ignored (RFC 9112 §2.2).
            while true {
                while start < buffer.count && (buffer[start] == 13 || buffer[start] == 10) { start += 1 }
                if start < buffer.count { break }
                guard fill() else { return .closed }
            }
            began()
            // From its first byte, the request has `requestSeconds` to arrive whole.
            deadline = DispatchTime.now().uptimeNanoseconds + UInt64(requestSeconds * 1e9)
            var end: Int?
            var scanned = start
            while true {
                end = headEnd(from: scanned)
                if end != nil || buffer.count - start > Self.maxHead { break }
                scanned = max(start, buffer.count - 2)
                guard fill() else { return .closed }
            }
            guard let end, end - start <= Self.maxHead else { return .refused(431, "request head over 64 KiB") }
            // Split as bytes: in a Swift String, CR LF is one character, and a bare LF another.
            let lines = buffer[start..<end].split(separator: 10, omittingEmptySubsequences: false).map { line in
                String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
            }.filter { !$0.isEmpty }
            start = end
            guard let requestLine = lines.first else { return .refused(400, "no request line") }
            let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0", !parts[0].isEmpty else {
                return .refused(400, "not an HTTP/1.1 request line: \(requestLine.prefix(80))")
            }
            var headers: [String: String] = [:]
            var lengths: [String] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    return .refused(400, "malformed header line")
                }
                let name = line[..<colon]
                // A space before the colon, or a folded line: refused, as RFC 9112 §5 requires.
                guard !name.contains(where: { $0 == " " || $0 == "\t" }) else {
                    return .refused(400, "whitespace in a header name")
                }
                let key = name.lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if key == "content-length" {
                    lengths += value.split(separator: ",", omittingEmptySubsequences: false).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                }
                headers[key] = headers[key].map { $0 + ", " + value } ?? value
            }
            let version11 = parts[2] == "HTTP/1.1"
            let connection = headers["connection"]?.lowercased() ?? ""
            var keepAlive = version11 ? !connection.contains("close") : connection.contains("keep-alive")
            let body: [UInt8]
            if let coding = headers["transfer-encoding"]?.lowercased() {
                guard coding.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) == "chunked" else {
                    return .refused(501, "Transfer-Encoding \(coding) is not served")
                }
                // A length beside chunked is ignored, and the connection not trusted further (RFC 9112 §6.3).
                if !lengths.isEmpty { keepAlive = false }
                continueIfAsked(headers, version11: version11)
                switch readChunked() {
                case .success(let b): body = b
                case .failure(let refusal): return refusal.next
                }
            } else if !lengths.isEmpty {
                guard let text = lengths.first, Set(lengths).count == 1, !text.isEmpty, text.count <= 18,
                    text.allSatisfy({ $0 >= "0" && $0 <= "9" }), let length = Int(text)
                else { return .refused(400, "Content-Length \(lengths.joined(separator: ", ")) is not one length") }
                guard length <= maxBody else { return .refused(413, "a body of \(length) bytes is over \(maxBody)") }
                if length > 0 { continueIfAsked(headers, version11: version11) }
                while buffer.count - start < length { guard fill() else { return .closed } }
                body = Array(buffer[start..<(start + length)])
                start += length
            } else {
                body = []
            }
            let (path, query) = Self.split(Self.originForm(String(parts[1])))
            return .request(
                Request(method: String(parts[0]), path: path, query: query, headers: headers, body: Data(body)),
                keepAlive: keepAlive)
        }

        /// `Expect: 100-continue` of an HTTP/1.1 request whose body will be read (an HTTP/1.0 one is ignored).
        func continueIfAsked(_ headers: [String: String], version11: Bool) {
            guard version11, headers["expect"]?.lowercased() == "100-continue" else { return }
            _ = LoopbackHTTPServer.sendAll(fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }

        struct Refusal: Error {
            var next: Next
        }

        /// A chunked body (RFC 9112 §7.1): sizes in hex, extensions and trailers read and dropped.
        mutating func readChunked() -> Result<[UInt8], Refusal> {
            var body: [UInt8] = []
            func refuse(_ status: Int, _ why: String) -> Result<[UInt8], Refusal> {
                .failure(Refusal(next: .refused(status, why)))
            }
            while true {
                let line: String
                switch readLine() {
                case .line(let l): line = l
                case .closed: return .failure(Refusal(next: .closed))
                case .tooLong: return refuse(431, "a chunk-size line over 64 KiB")
                }
                let hex = line.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard !hex.isEmpty, hex.count <= 15, let size = Int(hex, radix: 16), size >= 0 else {
                    return refuse(400, "chunk size \(hex.prefix(20)) is not hexadecimal")
                }
                if size == 0 {
                    while true {
                        switch readLine() {
                        case .line(let trailer): if trailer.isEmpty { return .success(body) }
                        case .closed: return .failure(Refusal(next: .closed))
                        case .tooLong: return refuse(431, "trailers over 64 KiB")
                        }
                    }
                }
                guard size <= maxBody - body.count else { return refuse(413, "a chunked body over \(maxBody) bytes") }
                while buffer.count - start < size + 1 { guard fill() else { return .failure(Refusal(next: .closed)) } }
                body.append(contentsOf: buffer[start..<(start + size)])
                start += size
                switch readLine() {
                case .line(let rest) where rest.isEmpty: continue
                case .closed: return .failure(Refusal(next: .closed))
                default: return refuse(400, "chunk data longer than its size")
                }
            }
        }

        enum Line {
            case line(String)
            case closed
            case tooLong
        }

        /// One line (CRLF or LF ended, without it).
        mutating func readLine() -> Line {
            var scanned = start
            while true {
                if let lf = buffer[scanned...].firstIndex(of: 10) {
                    let endOfText = lf > start && buffer[lf - 1] == 13 ? lf - 1 : lf
                    let line = String(decoding: buffer[start..<endOfText], as: UTF8.self)
                    start = lf + 1
                    return .line(line)
                }
                if buffer.count - start > Self.maxHead { return .tooLong }
                scanned = buffer.count
                guard fill() else { return .closed }
            }
        }

        /// An absolute-form target (`http://127.0.0.1:8080/a?b`) as its path and query (RFC 9112 §3.2.2).
        static func originForm(_ target: String) -> String {
            guard let scheme = target.range(of: "://"), target.lowercased().hasPrefix("http") else { return target }
            let rest = target[scheme.upperBound...]
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
            let pathAndQuery = String(rest[slash...])
            return pathAndQuery.hasPrefix("?") ? "/" + pathAndQuery : pathAndQuery
        }

        /// `/a/b?x=1&y=%20` → (`/a/b`, [x: 1, y: " "]); a repeated name keeps its first value.
        static func split(_ target: String) -> (String, [String: String]) {
            guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
            var query: [String: String] = [:]
            for pair in target[target.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decode(_ s: Substring) -> String {
                    let spaced = s.replacingOccurrences(of: "+", with: " ")
                    return spaced.removingPercentEncoding ?? spaced
                }
                let name = decode(kv[0])
                if query[name] == nil { query[name] = kv.count > 1 ? decode(kv[1]) : "" }
            }
            return (String(target[..<q]), query)
        }
    }
}
