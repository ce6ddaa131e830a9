import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

extension HTTPValidator {
    /// A target file (docs/http-target.md): where the backend listens, the request each operation becomes, how
    /// its answers read, how its clock is set, and whether iapcheck starts it.
    public struct Target: Sendable {
        public var host: String
        public var port: Int
        public var clock: Clock = .header("X-IAPCheck-Now")
        /// The header that carries "now" (`clockHeader`), when the clock is a header.
        public var clockHeader: String {
            if case .header(let name) = clock { return name }
            return "X-IAPCheck-Now"
        }
        public var routes: [String: Route]
        /// The mock App Store iapcheck starts for this backend (`store` in the target file), if any.
        public var store: StoreSettings?
        /// How iapcheck starts the backend itself (`start`), so the `kill` fault can kill and restart it.
        public var start: (command: String, readySeconds: Double)?
        /// What the backend answers and which channels it takes (`answers`, `channels`).
        public var profile: ValidatorProfile = .undeclared
        /// The host as the file names it, which iapcheck connects to: `localhost` is tried as 127.0.0.1, then ::1
        /// (`host`, which names the target in reports, says 127.0.0.1 for both).
        public var connectHost: String
        /// `connectHost` as a URL writes it (`[::1]`).
        public var urlHost: String { Terminal.urlHost(connectHost) }
        /// How its own entitlements response reads as an answer (`answer`); nil: it answers iapcheck's format.
        public var mapping: AnswerMapping?
        /// How many callers the backend takes at once (`--jobs` up to this). Above 1, every request carries
        /// ``jobHeader`` and the backend keeps one state per value of it (docs/http-target.md#concurrent-jobs).
        public var maxConcurrency = 1
        /// `"settleMs"`: the backend applies deliveries after acknowledging them (a queue); an answer that differs
        /// from the expected one is asked again until it agrees or this many milliseconds have passed.
        public var settleMs: Int?
        /// The file it was read from, for messages.
        public var file: String?
        /// What the backend is called (`"name"`): its corpus folder's name, whatever the file is called.
        public var name: String?
        /// What reports call the backend: its `"name"`, else `http:` and its address. Shards of one backend
        /// started on other ports have one name, and merge.
        public var displayName: String { name ?? "http:\(host):\(port)" }
        /// The backend's accepted divergences (`"baseline"`, a file relative to the target file; docs/check.md#baselines):
        /// `check` and `certify` read it when no `--baseline` is given.
        public var baseline: String?

        /// How the backend learns "now" (docs/http-target.md#the-backends-clock).
        public enum Clock: Sendable, Equatable {
            /// It reads this header (epoch ms) on every request.
            case header(String)
            /// It reads the wall clock; iapcheck starts it under libfaketime and sets that clock before each request.
            case faketime
            /// It reads the real wall clock, which iapcheck cannot set: it can be loaded (questions asked at the real
            /// time), not checked (a history needs its clock).
            case wall
        }

        /// A backend without a `reset` route keeps its state: every case then runs in ids of its own.
        public var resets: Bool { routes["reset"] != nil }

        public static let operations = [
            "reset", "appTransaction", "notification", "apiSnapshot", "legacyReceipt", "entitlements",
            "reconcile", "receipt",
        ]
        /// Operations that only make sense when the backend calls the mock App Store.
        static let storeOperations: Set<String> = ["reconcile", "receipt"]
        /// Operations whose reply is a verdict (accepted or refused).
        static let deliveries: Set<String> = [
            "appTransaction", "notification", "apiSnapshot", "legacyReceipt", "reconcile", "receipt",
        ]

        public init(host: String, port: Int, routes: [String: Route]) {
            self.host = host
            self.connectHost = host
            self.port = port
            self.routes = routes
        }

        public static func load(path: String) throws(ConfigError) -> Target {
            let data = try StrictJSON.readFile(path)
            let r = StrictJSON(file: path)
            let o = try r.root(data)
            var host = "127.0.0.1", port = 0
            if let base = o.string("baseURL") {
                (host, port) = parseBaseURL(base, o)
            }
            let name = o.string("name", required: false)
            let baseline = o.string("baseline", required: false).map { file in
                // Relative to the target file, so a target and its baseline travel together.
                file.hasPrefix("/")
                    ? file : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(file).path
            }
            if let baseline, !FileManager.default.fileExists(atPath: baseline) {
                r.problem(o.keyPath("baseline"), "no file at \(baseline) (iapcheck check --write-baseline writes one)")
            }
            let settle = o.int("settleMs", required: false, range: 1...60000).map(Int.init)
            let concurrency = Int(o.int("maxConcurrency", required: false, range: 1...256) ?? 1)
            if concurrency > 1, o.has("store") {
                r.problem(
                    o.keyPath("maxConcurrency"),
                    "above 1 needs a target without a \"store\" section (the mock App Store keeps one state for all jobs)"
                )
            }
            let mapping = o.object("answer", required: false).map { AnswerMapping.parse($0, file: path) }
            var profile = parseProfile(o, mapping: mapping)
            var routes: [String: Route] = [:]
            if let rs = o.object("routes") {
                routes = parseRoutes(rs, profile: profile, hasStore: o.has("store"))
            }
            // A route whose path, query or body carries no {at} is asked about the backend's present only, as in
            // production (a time in a header is its clock); the file may say otherwise (a backend that answers for
            // any instant its clock header names).
            profile.questionsInHindsight =
                o.bool("questionsInHindsight", required: false) ?? routes["entitlements"].map { $0.asks(.at) } ?? true
            let store = o.object("store", required: false).map { parseStore($0, file: path) }
            var start: (command: String, readySeconds: Double)?
            if let so = o.object("start", required: false) {
                let command = so.string("command")
                let ready = Double(so.int("readySeconds", required: false, range: 1...600) ?? 60)
                so.rejectUnknownKeys()
                if let command { start = (command, ready) }
            }
            let clock = parseClock(o, startable: o.has("start"), jobs: concurrency)
            if store == nil {
                for op in storeOperations.sorted() where routes[op] != nil {
                    r.problem(
                        o.keyPath("routes"),
                        "route \(op) needs a \"store\" section (the backend calls the mock App Store)")
                }
            }
            o.rejectUnknownKeys()
            try r.finish()
            var t = Target(host: host == "localhost" ? "127.0.0.1" : host, port: port, routes: routes)
            t.connectHost = host
            t.clock = clock
            t.store = store
            t.start = start
            t.profile = profile
            t.mapping = mapping
            t.maxConcurrency = concurrency
            t.settleMs = settle
            t.file = path
            t.name = name
            t.baseline = baseline
            return t
        }

        static func parseBaseURL(_ base: String, _ o: StrictJSON.Object) -> (String, Int) {
            let scheme = "http://"
            let rest = base.hasPrefix(scheme) ? String(base.dropFirst(scheme.count)) : ""
            let hostPort = rest.split(separator: "/").first.map(String.init) ?? ""
            // An IPv6 literal is written in brackets (RFC 3986): http://[::1]:8080.
            let parts =
                hostPort.hasPrefix("[::1]:") ? ["::1", hostPort.dropFirst(6)] : hostPort.split(separator: ":")
            var host = "127.0.0.1", port = 0
            if parts.count == 2, let p = Int(parts[1]), p > 0, p < 65536 {
                host = String(parts[0])
                port = p
            } else {
                o.problem(o.keyPath("baseURL"), "\"\(base)\" is not http://HOST:PORT")
            }
            if !["127.0.0.1", "localhost", "::1"].contains(host) {
                o.problem(
                    o.keyPath("baseURL"),
                    "iapcheck sends traffic only to loopback addresses (127.0.0.1, localhost, ::1)")
            }
            return (host, port)
        }

        static func parseProfile(_ o: StrictJSON.Object, mapping: AnswerMapping?) -> ValidatorProfile {
            let answers = o.strings("answers", required: false)
            let channels = o.strings("channels", required: false)
            var profile = ValidatorProfile.undeclared
            // A mapping that maps nothing has said why already: "the list is empty" on top, and every route of the
            // channels it did not declare reported missing, only hid that.
            let mapped = mapping.map { $0.fields.map(\.rawValue) }.flatMap { $0.isEmpty ? nil : $0 }
            do {
                profile = try ValidatorProfile.parse(answers: answers ?? mapped, channels: channels, prefix: "")
            } catch {
                let key = error.message.hasPrefix("answers") ? "answers" : "channels"
                o.problem(key, String(error.message.dropFirst(error.message.hasPrefix(key + ": ") ? key.count + 2 : 0)))
                // A misspelt channel is the problem; the routes of channels it may have meant are not missing.
                if key == "channels" { profile = ValidatorProfile(answers: profile.answers, channels: []) }
            }
            if let mapping, answers != nil {
                let mapped = Set(mapping.fields)
                for f in profile.answers where !mapped.contains(f) {
                    o.problem(
                        "answers",
                        "\(f.rawValue) is declared but the answer mapping does not map it (it maps \(mapping.fields.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
            }
            if let precision = mapping?.datePrecision { profile.datePrecision = precision }
            profile.expiresMeaning = mapping?.expiresMeaning
            profile.stateGroups = mapping?.stateGroups ?? []
            return profile
        }

        /// `clock` and `clockHeader`: a header by default; `faketime` needs a backend iapcheck starts, one caller;
        /// `wall`, the real clock, takes no setting.
        static func parseClock(_ o: StrictJSON.Object, startable: Bool, jobs: Int) -> Clock {
            let kind = o.choice("clock", ["header", "faketime", "wall"], required: false) ?? "header"
            let header = o.string("clockHeader", required: false)
            if kind == "header" { return .header(header ?? "X-IAPCheck-Now") }
            if header != nil {
                o.problem(o.keyPath("clockHeader"), "a \(kind) clock sends no header: drop clockHeader")
            }
            if kind == "wall" { return .wall }
            if !startable {
                o.problem(
                    o.keyPath("clock"),
                    "\"faketime\" runs the backend under libfaketime, so iapcheck must start it: add a \"start\" section with its command"
                )
            }
            if jobs > 1 {
                o.problem(
                    o.keyPath("maxConcurrency"), "a faketime clock is one clock for the whole backend: one caller only")
            }
            return .faketime
        }

        /// Every route: the pull routes (reconcile, receipt) may replace the push routes with a store; a channel the
        /// backend does not take needs no route; without `reset` every case runs in ids of its own.
        static func parseRoutes(_ rs: StrictJSON.Object, profile: ValidatorProfile, hasStore: Bool) -> [String: Route] {
            var optional = storeOperations.union(["reset"])
            if !profile.accepts(.app) { optional.insert("appTransaction") }
            if !profile.accepts(.notification) { optional.insert("notification") }
            if !profile.accepts(.api) { optional.insert("apiSnapshot") }
            if !profile.accepts(.legacy) { optional.insert("legacyReceipt") }
            if hasStore {
                if rs.has("reconcile") { optional.insert("apiSnapshot") }
                if rs.has("receipt") { optional.insert("legacyReceipt") }
            }
            var routes: [String: Route] = [:]
            for op in operations {
                guard let ro = rs.object(op, required: !optional.contains(op)) else { continue }
                if let route = parseRoute(ro, op: op) { routes[op] = route }
            }
            rs.rejectUnknownKeys()
            return routes
        }

        static func parseRoute(_ ro: StrictJSON.Object, op: String) -> Route? {
            HTTPValidator.RouteReader(ro: ro, op: op).route()
        }

        /// `[200, 201]` or `["2xx"]`: codes from 100 to 599, or classes.
        static func statuses(_ ro: StrictJSON.Object, _ key: String) -> StatusSet? {
            guard let value = ro.value(key) else { return nil }
            guard let list = value as? [Any], !list.isEmpty else {
                ro.problem(ro.keyPath(key), "expected a non-empty list of status codes (200) or classes (\"2xx\")")
                return nil
            }
            var set = StatusSet()
            for (i, item) in list.enumerated() {
                if let n = item as? NSNumber, !StrictJSON.isBool(n), let code = Int(exactly: n.doubleValue),
                    (100...599).contains(code)
                {
                    set.codes.insert(code)
                } else if let s = item as? String, s.count == 3, s.hasSuffix("xx"), let c = Int(s.prefix(1)),
                    (1...5).contains(c)
                {
                    set.classes.insert(c)
                } else {
                    ro.problem(
                        "\(ro.keyPath(key))[\(i)]",
                        "\(AnswerMapping.show(item)) is not a status (100–599) or a class (\"2xx\")")
                }
            }
            return set
        }

        static func jsonTemplate(
            _ v: Any, at key: String, _ ro: StrictJSON.Object, template: (String, String) -> Template?
        ) -> JSONTemplate? {
            if let s = v as? String { return template(s, key).map { .string($0) } }
            if let d = v as? [String: Any] {
                var members: [(String, JSONTemplate)] = []
                for k in d.keys.sorted() {
                    guard let m = jsonTemplate(d[k]!, at: "\(key).\(k)", ro, template: template) else { return nil }
                    members.append((k, m))
                }
                return .object(members)
            }
            if let a = v as? [Any] {
                var items: [JSONTemplate] = []
                for (i, e) in a.enumerated() {
                    guard let m = jsonTemplate(e, at: "\(key)[\(i)]", ro, template: template) else { return nil }
                    items.append(m)
                }
                return .array(items)
            }
            if v is NSNull { return .literal("null") }
            if let n = v as? NSNumber {
                if StrictJSON.isBool(n) { return .literal(n.boolValue ? "true" : "false") }
                guard
                    let text = String(
                        data: (try? JSONSerialization.data(withJSONObject: [n])) ?? Data(), encoding: .utf8)
                else { return nil }
                return .literal(String(text.dropFirst().dropLast()))
            }
            ro.problem(key, "not a JSON value")
            return nil
        }

        static func parseStore(_ so: StrictJSON.Object, file path: String) -> StoreSettings {
            var settings = StoreSettings(port: 0)
            if let p = so.int("port", range: 1...65535) { settings.port = Int(p) }
            settings.sharedSecret = so.string("sharedSecret", required: false)
            if let k = so.object("apiKey", required: false) {
                let keyId = k.string("keyId"), issuerId = k.string("issuerId"), file = k.string("privateKeyFile")
                if let keyId, let issuerId, let file {
                    // Relative to the target file, so a target and its key travel together.
                    let resolved =
                        file.hasPrefix("/")
                        ? file
                        : URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent(file).path
                    if !FileManager.default.fileExists(atPath: resolved) {
                        k.problem(k.keyPath("privateKeyFile"), "no file at \(resolved)")
                    }
                    settings.apiKey = .init(keyId: keyId, issuerId: issuerId, privateKeyFile: resolved)
                }
                k.rejectUnknownKeys()
            }
            so.rejectUnknownKeys()
            return settings
        }
    }
}
