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

    /// Reads requests off one connection, keeping what arrived beyond the current one (pipelining).
    struct RequestReader {
        let fd: Int32
        let maxBody: Int
        var buffer: [UInt8] = []
        /// Where the unread bytes of `buffer` start.
        var start = 0
        static let maxHead = 64 << 10

        init(fd: Int32, maxBody: Int) {
            self.fd = fd
            self.maxBody = maxBody
        }

        /// Reads more bytes; false on end of stream, timeout or error.
        mutating func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                buffer.append(contentsOf: chunk[..<n])
                return true
            }
        }

        /// The index just past the first CRLF CRLF at or after `from`, or nil.
        func headEnd(from: Int) -> Int? {
            var i = max(from, start)
            while i + 3 < buffer.count {
                if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i + 4 }
                i += 1
            }
            return nil
        }

        mutating func next() -> Next {
            // Drop what earlier requests used (indices into the buffer stay valid within one request).
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            var end: Int?
            var scanned = start
            while true {
                end = headEnd(from: scanned)
                if end != nil { break }
                if buffer.count - start > Self.maxHead { return .refused(431, "request head over 64 KiB") }
                scanned = max(start, buffer.count - 3)
                guard fill() else { return .closed }
            }
            let head = String(decoding: buffer[start..<(end! - 4)], as: UTF8.self)
            start = end!
            var lines = head.components(separatedBy: "\r\n")
            // Tolerated before a request line (RFC 9112 §2.2): empty lines left over from a previous request.
            while lines.first == "" { lines.removeFirst() }
            guard let requestLine = lines.first else { return .refused(400, "no request line") }
            let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else {
                return .refused(400, "not an HTTP/1.x request line: \(requestLine.prefix(80))")
            }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { return .refused(400, "malformed header line") }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            let version11 = parts[2] == "HTTP/1.1"
            let connection = headers["connection"]?.lowercased() ?? ""
            let keepAlive = version11 ? !connection.contains("close") : connection.contains("keep-alive")
            if headers["expect"]?.lowercased() == "100-continue" {
                _ = LoopbackHTTPServer.sendAll(fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            }
            let body: [UInt8]
            if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
                switch readChunked() {
                case .success(let b): body = b
                case .failure(let refusal): return refusal.next
                }
            } else if let text = headers["content-length"] {
                guard let length = Int(text.split(separator: ",").first!.trimmingCharacters(in: .whitespaces)),
                    length >= 0
                else { return .refused(400, "Content-Length \(text) is not a length") }
                guard length <= maxBody else { return .refused(413, "a body of \(length) bytes is over \(maxBody)") }
                while buffer.count - start < length { guard fill() else { return .closed } }
                body = Array(buffer[start..<(start + length)])
                start += length
            } else {
                body = []
            }
            let target = String(parts[1])
            let (path, query) = Self.split(target)
            return .request(
                Request(method: String(parts[0]), path: path, query: query, headers: headers, body: Data(body)),
                keepAlive: keepAlive)
        }

        struct Refusal: Error {
            var next: Next
        }

        /// A chunked body (RFC 9112 §7.1): sizes in hex, extensions and trailers read and dropped.
        mutating func readChunked() -> Result<[UInt8], Refusal> {
            var body: [UInt8] = []
            while true {
                guard let line = readLine() else { return .failure(Refusal(next: .closed)) }
                let hex = line.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard let size = Int(hex, radix: 16), size >= 0 else {
                    return .failure(Refusal(next: .refused(400, "chunk size \(hex.prefix(20)) is not hexadecimal")))
                }
                if size == 0 {
                    while let trailer = readLine() { if trailer.isEmpty { return .success(body) } }
                    return .failure(Refusal(next: .closed))
                }
                guard body.count + size <= maxBody else {
                    return .failure(Refusal(next: .refused(413, "a chunked body over \(maxBody) bytes")))
                }
                while buffer.count - start < size + 2 { guard fill() else { return .failure(Refusal(next: .closed)) } }
                body.append(contentsOf: buffer[start..<(start + size)])
                start += size + 2
            }
        }

        /// One CRLF-terminated line (without it), or nil at the end of the stream.
        mutating func readLine() -> String? {
            var scanned = start
            while true {
                var i = scanned
                while i + 1 < buffer.count {
                    if buffer[i] == 13 && buffer[i + 1] == 10 {
                        let line = String(decoding: buffer[start..<i], as: UTF8.self)
                        start = i + 2
                        return line
                    }
                    i += 1
                }
                if buffer.count - start > Self.maxHead { return nil }
                scanned = max(start, buffer.count - 1)
                guard fill() else { return nil }
            }
        }

        /// `/a/b?x=1&y=%20` → (`/a/b`, [x: 1, y: " "]).
        static func split(_ target: String) -> (String, [String: String]) {
            guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
            var query: [String: String] = [:]
            for pair in target[target.index(after: q)...].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decode(_ s: Substring) -> String {
                    String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(s)
                }
                query[decode(kv[0])] = kv.count > 1 ? decode(kv[1]) : ""
            }
            return (String(target[..<q]), query)
        }
    }
}
