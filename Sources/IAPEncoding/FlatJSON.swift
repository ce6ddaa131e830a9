import CByteLoops

/// A reader for the common shape of a JWS payload: one JSON object of ASCII strings without escapes, integers,
/// booleans and nulls (nested values are skipped). It exists for speed on the verification hot path
/// (`docs/performance-notes.md`): `JSONDecoder` costs about 10 µs per transaction, a quarter of a P-256
/// verification.
///
/// It never decides anything `JSONDecoder` would decide otherwise: whatever is outside that shape (an escape, a
/// byte outside ASCII or below 0x20 in a string, a fraction or exponent, a repeated key, nesting deeper than 16,
/// anything malformed) makes ``fields(_:)`` return nil, and the caller decodes with `JSONDecoder`, which gives the
/// value or the error it always gave.
/// A payload with hand-written JSON both ways for the hot paths: ``FlatJSON``'s reader, and `JSONFormat.compact()`'s
/// bytes written without JSONEncoder. Either may decline (nil), and then Foundation's coders do the work.
public protocol FlatJSONCodable: Codable {
    init?(flatJSON bytes: UnsafeBufferPointer<UInt8>)
    var compactJSON: [UInt8]? { get }
}

public enum FlatJSON {
    public enum Value: Equatable, Sendable {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case null
        /// A value that is not read (a fraction, an array): skipped after checking its grammar.
        case other
        /// A nested object, skipped after checking its grammar: its bytes (braces included), for ``fields(_:)``.
        case object(Range<Int>)
    }

    /// The top-level members of `bytes`, in order, or nil when the text is outside the simple shape.
    public static func fields(_ bytes: UnsafeBufferPointer<UInt8>) -> [(key: String, value: Value)]? {
        var out: [(key: String, value: Value)] = []
        out.reserveCapacity(32)
        let read = members(bytes, keys: Keys.none) { key, _, value in
            out.append((String(decoding: UnsafeBufferPointer(rebasing: bytes[key]), as: UTF8.self), value))
            return true
        }
        return read ? out : nil
    }

    /// Whether JSONEncoder would escape something in `utf8`: a quote, a backslash or a control byte.
    package static func needsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        // Whole blocks with SIMD where there is some (32 or 16 bytes, stopping at the first byte that needs a look),
        // then byte by byte.
        var i = utf8.count >= 16 ? iapcheck_json_plain_prefix(base, utf8.count, 1) : 0
        while i < utf8.count {
            let b = base[i]
            if b < 0x20 || b == 0x22 || b == 0x5C { return true }
            i += 1
        }
        return false
    }

    /// What a payload type's field holds: a string, an integer or a boolean.
    package enum Kind { case text, number, flag }

    /// A known field of a payload type: its bit in the set of fields seen, its kind, and whether it is required.
    package struct Field {
        var bit: Int
        var kind: Kind
        var required: Bool
    }

    /// A payload type's field names, found by their bytes: no String is made and nothing goes through SipHash (a
    /// payload has some twenty keys and the hot path reads thousands of payloads a second). A 256-slot open-addressing
    /// table keyed by the length and three bytes; every hit is confirmed byte for byte.
    package struct Keys {
        let names: [[UInt8]]
        private var slots = [Int16](repeating: -1, count: 256)

        package init(_ names: [String]) {
            precondition(names.count <= 200, "a key table holds at most 200 names")
            self.names = names.map { Array($0.utf8) }
            for (i, name) in self.names.enumerated() {
                var h = name.withUnsafeBufferPointer(Self.hash)
                while slots[h] >= 0 { h = (h + 1) & 255 }
                slots[h] = Int16(i)
            }
        }

        /// No names: every key is unknown.
        package static let none = Keys([])

        static func hash(_ key: UnsafeBufferPointer<UInt8>) -> Int {
            let n = key.count
            guard n > 0 else { return 0 }
            return (n &* 31 &+ Int(key[0]) &* 7 &+ Int(key[n / 2]) &* 17 &+ Int(key[n - 1]) &* 131) & 255
        }

        /// The position of `key` among the names, or nil.
        package func index(of key: UnsafeBufferPointer<UInt8>) -> Int? {
            var h = Self.hash(key)
            while true {
                let i = Int(slots[h])
                if i < 0 { return nil }
                if names[i].count == key.count, names[i].withUnsafeBufferPointer({ $0.elementsEqual(key) }) {
                    return i
                }
                h = (h + 1) & 255
            }
        }
    }

    /// A payload type's fields, in the order given (their bits and their indices), the required ones named.
    package struct Table {
        let keys: Keys
        let fields: [Field]
        /// The bits of the required fields.
        let required: UInt64

        package init(_ list: [(String, Kind)], required: Set<String>) {
            keys = Keys(list.map(\.0))
            fields = list.enumerated().map { i, f in Field(bit: i, kind: f.1, required: required.contains(f.0)) }
            self.required = fields.filter(\.required).reduce(0) { $0 | (1 << UInt64($1.bit)) }
        }
    }

    /// Walks the top-level members of `bytes`, handing each to `visit` with its key's bytes and the index of its key
    /// in `keys` (nil for a key not there) until `visit` answers false. False when the text is
    /// outside the simple shape or `visit` refused a member.
    package static func members(
        _ bytes: UnsafeBufferPointer<UInt8>, keys: Keys, _ visit: (Range<Int>, Int?, Value) -> Bool
    ) -> Bool {
        var r = Reader(bytes: bytes)
        r.space()
        guard r.take(0x7B) else { return false }  // {
        r.space()
        if r.take(0x7D) {
            r.space()
            return r.atEnd
        }
        while true {
            r.space()
            guard let key = r.stringRange() else { return false }
            r.space()
            guard r.take(0x3A) else { return false }  // :
            r.space()
            guard let value = r.value(depth: 0) else { return false }
            let index = keys.index(of: UnsafeBufferPointer(rebasing: bytes[key]))
            guard visit(key, index, value) else { return false }
            r.space()
            if r.take(0x2C) { continue }  // ,
            guard r.take(0x7D) else { return false }  // }
            r.space()
            return r.atEnd
        }
    }

    /// Reads a payload of a table's type: each known field's value, read as its kind, goes to `assign` with the
    /// field's index (unknown keys are skipped). False when JSONDecoder must decide: the text is outside the shape,
    /// a value is not of its field's kind, a field repeats, a required one is missing, or `assign` refused.
    package static func read(
        _ bytes: UnsafeBufferPointer<UInt8>, _ table: Table,
        _ assign: (_ index: Int, _ text: String?, _ number: Int64?, _ flag: Bool?) -> Bool
    ) -> Bool {
        var seen: UInt64 = 0
        let walked = members(bytes, keys: table.keys) { _, index, value in
            guard let index else { return true }  // a field Apple added since: ignored
            guard let (text, number, flag) = read(value, as: table.fields[index], seen: &seen) else { return false }
            return assign(index, text, number, flag)
        }
        // Every required field present (JSONDecoder names the missing one).
        return walked && seen & table.required == table.required
    }

    /// One field's value read as its kind (all nil for a null), or nil when JSONDecoder must decide: a value of
    /// another kind, a null where the field is required, or the field seen before (`seen` records it).
    static func read(_ value: Value, as f: Field, seen: inout UInt64) -> (text: String?, number: Int64?, flag: Bool?)? {
        guard seen & (1 << f.bit) == 0 else { return nil }  // a repeated key: JSONDecoder's choice is its own
        seen |= 1 << f.bit
        switch (value, f.kind) {
        case (.string(let s), .text): return (s, nil, nil)
        case (.int(let n), .number): return (nil, n, nil)
        case (.bool(let b), .flag): return (nil, nil, b)
        case (.null, _) where !f.required: return (nil, nil, nil)
        default: return nil
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        var atEnd: Bool { i == bytes.count }

        mutating func space() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
                i += 1
            }
        }

        mutating func take(_ b: UInt8) -> Bool {
            guard i < bytes.count, bytes[i] == b else { return false }
            i += 1
            return true
        }

        /// A string of printable ASCII without escapes.
        mutating func string() -> String? {
            guard let r = stringRange() else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[r]), as: UTF8.self)
        }

        /// The bytes of a string of printable ASCII without escapes (between its quotes).
        mutating func stringRange() -> Range<Int>? {
            guard take(0x22), let base = bytes.baseAddress else { return nil }
            let start = i, count = bytes.count
            // Whole blocks with SIMD (32 or 16 bytes) while none of their bytes is a quote, a backslash or outside
            // printable ASCII (nested tokens make strings of kilobytes); the byte loop below looks at the one that
            // stopped it.
            var j = count - i >= 16 ? i + iapcheck_json_plain_prefix(base + i, count - i, 0) : i
            while j < count {
                let b = base[j]
                if b == 0x22 {
                    i = j + 1
                    return start..<j
                }
                guard b >= 0x20 && b < 0x7F && b != 0x5C else { return nil }
                j += 1
            }
            return nil
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { return false }
            for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return false }
            i += n
            return true
        }

        mutating func value(depth: Int) -> Value? {
            guard i < bytes.count, depth < 16 else { return nil }
            switch bytes[i] {
            case 0x22: return string().map(Value.string)
            case 0x74: return literal("true") ? .bool(true) : nil
            case 0x66: return literal("false") ? .bool(false) : nil
            case 0x6E: return literal("null") ? .null : nil
            case 0x2D, 0x30...0x39: return number()
            case 0x5B: return skip(depth: depth) ? .other : nil
            case 0x7B:
                let start = i
                return skip(depth: depth) ? .object(start..<i) : nil
            default: return nil
            }
        }

        /// Steps over the value here after checking its grammar, building nothing: what lies inside an array or a
        /// nested object is not read (a notification's `data` holds kilobytes of nested tokens, which are read when
        /// `data` itself is).
        mutating func skip(depth: Int) -> Bool {
            guard i < bytes.count, depth < 16 else { return false }
            switch bytes[i] {
            case 0x22: return stringRange() != nil
            case 0x74: return literal("true")
            case 0x66: return literal("false")
            case 0x6E: return literal("null")
            case 0x2D, 0x30...0x39: return number() != nil
            case 0x5B:  // [
                i += 1
                space()
                if take(0x5D) { return true }
                while true {
                    space()
                    guard skip(depth: depth + 1) else { return false }
                    space()
                    if take(0x2C) { continue }
                    return take(0x5D)
                }
            case 0x7B:  // {
                i += 1
                space()
                if take(0x7D) { return true }
                while true {
                    space()
                    guard stringRange() != nil else { return false }
                    space()
                    guard take(0x3A) else { return false }
                    space()
                    guard skip(depth: depth + 1) else { return false }
                    space()
                    if take(0x2C) { continue }
                    return take(0x7D)
                }
            default: return false
            }
        }

        /// JSON's number grammar; an integer that fits 64 bits is `.int`, any other number `.other`.
        mutating func number() -> Value? {
            let start = i
            _ = take(0x2D)
            guard i < bytes.count else { return nil }
            if bytes[i] == 0x30 {
                i += 1
            } else if bytes[i] >= 0x31 && bytes[i] <= 0x39 {
                while i < bytes.count, bytes[i] >= 0x30 && bytes[i] <= 0x39 { i += 1 }
            } else {
                return nil
            }
            var integral = true
            if take(0x2E) {
                integral = false
                let d = i
                while i < bytes.count, bytes[i] >= 0x30 && bytes[i] <= 0x39 { i += 1 }
                guard i > d else { return nil }
            }
            if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
                integral = false
                i += 1
                if i < bytes.count, bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
                let d = i
                while i < bytes.count, bytes[i] >= 0x30 && bytes[i] <= 0x39 { i += 1 }
                guard i > d else { return nil }
            }
            guard integral else { return .other }
            var v: Int64 = 0
            let negative = bytes[start] == 0x2D
            for k in (negative ? start + 1 : start)..<i {
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let digit = Int64(bytes[k] - 0x30)
                let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
                guard !o1 && !o2 else { return .other }
                v = s
            }
            return .int(v)
        }
    }
}
