import Foundation
import IAPEncoding
import IAPModel
import Yams

/// YAML profiles: parsed with Yams, turned into the JSON the strict profile decoder reads.
enum YAMLProfile {
    static func json(from data: Data, file: String) throws(ConfigError) -> Data {
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(file: file, key: "", "the file is not UTF-8")
        }
        // Flow collections nested hundreds deep are an attack, not a profile; refuse before the recursive parser sees them.
        var depth = 0, deepest = 0
        for c in text.utf8 {
            if c == UInt8(ascii: "[") || c == UInt8(ascii: "{") { depth += 1; deepest = max(deepest, depth) }
            if c == UInt8(ascii: "]") || c == UInt8(ascii: "}") { depth -= 1 }
        }
        if deepest > 64 { throw ConfigError(file: file, key: "", "nested \(deepest) levels deep") }
        // Composed into nodes and converted here, never through Yams' own constructor: it traps on a mapping whose
        // key is itself a mapping or a sequence (found by fuzzing).
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw ConfigError(file: file, key: "", "not valid YAML: \(error)")
        }
        guard let node else { throw ConfigError(file: file, key: "", "the file is empty") }
        var problems: [ConfigError.Problem] = []
        let plain = convert(node: node, path: "", problems: &problems)
        if !problems.isEmpty { throw ConfigError(file: file, problems: problems) }
        guard let object = plain as? [String: Any] else {
            throw ConfigError(file: file, key: "", "expected a mapping at the top")
        }
        do {
            return try JSONSerialization.data(withJSONObject: object)
        } catch {
            throw ConfigError(file: file, key: "", "cannot be read as a profile: \(error)")
        }
    }

    /// YAML nodes as JSON values: plain scalar keys only; aliases refused.
    static func convert(node: Node, path: String, problems: inout [ConfigError.Problem]) -> Any {
        func sub(_ k: String) -> String { path.isEmpty ? k : "\(path).\(k)" }
        switch node {
        case .scalar:
            return convert(node.any, path: path, problems: &problems)  // constructing a scalar is total
        case .mapping(let m):
            var out: [String: Any] = [:]
            for (k, v) in m {
                guard case .scalar(let key) = k else {
                    problems.append(
                        .init(key: sub("?"), message: "keys must be plain strings, not a mapping or a sequence"))
                    continue
                }
                out[key.string] = convert(node: v, path: sub(key.string), problems: &problems)
            }
            return out
        case .sequence(let items):
            return items.enumerated().map {
                convert(node: $0.element, path: "\(path)[\($0.offset)]", problems: &problems)
            }
        case .alias:
            problems.append(.init(key: path, message: "YAML aliases are not supported in profiles"))
            return NSNull()
        }
    }

    /// YAML values as JSON values: string keys only; dates and other tagged scalars become strings.
    static func convert(_ v: Any, path: String, problems: inout [ConfigError.Problem]) -> Any {
        func sub(_ k: String) -> String { path.isEmpty ? k : "\(path).\(k)" }
        switch v {
        case let d as [AnyHashable: Any]:
            var out: [String: Any] = [:]
            for (k, x) in d {
                guard let key = k.base as? String else {
                    problems.append(.init(key: sub("\(k)"), message: "keys must be strings"))
                    continue
                }
                out[key] = convert(x, path: sub(key), problems: &problems)
            }
            return out
        case let a as [Any]:
            return a.enumerated().map { convert($0.element, path: "\(path)[\($0.offset)]", problems: &problems) }
        case is NSNull: return NSNull()
        case let b as Bool: return b
        case let i as Int: return i
        case let d as Double: return d
        case let s as String: return s
        default: return "\(v)"
        }
    }
}
