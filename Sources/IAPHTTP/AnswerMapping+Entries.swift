import Foundation
import IAPEncoding
import IAPModel

extension AnswerMapping {
    /// One entry of a list as the mapping reads it: its id, whether it is active, its state, its end and who owns it.
    struct Entry {
        var id: String
        var active: Bool
        var state: EntitlementState
        var expires: Millis?
        var ownership: InAppOwnershipType?
    }

    /// Reads a list's entries out of one response; each problem names the mapping file's key path, what the response
    /// holds there, and the fix.
    struct EntryReader {
        let mapping: AnswerMapping
        let body: Data
        /// When the question was asked: an entry without `active` is active while its end is after it.
        let at: Millis

        /// How to map a value in the backend's own words: `"values"` beside the field's pointer.
        func wordsFix(_ f: Field, _ v: Any) -> String? {
            guard let word = v as? String else { return nil }
            return
                "if \(AnswerMapping.show(word)) is the backend's word for one of iapcheck's values, say which in \(mapping.file): \(f.keyPath) as {\"pointer\": \"\(f.pointer)\", \"values\": {\"\(word)\": …}}"
        }

        func fail(_ keyPath: String, _ why: String, fix: String? = nil) -> Mismatch {
            Mismatch(
                message:
                    "\(mapping.file): \(keyPath): \(why) (response: \(AnswerMapping.quoted(body, first: 300)))",
                fix: fix ?? "point \(keyPath) in \(mapping.file) at where the response above has it (a JSON Pointer)")
        }

        func entries(_ list: List?, root: Any) throws(Mismatch) -> [Entry] {
            guard let list else { return [] }
            guard let container = AnswerMapping.resolve(list.each, in: root) else {
                throw fail(list.eachKeyPath, "\"\(list.each)\" finds nothing in the response")
            }
            var out: [Entry] = []
            for (name, item) in try items(of: container, list) {
                out.append(try entry(item, id: try id(of: item, named: name, list), list))
            }
            return out
        }

        /// The entries `each` finds: the one object `one` names, an array's items, or an object's members by name.
        func items(of container: Any, _ list: List) throws(Mismatch) -> [(String?, Any)] {
            if let one = list.one {
                guard container is [String: Any] else {
                    throw fail(list.eachKeyPath, "\"\(list.each)\" is not an object (the entry \"\(one)\" names)")
                }
                return [(one, container)]
            }
            if let named = list.oneNamedAt {
                // One entry, named by the response itself (`{"plan": "pro.annual", "renewsAt": …}`); none when null.
                guard container is [String: Any] else {
                    throw fail(
                        list.eachKeyPath, "\"\(list.each)\" is not an object (the one entry \(named.keyPath) names)")
                }
                let v = AnswerMapping.resolve(named.pointer, in: container)
                if v == nil || v is NSNull { return [] }
                guard let id = v as? String ?? (v as? NSNumber).map({ "\($0)" }) else {
                    throw fail(named.keyPath, "\(AnswerMapping.show(v)) is not an id")
                }
                return [(id, container)]
            }
            if let a = container as? [Any] { return a.map { (nil, $0) } }
            if let d = container as? [String: Any] { return d.keys.sorted().map { ($0, d[$0]!) } }
            if container is NSNull { return [] }
            throw fail(list.eachKeyPath, "\"\(list.each)\" is not an array or an object")
        }

        /// An entry's id: at its `key`, or its member name.
        func id(of item: Any, named name: String?, _ list: List) throws(Mismatch) -> String {
            guard let k = list.key else {
                guard let name else {
                    throw fail(list.eachKeyPath, "\"\(list.each)\" is an array: name each entry's id with \"key\"")
                }
                return name
            }
            guard let v = AnswerMapping.resolve(k.pointer, in: item) else {
                throw fail(k.keyPath, "\"\(k.pointer)\" finds nothing in an entry")
            }
            guard let s = v as? String ?? (v as? NSNumber).map({ "\($0)" }) else {
                throw fail(k.keyPath, "\"\(k.pointer)\" is not a string in an entry")
            }
            return s
        }

        /// A field's value inside the entry; nil for JSON null or a field the mapping does not name, and, where
        /// `missingIsNone`, for a field the entry leaves out.
        func value(_ f: Field?, in item: Any, id: String, _ list: List, missingIsNone: Bool = false) throws(Mismatch)
            -> Any?
        {
            guard let f else { return nil }
            guard let v = AnswerMapping.resolve(f.pointer, in: item) else {
                if missingIsNone && item is [String: Any] { return nil }
                // Fields are read inside each entry: a pointer into the whole response finds nothing there.
                let inside =
                    item is [String: Any] || item is [Any]
                    ? nil
                    : "entry \"\(id)\" is \(AnswerMapping.show(item)), not an object: a field's pointer is read inside each entry of \(list.eachKeyPath); for a response about one entitlement or product, point \(list.eachKeyPath) at it and name it with \"one\""
                throw fail(f.keyPath, "\"\(f.pointer)\" finds nothing in entry \"\(id)\"", fix: inside)
            }
            return v is NSNull ? nil : v
        }

        /// The entry: its end in the field's date format, active (from the field, the state, or the end), its state
        /// (or active/expired) and its ownership (purchased when active and the mapping names none). An entry the
        /// backend says is not active may leave its end and its ownership out (answers.md: compared only when active).
        func entry(_ item: Any, id: String, _ list: List) throws(Mismatch) -> Entry {
            var said: Bool?
            if let f = list.active {
                let v = try value(f, in: item, id: id, list)
                // A backend's own words for it (`"values": {"grace": "true", "lapsed": "false"}`) read first.
                let word = v.map { ($0 as? String).map(f.translated) ?? $0 }
                guard let b = word.flatMap(AnswerMapping.bool) else {
                    throw fail(
                        f.keyPath, "\(AnswerMapping.show(v)) in entry \"\(id)\" is not a boolean",
                        fix: v is String ? wordsFix(f, v) : nil)
                }
                said = b
            }
            var state: EntitlementState?
            if let f = list.state, let v = try value(f, in: item, id: id, list) {
                guard let s = (v as? String).map(f.translated).flatMap(EntitlementState.init(rawValue:)) else {
                    throw fail(
                        f.keyPath,
                        "\(AnswerMapping.show(v)) in entry \"\(id)\" is not a state (\(EntitlementState.allCases.map(\.rawValue).joined(separator: ", ")))",
                        fix: wordsFix(f, v))
                }
                state = s
                // Without an `active` of its own, the state the backend names says it (active and grace grant):
                // a state "expired" beside a null expiry ("never") is not read as active.
                if list.active == nil { said = s.isEntitled }
            }
            let expires = try end(item, id: id, list, missingIsNone: said == false)
            let active = said ?? expires.map { $0 > at } ?? true
            let finalState = state ?? (active ? .active : .expired)
            var ownership: InAppOwnershipType?
            if let f = list.ownership, let v = try value(f, in: item, id: id, list, missingIsNone: !active) {
                // A value in the backend's own words is a mapping to complete, not a wrong answer.
                guard let s = (v as? String).map(f.translated), InAppOwnershipType.known.map(\.rawValue).contains(s)
                else {
                    throw fail(
                        f.keyPath, "\(AnswerMapping.show(v)) in entry \"\(id)\" is not PURCHASED or FAMILY_SHARED",
                        fix: wordsFix(f, v))
                }
                ownership = InAppOwnershipType(rawValue: s)
            }
            if active && ownership == nil && list.ownership == nil { ownership = .purchased }
            return Entry(
                id: id, active: active, state: finalState, expires: active ? expires : nil, ownership: ownership)
        }

        /// The entry's end in the field's date format; nil for none (never), or for a field left out where
        /// `missingIsNone`.
        func end(_ item: Any, id: String, _ list: List, missingIsNone: Bool) throws(Mismatch) -> Millis? {
            guard let f = list.expiresDate, let v = try value(f, in: item, id: id, list, missingIsNone: missingIsNone)
            else { return nil }
            guard let t = AnswerMapping.date(v, format: f.format ?? .epochMs) else {
                // A number past any instant (beyond Int64 milliseconds) is what the backend wrote, not the file.
                let number =
                    (v as? NSNumber).flatMap { StrictJSON.isBool($0) ? nil : $0.doubleValue }
                    ?? (v as? String).flatMap(Double.init)
                if f.format != .iso8601, let n = number {
                    var m = fail(
                        f.keyPath,
                        "\(AnswerMapping.show(v)) in entry \"\(id)\" is no instant in \((f.format ?? .epochMs).rawValue): \(n.isFinite ? "past the year 300,000" : "not a finite number")"
                    )
                    m.isWrongAnswer = true
                    throw m
                }
                throw fail(
                    f.keyPath,
                    "\(AnswerMapping.show(v)) in entry \"\(id)\" is not a date in \((f.format ?? .epochMs).rawValue)",
                    fix:
                        "set \"format\" of \(f.keyPath) in \(mapping.file) to the backend's: iso8601, epoch-ms or epoch-s (\(AnswerMapping.show(v)) above)"
                )
            }
            return t
        }
    }
}
