import Foundation
import IAPEncoding
import IAPModel

extension HTTPValidator {
    /// Reads one route of a target file (`routes.<op>`): its method and path, query, headers and body templates with
    /// only the placeholders the operation fills, and for a delivery the statuses that mean accepted and refused.
    /// Every problem is recorded with its key path.
    struct RouteReader {
        let ro: StrictJSON.Object
        let op: String
        let allowed: Set<Placeholder.Name>

        init(ro: StrictJSON.Object, op: String) {
            (self.ro, self.op) = (ro, op)
            allowed = Route.placeholders(for: op)
        }

        func route() -> Route? {
            let method = ro.choice("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
            let path = ro.string("path")
            var route: Route?
            if let method, let path {
                if !path.hasPrefix("/") { ro.problem(ro.keyPath("path"), "must start with /") }
                route = Route(method: method, path: path)
                if let t = template(path, at: ro.keyPath("path")) { route?.pathTemplate = t }
            }
            let query = fields(ro.object("query", required: false))
            let headers = fields(ro.object("headers", required: false)).filter { h in
                let reserved = ["host", "content-length", "connection", "transfer-encoding"]
                if reserved.contains(h.name.lowercased()) {
                    ro.problem(ro.keyPath("headers"), "\(h.name) is set by iapcheck")
                    return false
                }
                return true
            }
            guard case .read(let body) = body() else { return nil }
            let (accepted, refused, reason) = verdict()
            let later = ro.bool("verifiesLater", required: false) ?? false
            if later && !Target.deliveries.contains(op) {
                ro.problem(ro.keyPath("verifiesLater"), "only a delivery is verified; \(op) is not one")
            }
            let nothing = nothingStatuses()
            ro.rejectUnknownKeys()
            guard var route else { return nil }
            route.query = query
            route.headers = headers
            route.body = body
            if let accepted { route.accepted = accepted }
            if let refused {
                route.refused = refused
            } else if op == "receipt" || op == "reconcile" {
                // The backend asked the App Store itself: a gateway error (the store's answer was unusable) says it
                // took nothing from it, as a 4xx does (docs/http-target.md, `refused`).
                route.refused.codes.formUnion([502, 503, 504].filter { !route.accepted.contains($0) })
            }
            if let code = route.accepted.overlaps(route.refused) {
                ro.problem(ro.keyPath("refused"), "\(code) is both accepted and refused")
            }
            route.reason = reason
            route.verifiesLater = later
            route.nothing = nothing
            return route
        }

        /// `"nothing"`: the entitlements route's statuses that mean the user holds nothing (a 404 for an account the
        /// backend never saw); a 2xx is an answer to read, and no other route answers about a user.
        func nothingStatuses() -> StatusSet? {
            guard ro.has("nothing") else { return nil }
            guard op == "entitlements" else {
                ro.problem(ro.keyPath("nothing"), "only the entitlements route answers about a user; \(op) does not")
                _ = ro.value("nothing")
                return nil
            }
            let set = Target.statuses(ro, "nothing")
            // A 5xx is the backend failing and a 3xx a redirect: read as "nothing", a crash would pass where the
            // user holds nothing. A 2xx other than 204 (no content) is an answer iapcheck reads.
            if let set,
                set.classes.contains(where: { $0 != 4 }) || set.codes.contains(where: { $0 != 204 && $0 / 100 != 4 })
            {
                ro.problem(
                    ro.keyPath("nothing"),
                    "only 204 or a 4xx can say the user holds nothing: a 5xx is the backend failing, a 3xx a redirect, another 2xx an answer iapcheck reads"
                )
            }
            return set
        }

        /// A template of the route, with only the placeholders this operation fills.
        func template(_ text: String, at key: String) -> Template? {
            switch Template.parse(text) {
            case .failure(let e):
                ro.problem(key, e.message)
                return nil
            case .success(let t):
                for p in t.placeholders where !allowed.contains(p.name) {
                    ro.problem(
                        key,
                        "\(p) is not filled in for \(op); it has \(allowed.map { "{\($0.rawValue)}" }.sorted().joined(separator: ", "))"
                    )
                    return nil
                }
                return t
            }
        }

        /// Named templates (query items, headers, form fields), by name.
        func fields(_ f: StrictJSON.Object?) -> [Route.Field] {
            guard let f else { return [] }
            var out: [Route.Field] = []
            for name in f.dict.keys.sorted() {
                guard let text = f.string(name) else { continue }
                if let t = template(text, at: f.keyPath(name)) { out.append(.init(name: name, value: t)) }
            }
            return out
        }

        /// A body as read: none or one (``read``), or a form that is not an object (the route is not read further).
        enum BodyRead {
            case read(Route.Body?)
            case unreadable
        }

        /// The body: `{"json": …}` or `{"form": {…}}`, or none.
        func body() -> BodyRead {
            guard let b = ro.object("body", required: false) else { return .read(nil) }
            var body: Route.Body?
            if b.dict.count != 1 || !(b.has("json") || b.has("form")) {
                ro.problem(ro.keyPath("body"), "one of {\"json\": …} or {\"form\": {\"field\": \"{placeholder}\"}}")
            } else if b.has("form") {
                guard let f = b.object("form") else { return .unreadable }
                body = .form(fields(f))
            } else {
                body = b.value("json").flatMap {
                    Target.jsonTemplate($0, at: b.keyPath("json"), ro, template: template)
                }.map { .json($0) }
            }
            b.rejectUnknownKeysExcept(["json", "form"])
            return .read(body)
        }

        /// For a delivery: the statuses that mean accepted and refused, and where a refusal's reason is; for any
        /// other operation none of them may be given.
        func verdict() -> (accepted: StatusSet?, refused: StatusSet?, reason: String?) {
            guard Target.deliveries.contains(op) else {
                for key in ["accepted", "refused", "reason"] where ro.has(key) {
                    ro.problem(ro.keyPath(key), "only a delivery's reply is a verdict; \(op) has none")
                    _ = ro.value(key)
                }
                return (nil, nil, nil)
            }
            let accepted = Target.statuses(ro, "accepted")
            let refused = Target.statuses(ro, "refused")
            var reason: String?
            if let text = ro.string("reason", required: false) {
                if text.isEmpty || text.hasPrefix("/") {
                    reason = text
                } else {
                    ro.problem(ro.keyPath("reason"), "\"\(text)\" is not a JSON Pointer: it must start with /")
                }
            }
            return (accepted, refused, reason)
        }
    }
}
