import Foundation

extension StrictJSON {
    /// A key written twice in one object of a configuration file: Foundation's parser keeps one of the two values
    /// without a word, so a second `"routes"` or a pasted product silently replaced the first.
    struct DuplicateKey: Equatable {
        /// Key path of the repeated key, as ``Object/keyPath(_:)`` writes it.
        var path: String
        var firstOffset: Int
        var secondOffset: Int
    }

    /// Every key that appears twice in one object of `data` (which Foundation has parsed as JSON already), in
    /// file order. One pass over the bytes with an explicit stack, so nesting depth costs no recursion.
    static func duplicateKeys(_ data: Data) -> [DuplicateKey] {
        let bytes = [UInt8](data)
        var frames: [Frame] = []
        var found: [DuplicateKey] = []
        var i = 0
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"):
                frames.append(Frame(path: childPath(frames), object: true))
            case UInt8(ascii: "["):
                frames.append(Frame(path: childPath(frames), object: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = frames.popLast()
            case UInt8(ascii: ","):
                if let last = frames.indices.last {
                    frames[last].expectingKey = frames[last].object
                    frames[last].index += 1
                }
            case UInt8(ascii: "\""):
                let end = stringEnd(bytes, from: i)
                if let last = frames.indices.last, frames[last].object, frames[last].expectingKey {
                    let key = decodedKey(bytes[i...end])
                    let path = Object.keyPath(key, under: frames[last].path)
                    if let first = frames[last].keys[key] {
                        found.append(DuplicateKey(path: path, firstOffset: first, secondOffset: i))
                    } else {
                        frames[last].keys[key] = i
                    }
                    frames[last].currentKey = key
                    frames[last].expectingKey = false
                }
                i = end
            default: break
            }
            i += 1
        }
        return found
    }

    private struct Frame {
        var path: String
        var object: Bool
        var expectingKey = true
        var keys: [String: Int] = [:]
        var currentKey = ""
        var index = 0

        init(path: String, object: Bool) {
            self.path = path
            self.object = object
        }
    }

    /// The key path of a value that starts now, inside the innermost open object or array.
    private static func childPath(_ frames: [Frame]) -> String {
        guard let f = frames.last else { return "" }
        return f.object ? Object.keyPath(f.currentKey, under: f.path) : "\(f.path)[\(f.index)]"
    }

    /// Offset of the quote that closes the string opening at `start`.
    private static func stringEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var j = start + 1
        while j < bytes.count, bytes[j] != UInt8(ascii: "\"") {
            j += bytes[j] == UInt8(ascii: "\\") ? 2 : 1
        }
        return min(j, bytes.count - 1)
    }

    /// A key as JSON means it (escapes resolved), so `"a"` and `"\u0061"` are one key, as they are to the parser.
    private static func decodedKey(_ quoted: ArraySlice<UInt8>) -> String {
        if !quoted.contains(UInt8(ascii: "\\")) {
            return String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
        }
        let s = try? JSONSerialization.jsonObject(with: Data(quoted), options: [.fragmentsAllowed]) as? String
        return s ?? String(decoding: quoted, as: UTF8.self)
    }

    /// Records a problem for each key written twice in one object.
    func recordDuplicateKeys(_ data: Data) {
        for d in Self.duplicateKeys(data) {
            problem(
                d.path,
                "written twice in one object (\(Self.lineAndColumn(data, d.firstOffset)) and "
                    + "\(Self.lineAndColumn(data, d.secondOffset))): JSON keeps only one of them; remove or merge one")
        }
    }
}
