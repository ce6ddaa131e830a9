import Foundation
import IAPEncoding
import IAPModel

/// How an HTTP target's own entitlements response becomes iapcheck's answer (`answer` in the target file,
/// `docs/http-target.md#profile-and-response-mapping`): JSON Pointers (RFC 6901) into the response, and value formats.
///
/// ```json
/// "answer": {"entitlements": {"each": "/subscriber/entitlements", "key": "@key",
///                             "expiresDate": {"pointer": "/expires_date", "format": "iso8601"}}}
/// ```
///
/// `each` names an array or an object of entries; `key` is the entry's id (`@key`: the member name in an object,
/// else a pointer into the entry); every other field is a pointer into the entry, or `{"pointer", "format"}`.
/// An entry that is absent is inactive. Without an `active` pointer, an entry is active when its `expiresDate` is
/// none or after the question's instant (RevenueCat's rule).
public struct AnswerMapping: Sendable {
    public enum DateFormat: String, Sendable, CaseIterable {
        case iso8601, epochMs = "epoch-ms", epochS = "epoch-s"
    }

    /// Where one field of an entry is, and how its value reads.
    public struct Field: Sendable {
        public var pointer: String
        /// Dates: `iso8601`, `epoch-ms` (default) or `epoch-s`. Booleans take true/false, "true"/"false", 1/0.
        public var format: DateFormat?
        /// Dates: how exact the backend keeps them, in milliseconds (`"precision": "s"` is 1000; default 1).
        public var precision: Millis = 1
        /// The key path of this field in the target file (for messages).
        public var keyPath: String
        /// `state` and `ownership`: the backend's own words for iapcheck's values (`"values": {"purchase":
        /// "PURCHASED", "family": "FAMILY_SHARED"}`); a value not listed is read as it is.
        public var values: [String: String] = [:]
        /// `state`: the states a word of the backend stands for when it names several (`"lapsed": ["expired",
        /// "revoked"]`); the word reads as the first, and counts as any of them.
        public var groups: [[String]] = []
        /// `expiresDate`: what the date means where the user's own grace and a paid grant (a family share) cover the
        /// product at once (`"meaning": "paid-first"` or `"access-end"`, docs/http-target.md#what-a-date-means).
        public var meaning: Policy.ExpiresMeaning?

        /// The value in iapcheck's words.
        func translated(_ s: String) -> String { values[s] ?? s }
    }

    /// One mapped list (`entitlements` or `products`).
    public struct List: Sendable {
        public var each: String
        public var eachKeyPath: String
        /// The id of the one entry the object at `each` is (a response about one entitlement: `{"premium": true,
        /// "premium_until": …}`); nil: `each` holds a list of entries.
        public var one: String?
        /// `"one": {"pointer": …}`: the object at `each` is one entry whose id the response names there (none when
        /// that is null): a response about the user's one plan.
        public var oneNamedAt: Field?
        /// nil: the member name (`@key`).
        public var key: Field?
        public var active: Field?
        public var expiresDate: Field?
        public var state: Field?
        public var ownership: Field?
    }

    public var entitlements: List?
    public var products: List?
    public var consumables: Balances?
    /// The target file, for messages.
    public var file: String

    /// How exact the mapped dates are (the coarsest `precision` declared): expiries are compared to it, and no
    /// question is asked closer than it to an instant where the answer changes (docs/http-target.md#precision).
    public var datePrecision: Millis? {
        let declared = [entitlements?.expiresDate?.precision, products?.expiresDate?.precision].compactMap { $0 }
        return declared.max().flatMap { $0 > 1 ? $0 : nil }
    }

    /// What the mapped expiries mean, as declared (one meaning for both lists: a parse problem otherwise).
    public var expiresMeaning: Policy.ExpiresMeaning? {
        entitlements?.expiresDate?.meaning ?? products?.expiresDate?.meaning
    }

    /// The answer fields this mapping provides (what the target answers unless it says otherwise).
    public var fields: [AnswerField] {
        var out: [AnswerField] = []
        if let e = entitlements {
            out.append(.entitlementsActive)
            if e.expiresDate != nil { out.append(.entitlementsExpiresDate) }
            if e.state != nil { out.append(.entitlementsState) }
            if e.ownership != nil { out.append(.entitlementsOwnership) }
        }
        if let p = products {
            out.append(.productsActive)
            if p.expiresDate != nil { out.append(.productsExpiresDate) }
            if p.state != nil { out.append(.productsState) }
            if p.ownership != nil { out.append(.productsOwnership) }
        }
        if consumables != nil { out.append(.consumables) }
        return out
    }

    /// Reads `answer` from a target file; every problem is recorded on the reader with its key.
    static func parse(_ o: StrictJSON.Object, file: String) -> AnswerMapping {
        var m = AnswerMapping(file: file)
        func pointer(_ s: String, at keyPath: String) -> String? {
            if s.isEmpty || s.hasPrefix("/") {
                // `~` must be followed by 0 or 1 (RFC 6901).
                let chars = Array(s)
                for (i, ch) in chars.enumerated() where ch == "~" {
                    if i + 1 >= chars.count || !"01".contains(chars[i + 1]) {
                        o.problem(keyPath, "\"\(s)\": `~` must be followed by 0 or 1 in a JSON Pointer")
                        return nil
                    }
                }
                return s
            }
            o.problem(keyPath, "\"\(s)\" is not a JSON Pointer: it must start with / (or be empty)")
            return nil
        }
        func field(_ l: StrictJSON.Object, _ name: String, dates: Bool, words: [String]? = nil) -> Field? {
            let path = l.keyPath(name)
            guard l.has(name) else {
                _ = l.string(name, required: false)
                return nil
            }
            if let s = l.dict[name] as? String {
                _ = l.string(name)
                return pointer(s, at: path).map { Field(pointer: $0, format: nil, keyPath: path) }
            }
            guard let f = l.object(name) else { return nil }
            let p = f.string("pointer")
            let format =
                dates ? f.choice("format", DateFormat.allCases.map(\.rawValue), required: false) : nil
            let precision = dates ? f.choice("precision", ["ms", "s"], required: false) : nil
            let told = words.flatMap { Self.valueWords(f, allowed: $0, groups: name == "state") }
            // `either` is what no declaration means; a backend's date has one meaning.
            let meaning =
                dates
                ? f.choice(
                    "meaning", Policy.ExpiresMeaning.allCases.filter { $0 != .either }.map(\.rawValue), required: false)
                : nil
            f.rejectUnknownKeys()
            guard let p, let ptr = pointer(p, at: f.keyPath("pointer")) else { return nil }
            var out = Field(pointer: ptr, format: format.flatMap(DateFormat.init(rawValue:)), keyPath: path)
            if precision == "s" { out.precision = 1000 }
            (out.values, out.groups) = (told?.words ?? [:], told?.groups ?? [])
            out.meaning = meaning.flatMap(Policy.ExpiresMeaning.init(rawValue:))
            return out
        }
        func list(_ name: String) -> List? {
            guard let l = o.object(name, required: false) else { return nil }
            let each = l.string("each")
            let oneNamedAt = l.dict["one"] is [String: Any] ? field(l, "one", dates: false) : nil
            let one = oneNamedAt == nil ? l.string("one", required: false) : nil
            if (one != nil || oneNamedAt != nil) && l.has("key") {
                l.problem(l.keyPath("key"), "an entry named by \"one\" needs no \"key\"")
            }
            var key: Field?
            let keyText = l.string("key", required: false) ?? "@key"
            if keyText != "@key", let p = pointer(keyText, at: l.keyPath("key")) {
                key = Field(pointer: p, format: nil, keyPath: l.keyPath("key"))
            }
            var out = List(
                each: each.flatMap { pointer($0, at: l.keyPath("each")) } ?? "", eachKeyPath: l.keyPath("each"),
                one: one, key: key, active: field(l, "active", dates: false, words: ["true", "false"]),
                expiresDate: field(l, "expiresDate", dates: true),
                state: field(l, "state", dates: false, words: EntitlementState.allCases.map(\.rawValue)),
                ownership: field(l, "ownership", dates: false, words: InAppOwnershipType.known.map(\.rawValue)))
            out.oneNamedAt = oneNamedAt
            l.rejectUnknownKeys()
            return each == nil ? nil : out
        }
        m.entitlements = list("entitlements")
        m.products = list("products")
        m.consumables = parseConsumables(o, pointer: pointer, field: { field($0, $1, dates: $2) })
        requireOneMeaning(m, o)
        o.rejectUnknownKeys()
        if !o.has("entitlements") && !o.has("products") && !o.has("consumables") {
            o.problem(o.path, "map \"entitlements\", \"products\" or \"consumables\" (any of them)")
        }
        return m
    }

    /// `"values"`: each of the backend's words to one of `allowed`, or, where `groups` (a state), to a list of
    /// them that the word stands for together: all entitled or none, since the word says whether the entry is active.
    static func valueWords(_ f: StrictJSON.Object, allowed: [String], groups: Bool = false)
        -> (words: [String: String], groups: [[String]])?
    {
        guard let v = f.object("values", required: false) else { return nil }
        var out: [String: String] = [:]
        var together: [[String]] = []
        for word in v.dict.keys.sorted() {
            if groups, let list = v.dict[word] as? [Any] {
                _ = v.value(word)
                let states = list.compactMap { $0 as? String }.compactMap(EntitlementState.init(rawValue:))
                guard states.count == list.count, states.count > 1, Set(states).count == states.count,
                    Set(states.map(\.isEntitled)).count == 1
                else {
                    v.problem(
                        v.keyPath(word),
                        "a list of two or more states, all entitled (active, grace) or none (expired, revoked, billing-retry): \(allowed.joined(separator: ", "))"
                    )
                    continue
                }
                out[word] = states[0].rawValue
                together.append(states.map(\.rawValue))
                continue
            }
            guard let to = v.choice(word, allowed) else { continue }
            out[word] = to
        }
        return (out, together)
    }

    /// The groups of states the mapped `state` fields tell with one word (``ValidatorProfile/stateGroups``).
    public var stateGroups: [[EntitlementState]] {
        let groups = [entitlements?.state?.groups, products?.state?.groups].compactMap { $0 }.joined()
        var out: [[EntitlementState]] = []
        for g in groups {
            let states = g.compactMap(EntitlementState.init(rawValue:))
            if !out.contains(states) { out.append(states) }
        }
        return out
    }

    /// One policy holds for both lists: their dates declare one meaning. A paid-through date says nothing of a grace
    /// period, so whether an entry is active must be mapped beside it.
    static func requireOneMeaning(_ m: AnswerMapping, _ o: StrictJSON.Object) {
        for (name, list) in [("entitlements", m.entitlements), ("products", m.products)]
        where list?.expiresDate?.meaning == .paidThrough && list?.active == nil {
            o.problem(
                o.keyPath(name) + ".expiresDate.meaning",
                "a paid-through date ends before a grace period does, so it cannot say whether the entry is active: map \"active\" too"
            )
        }
        guard let a = m.entitlements?.expiresDate?.meaning, let b = m.products?.expiresDate?.meaning, a != b else {
            return
        }
        o.problem(
            o.keyPath("products"),
            "entitlements.expiresDate means \(a.rawValue) and products.expiresDate \(b.rawValue): one policy holds for both, declare one meaning"
        )
    }

    /// A mapped response that does not fit the mapping: a pointer that finds nothing, a value of the wrong kind.
    public struct Mismatch: Error, CustomStringConvertible, Sendable {
        public var message: String
        /// The response fits the mapping but cannot be right (a balance no purchases add up to): the backend's fault,
        /// not the file's.
        public var isWrongAnswer = false
        /// What to change in the target file.
        public var fix: String?
        public var description: String { message }
    }

    /// The answer in a response body, for a question about instant `at`.
    public func answer(from body: Data, at: Millis) throws(Mismatch) -> EntitlementAnswer {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        } catch {
            // No mapping makes a page of HTML or a truncated object an answer: the backend's fault, not the file's.
            var m = Mismatch(
                message: "the entitlements body is not JSON: \(AnswerMapping.quoted(body, first: 200))")
            m.isWrongAnswer = true
            throw m
        }
        let entitlements = try EntryReader(mapping: self, body: body, at: at).entries(self.entitlements, root: root).map
        { e in
            EntitlementGrant(
                entitlementId: e.id, active: e.active, state: e.state, expiresDate: e.expires, ownership: e.ownership)
        }
        let products = try EntryReader(mapping: self, body: body, at: at).entries(self.products, root: root).map { e in
            ProductEntitlement(
                productId: e.id, active: e.active, state: e.state, expiresDate: e.expires, ownership: e.ownership)
        }
        let consumables = try balances(root: root, body: body)
        return EntitlementAnswer(
            products: products, groups: [], consumables: consumables, entitlements: entitlements)
    }

    /// RFC 6901: `""` is the whole document; `/a/0/b` walks members and array indices; `~1` is `/`, `~0` is `~`.
    static func resolve(_ pointer: String, in doc: Any) -> Any? {
        guard !pointer.isEmpty else { return doc }
        var cur: Any = doc
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let d = cur as? [String: Any] {
                guard let next = d[token] else { return nil }
                cur = next
            } else if let a = cur as? [Any] {
                guard let i = Int(token), i >= 0, i < a.count, token == String(i) else { return nil }
                cur = a[i]
            } else {
                return nil
            }
        }
        return cur
    }

    /// The first `first` bytes of a body as a report quotes it, without the line end most bodies finish with (shown
    /// escaped, `\u{A}`, it read as part of the answer).
    static func quoted(_ body: Data, first: Int) -> String {
        var text = String(decoding: body.prefix(first), as: UTF8.self)
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" || last == " " || last == "\t" {
            text.unicodeScalars.removeLast()
        }
        return text
    }

    static func show(_ v: Any?) -> String {
        guard let v else { return "null" }
        if let s = v as? String { return "\"\(s.prefix(80))\"" }
        return "\(v)".prefix(80).description
    }
}
