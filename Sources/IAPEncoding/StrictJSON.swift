import Foundation

/// A strict reader of JSON configuration files that collects every problem with its key path instead of stopping
/// at the first one (the k6 style of config validation). Generic Codable errors name neither the file nor, usefully,
/// the key; this does both.
public final class StrictJSON {
    public let file: String
    public private(set) var problems: [ConfigError.Problem] = []

    public init(file: String) { self.file = file }

    public func problem(_ key: String, _ message: String) {
        problems.append(ConfigError.Problem(key: key, message: message))
    }

    /// The keys of `data`'s top-level object, or nil when it is not a JSON object: a quick look that records no
    /// problem (which reader a file goes to).
    public static func topLevelKeys(_ data: Data) -> Set<String>? {
        guard let obj = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return Set(obj.keys)
    }

    /// The largest configuration file read (catalogs of thousands of products are a few megabytes).
    public static let maxFileBytes = 32 << 20

    /// Parses `data` as a JSON object; records a problem and returns nil when it is not one.
    public func parseObject(_ data: Data, maxBytes: Int = StrictJSON.maxFileBytes) -> Object? {
        guard data.count <= maxBytes else {
            problem("", "file is \(data.count) bytes, more than the \(maxBytes) allowed")
            return nil
        }
        if let bad = Self.firstInvalidUTF8(data) {
            problem(
                "",
                "not valid UTF-8: byte \(bad) (\(Self.lineAndColumn(data, bad))) is 0x\(String(data[data.startIndex + bad], radix: 16))"
            )
            return nil
        }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let trimmed = data.reversed().drop { [0x20, 0x0A, 0x0D, 0x09].contains($0) }
            let ending = trimmed.first.map { $0 == UInt8(ascii: "}") || $0 == UInt8(ascii: "]") } ?? false
            let hint =
                ending
                ? ""
                : "; the file ends at byte \(data.count) (\(Self.lineAndColumn(data, data.count))) inside an unfinished value: truncated?"
            problem("", "not valid JSON (\(Self.reason(error))\(Self.whereAround(error, in: data)))\(hint)")
            return nil
        }
        guard let dict = value as? [String: Any] else {
            problem("", "expected a JSON object at the top level")
            return nil
        }
        recordDuplicateKeys(data)
        return Object(dict, path: "", reader: self)
    }

    /// Offset of the first byte that is not part of valid UTF-8, or nil.
    static func firstInvalidUTF8(_ data: Data) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let encoded): offset += encoded.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// "line L, column C" of a byte offset (both from 1).
    static func lineAndColumn(_ data: Data, _ offset: Int) -> String {
        var line = 1, column = 1
        for b in data.prefix(offset) {
            if b == 0x0A { line += 1; column = 1 } else { column += 1 }
        }
        return "line \(line), column \(column)"
    }

    /// Foundation's parser says where it stopped as "around character N" (a count of UTF-16 units, which is the
    /// byte offset in the ASCII of JSON's syntax): the line and column of it, or "" when it does not say.
    static func whereAround(_ error: any Error, in data: Data) -> String {
        let text = reason(error)
        guard let r = text.range(of: "around character ") else { return "" }
        let digits = text[r.upperBound...].prefix { $0.isASCII && $0.isNumber }
        guard let n = Int(digits), n <= data.count else { return "" }
        return ", at \(lineAndColumn(data, n))"
    }

    public static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        return (ns.userInfo["NSDebugDescription"] as? String) ?? ns.localizedDescription
    }

    /// `data` (the contents of `file`) decoded as `T`, or a ``ConfigError`` naming the file and the key; `what` says
    /// what the file should have been (`a summary.json of iapcheck load`).
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, file: String, what: String)
        throws(ConfigError) -> T
    {
        func key(_ path: [any CodingKey]) -> String { path.map(\.stringValue).joined(separator: ".") }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let DecodingError.keyNotFound(k, context) {
            throw ConfigError(
                file: file, key: key(context.codingPath + [k]), "required key is missing (is this \(what)?)")
        } catch let DecodingError.typeMismatch(_, context) {
            throw ConfigError(file: file, key: key(context.codingPath), "wrong type: \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw ConfigError(file: file, key: key(context.codingPath), "null where a value is needed")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw ConfigError(file: file, key: key(context.codingPath), "not \(what): \(context.debugDescription)")
        } catch {
            throw ConfigError(file: file, key: "", "not \(what): \(reason(error))")
        }
    }

    /// No limit: for files iapcheck wrote itself (a recording of 100,000 cases, a day-long load run's seconds),
    /// which may be as large as the runs that wrote them.
    public static let ownOutput = Int.max

    /// Reads a configuration file of at most `maxBytes`; a missing or unreadable file is a ``ConfigError`` naming it.
    public static func readFile(_ path: String, maxBytes: Int = maxFileBytes) throws(ConfigError) -> Data {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ConfigError(file: path, key: "", "is a directory, not a file")
        }
        if !FileManager.default.fileExists(atPath: path) {
            var link = stat()
            if lstat(path, &link) == 0 {
                throw ConfigError(
                    file: path, key: "", "is a symbolic link that leads nowhere readable (a loop or a missing target)")
            }
            throw ConfigError(file: path, key: "", "no such file")
        }
        // A pipe or a device would be read forever or as nothing: only a regular file is a configuration file.
        var st = stat()
        if stat(path, &st) == 0, st.st_mode & S_IFMT != S_IFREG {
            throw ConfigError(file: path, key: "", "is not a regular file (a pipe, a device or a socket)")
        }
        // Refused before reading: a multi-gigabyte (or sparse) file would be read whole into memory first.
        if st.st_size > maxBytes {
            throw ConfigError(
                file: path, key: "", "file is \(st.st_size) bytes, more than the \(maxBytes) allowed (refused unread)")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(file: path, key: "", "cannot read the file (\(reason(error)))")
        }
        // Said plainly, rather than as a JSON value cut short at its first byte.
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            throw ConfigError(
                file: path, key: "", "the file is empty (\(data.count) bytes): it should hold a JSON object")
        }
        return data
    }

    /// Parses `data` as the top-level object of the file; throws at once when it is not one.
    public func root(_ data: Data) throws(ConfigError) -> Object {
        guard let o = parseObject(data) else { throw ConfigError(file: file, problems: problems) }
        return o
    }

    public func finish() throws(ConfigError) {
        if !problems.isEmpty { throw ConfigError(file: file, problems: problems) }
    }

    /// A JSON object under a key path. Every accessor records a problem (and returns nil) on a missing required
    /// key or a wrong type; ``rejectUnknownKeys()`` reports keys nobody asked for.
    public struct Object {
        public let dict: [String: Any]
        public let path: String
        public let reader: StrictJSON
        private let seen: Box = Box()
        final class Box { var keys: Set<String> = [] }

        init(_ dict: [String: Any], path: String, reader: StrictJSON) {
            self.dict = dict
            self.path = path
            self.reader = reader
        }

        /// `products[0].type`; a key that is not a plain name (a product id with dots, as `nonRenewing`'s keys are)
        /// in brackets and quotes, so the path reads one way: `nonRenewing["com.acme.pass.year"]`.
        public func keyPath(_ key: String) -> String { Self.keyPath(key, under: path) }

        static func keyPath(_ key: String, under path: String) -> String {
            let plain = !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            if !plain { return "\(path)[\(key.debugDescription)]" }
            return path.isEmpty ? key : "\(path).\(key)"
        }

        /// Records a problem at `key` (a full key path) in the file being read.
        public func problem(_ key: String, _ message: String) { reader.problem(key, message) }

        func raw(_ key: String, required: Bool) -> Any? {
            seen.keys.insert(key)
            guard let v = dict[key], !(v is NSNull) else {
                if required { reader.problem(keyPath(key), "required key is missing") }
                return nil
            }
            return v
        }

        /// The value at `key` as JSONSerialization read it (nil when absent or null), marked as read: for a key whose
        /// value may take several shapes.
        public func value(_ key: String) -> Any? { raw(key, required: false) }

        public func has(_ key: String) -> Bool { dict[key] != nil && !(dict[key] is NSNull) }

        public func string(_ key: String, required: Bool = true) -> String? {
            guard let v = raw(key, required: required) else { return nil }
            guard let s = v as? String else {
                reader.problem(keyPath(key), "expected a string, found \(StrictJSON.typeName(v))")
                return nil
            }
            return s
        }

        public func int(_ key: String, required: Bool = true, range: ClosedRange<Int64>? = nil) -> Int64? {
            guard let v = raw(key, required: required) else { return nil }
            guard let n = v as? NSNumber, !StrictJSON.isBool(n), n.doubleValue.rounded() == n.doubleValue,
                abs(n.doubleValue) < 9e15
            else {
                reader.problem(keyPath(key), "expected an integer, found \(StrictJSON.typeName(v))")
                return nil
            }
            let i = Int64(n.doubleValue)
            if let range, !range.contains(i) {
                reader.problem(keyPath(key), "\(i) is out of range \(range.lowerBound)...\(range.upperBound)")
                return nil
            }
            return i
        }

        public func bool(_ key: String, required: Bool = true) -> Bool? {
            guard let v = raw(key, required: required) else { return nil }
            guard let n = v as? NSNumber, StrictJSON.isBool(n) else {
                reader.problem(keyPath(key), "expected true or false, found \(StrictJSON.typeName(v))")
                return nil
            }
            return n.boolValue
        }

        public func object(_ key: String, required: Bool = true) -> Object? {
            guard let v = raw(key, required: required) else { return nil }
            guard let d = v as? [String: Any] else {
                reader.problem(keyPath(key), "expected an object, found \(StrictJSON.typeName(v))")
                return nil
            }
            return Object(d, path: keyPath(key), reader: reader)
        }

        public func objects(_ key: String, required: Bool = true) -> [Object]? {
            guard let v = raw(key, required: required) else { return nil }
            guard let a = v as? [Any] else {
                reader.problem(keyPath(key), "expected an array, found \(StrictJSON.typeName(v))")
                return nil
            }
            var out: [Object] = []
            for (i, e) in a.enumerated() {
                guard let d = e as? [String: Any] else {
                    reader.problem("\(keyPath(key))[\(i)]", "expected an object, found \(StrictJSON.typeName(e))")
                    continue
                }
                out.append(Object(d, path: "\(keyPath(key))[\(i)]", reader: reader))
            }
            return out
        }

        public func strings(_ key: String, required: Bool = true) -> [String]? {
            guard let v = raw(key, required: required) else { return nil }
            guard let a = v as? [Any] else {
                reader.problem(keyPath(key), "expected an array of strings, found \(StrictJSON.typeName(v))")
                return nil
            }
            var out: [String] = []
            for (i, e) in a.enumerated() {
                guard let s = e as? String else {
                    reader.problem("\(keyPath(key))[\(i)]", "expected a string, found \(StrictJSON.typeName(e))")
                    continue
                }
                out.append(s)
            }
            return out
        }

        /// A string that must be one of `allowed`.
        public func choice(_ key: String, _ allowed: [String], required: Bool = true) -> String? {
            guard let s = string(key, required: required) else { return nil }
            guard allowed.contains(s) else {
                reader.problem(keyPath(key), "\"\(s)\" is not one of \(allowed.joined(separator: ", "))")
                return nil
            }
            return s
        }

        public func rejectUnknownKeys() { rejectUnknownKeysExcept([]) }

        /// Like ``rejectUnknownKeys()``, for an object some of whose keys were read from ``dict`` directly.
        public func rejectUnknownKeysExcept(_ handled: Set<String>) {
            for k in dict.keys.sorted() where !seen.keys.contains(k) && !handled.contains(k) {
                reader.problem(keyPath(k), "unknown key")
            }
        }
    }

    public static func isBool(_ n: NSNumber) -> Bool {
        #if canImport(Darwin)
            return CFGetTypeID(n) == CFBooleanGetTypeID()
        #else
            return n === (true as NSNumber) || n === (false as NSNumber) || String(cString: n.objCType) == "c"
        #endif
    }

    static func typeName(_ v: Any) -> String {
        switch v {
        case let n as NSNumber: isBool(n) ? "a boolean" : "a number"
        case is String: "a string"
        case is [Any]: "an array"
        case is [String: Any]: "an object"
        default: "null"
        }
    }
}
