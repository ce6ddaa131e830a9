import IAPHTTP

/// The mock App Store's routes: a method and a path pattern (`/inApps/v2/history/:transactionId`) per handler,
/// which gets the request and the path's named segments. Unknown paths get Apple's 404, a known path asked with
/// another method 405.
struct Routes {
    typealias Handler = @Sendable (LoopbackHTTPServer.Request, [String: String]) -> LoopbackHTTPServer.Response
    private var table: [(method: String, segments: [Substring], handler: Handler)] = []

    mutating func get(_ pattern: String, _ handler: @escaping Handler) { add("GET", pattern, handler) }
    mutating func post(_ pattern: String, _ handler: @escaping Handler) { add("POST", pattern, handler) }

    private mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        table.append((method, pattern.split(separator: "/"), handler))
    }

    /// The named segments when `path` matches `segments`.
    static func match(_ segments: [Substring], _ path: [Substring]) -> [String: String]? {
        guard segments.count == path.count else { return nil }
        var parameters: [String: String] = [:]
        for (s, p) in zip(segments, path) {
            if s.hasPrefix(":") {
                parameters[String(s.dropFirst())] = String(p).removingPercentEncoding ?? String(p)
            } else if s != p {
                return nil
            }
        }
        return parameters
    }

    func answer(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        let path = request.path.split(separator: "/")
        var pathKnown = false
        for route in table {
            guard let parameters = Self.match(route.segments, path) else { continue }
            pathKnown = true
            let method = request.method == "HEAD" ? "GET" : request.method
            if route.method == method { return route.handler(request, parameters) }
        }
        return pathKnown
            ? LoopbackHTTPServer.Response(status: 405, text: "Method Not Allowed\n")
            : LoopbackHTTPServer.Response(status: 404, text: "Not Found\n")
    }
}
