import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

extension HTTPValidator {
    /// One operation's request, as the backend takes it, and how its reply reads as a verdict
    /// (docs/http-target.md#requests). Without `body`, `query` and `headers` it is iapcheck's own request shape.
    public struct Route: Sendable {
        public var method: String
        /// The path as the target file wrote it (a template, with its query part if it has one).
        public var path: String
        var pathTemplate: Template
        var query: [Field] = []
        var headers: [Field] = []
        /// nil: iapcheck's own JSON body (docs/http-target.md's table).
        var body: Body?
        /// Statuses that mean the delivery was accepted (default 2xx) and refused (default 4xx); any other is a
        /// validator failure.
        var accepted = StatusSet.range(200..<300)
        var refused = StatusSet.range(400..<500)
        /// A JSON Pointer to the reason in a refusal's body; nil: `/reason`, else the status.
        var reason: String?
        /// `"verifiesLater"`: the route's accepting status says the delivery was received, not that it was verified
        /// (the backend verifies it from a queue, docs/http-target.md#asynchronous-backends); a delivery it must
        /// refuse is judged by its effect on the answers.
        public var verifiesLater = false
        /// The entitlements route's statuses that say the user holds nothing (`"nothing": [404]`: an account the
        /// backend never saw), read as an empty answer rather than a failure.
        var nothing: StatusSet?

        public init(method: String, path: String) {
            self.method = method
            self.path = path
            pathTemplate = (try? Template.parse(path).get()) ?? Template(parts: [.text(path)], source: path)
        }

        struct Field: Sendable {
            var name: String
            var value: Template
        }

        indirect enum Body: Sendable {
            case json(JSONTemplate)
            case form([Field])
        }

        /// Whether the request's path, query or body carries placeholder `name`. Headers do not count: a time in a
        /// header is the backend's test clock (docs/http-target.md#the-backends-clock), its "now", not a question.
        func asks(_ name: Placeholder.Name) -> Bool {
            var all = pathTemplate.placeholders + query.flatMap(\.value.placeholders)
            switch body {
            case .json(let j): all += j.placeholders
            case .form(let fields): all += fields.flatMap(\.value.placeholders)
            case nil: break
            }
            return all.contains { $0.name == name }
        }

        /// Whether the request is iapcheck's own: the hot path then writes it without templates.
        var isPlain: Bool { body == nil && query.isEmpty && headers.isEmpty }

        /// The placeholders each operation fills in (a template naming another is refused when the file is read).
        static func placeholders(for op: String) -> Set<Placeholder.Name> {
            let common: Set<Placeholder.Name> = [.job]
            switch op {
            case "reset": return common.union([.config])
            case "appTransaction":
                return common.union([
                    .userId, .signedTransaction, .transactionId, .originalTransactionId, .deviceTime, .now,
                ])
            case "notification": return common.union([.signedPayload, .now])
            case "apiSnapshot": return common.union([.originalTransactionId, .apiSnapshot, .now])
            case "legacyReceipt": return common.union([.userId, .responseBody, .now])
            case "reconcile": return common.union([.originalTransactionId, .now])
            case "receipt": return common.union([.userId, .receiptData, .now])
            case "entitlements": return common.union([.userId, .at])
            default: return common
            }
        }

        /// The request line's target: the path with its placeholders percent-encoded, and the `query` pairs.
        package func target(_ values: RequestValues) -> String {
            var out = pathTemplate.render(values, encode: Self.percentEncoded)
            if !query.isEmpty {
                out += out.contains("?") ? "&" : "?"
                out += query.map {
                    Self.percentEncoded($0.name) + "=" + Self.percentEncoded($0.value.render(values))
                }.joined(separator: "&")
            }
            return out
        }

        /// The body and its content type; nil: iapcheck's own body goes.
        package func renderedBody(_ values: RequestValues) -> (Data, String)? {
            switch body {
            case nil: return nil
            case .json(let t): return (Data(t.render(values).utf8), "application/json")
            case .form(let fields):
                let text = fields.map {
                    Self.formEncoded($0.name) + "=" + Self.formEncoded($0.value.render(values))
                }.joined(separator: "&")
                return (Data(text.utf8), "application/x-www-form-urlencoded")
            }
        }

        package func renderedHeaders(_ values: RequestValues) -> [(String, String)] {
            headers.map { ($0.name, $0.value.render(values)) }
        }

        /// The verdict a reply carries; nil when its status is neither accepted nor refused.
        package func verdict(status: Int, body: Data) -> DeliveryVerdict? {
            if accepted.contains(status) { return .accepted }
            guard refused.contains(status) else { return nil }
            let pointer = reason ?? "/reason"
            if let doc = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
                let found = AnswerMapping.resolve(pointer, in: doc), !(found is NSNull)
            {
                return .rejected(reason: Terminal.visible((found as? String) ?? AnswerMapping.show(found)))
            }
            return .rejected(reason: "HTTP \(status)")
        }

        /// RFC 3986 unreserved characters stay; everything else is %XX (a path segment or a query component).
        static func percentEncoded(_ s: String) -> String {
            var out = ""
            for b in s.utf8 {
                if (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
                    || b == 0x2E || b == 0x5F || b == 0x7E
                {
                    out.unicodeScalars.append(UnicodeScalar(b))
                } else {
                    out += "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true)
                }
            }
            return out
        }

        /// `application/x-www-form-urlencoded`: as a query component, with spaces as `+`.
        static func formEncoded(_ s: String) -> String {
            percentEncoded(s).replacingOccurrences(of: "%20", with: "+")
        }
    }

    /// Status codes: a list of them, or a class such as `2xx`.
    struct StatusSet: Sendable {
        var codes: Set<Int> = []
        var classes: Set<Int> = []
        static func range(_ r: Range<Int>) -> StatusSet { StatusSet(codes: [], classes: [r.lowerBound / 100]) }
        func contains(_ status: Int) -> Bool { codes.contains(status) || classes.contains(status / 100) }
        func overlaps(_ other: StatusSet) -> Int? {
            for c in 100..<600 where contains(c) && other.contains(c) { return c }
            return nil
        }
    }

    /// A JSON body with placeholders: a string that is one placeholder and nothing else takes the value's JSON
    /// type (`"{deviceTime}"` is a number or null, `"{config}"` an object); placeholders inside a longer string
    /// are filled in as text.
    indirect enum JSONTemplate: Sendable {
        case object([(String, JSONTemplate)])
        case array([JSONTemplate])
        case string(Template)
        /// A number, `true`, `false` or `null`, as JSON text.
        case literal(String)

        func render(_ values: RequestValues) -> String {
            switch self {
            case .object(let members):
                return "{"
                    + members.map { JSONText.string($0.0) + ":" + $0.1.render(values) }.joined(separator: ",") + "}"
            case .array(let items): return "[" + items.map { $0.render(values) }.joined(separator: ",") + "]"
            case .string(let t):
                if let p = t.lone { return values.json(p) }
                return JSONText.string(t.render(values))
            case .literal(let s): return s
            }
        }

        var placeholders: [Placeholder] {
            switch self {
            case .object(let members): return members.flatMap(\.1.placeholders)
            case .array(let items): return items.flatMap(\.placeholders)
            case .string(let t): return t.placeholders
            case .literal: return []
            }
        }
    }
}
