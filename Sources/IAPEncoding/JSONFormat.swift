import Foundation

/// The JSON iapcheck writes, configured in one place. Keys are always sorted (the encoder's own order is not stable
/// between encodings of one value, and iapcheck's output must be the same bytes for the same seed) and slashes are
/// never escaped (a product id or a path reads as written).
public enum JSONFormat {
    /// One line: wire messages, signed payloads, digests.
    public static func compact() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    /// Indented: files people read (reports, corpus cases, load results).
    public static func pretty() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }

    /// Writes `value` as indented JSON to `path`, creating its directory; the file is replaced atomically, so a crash
    /// never leaves half of it.
    public static func write<T: Encodable>(_ value: T, to path: String) throws {
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        try pretty().encode(value).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
