import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPLoad
import IAPModel
import IAPTesting
import Testing

/// Every file iapcheck reads gets a clear error naming the file — never a crash — whatever is in it.
@Suite struct HostileInputTests {
    enum Reader: String, CaseIterable {
        case catalog, storekit, policy, profile, yamlProfile, corpus, target, baseline

        func read(_ path: String) throws {
            switch self {
            case .catalog: _ = try CatalogLoader.load(path: path)
            case .storekit: _ = try CatalogLoader.load(path: path)
            case .policy: _ = try Policy.load(path: path)
            case .profile, .yamlProfile: _ = try LoadProfile.load(path: path)
            case .corpus: _ = try Corpus.load(path: path)
            case .target: _ = try HTTPValidator.Target.load(path: path)
            case .baseline: _ = try LoadResults.loadBaseline(path: path)
            }
        }

        var ext: String { self == .storekit ? "storekit" : self == .yamlProfile ? "yaml" : "json" }

        /// A key each reader really reads, whose string value the "wrong types" variant turns into a number.
        var readKey: String {
            switch self {
            case .catalog: "bundleId"
            case .storekit: "productID"
            case .policy: "refundScope"
            case .profile, .yamlProfile: "name"
            case .corpus: "schema"
            case .target: "baseURL"
            case .baseline: "profile"
            }
        }
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A valid file of each kind, to derive hostile variants from.
    static func valid(_ r: Reader) throws -> Data {
        switch r {
        case .catalog: return try JSONEncoder().encode(Catalog.standard)
        case .storekit: return try Data(contentsOf: root.appendingPathComponent("Examples/Products.storekit"))
        case .policy: return Data(#"{"refundScope":"chain"}"#.utf8)
        case .profile: return try Data(contentsOf: root.appendingPathComponent("Profiles/smoke.json"))
        case .yamlProfile: return try Data(contentsOf: root.appendingPathComponent("Profiles/cache-hostile.yaml"))
        case .target:
            return try Data(contentsOf: root.appendingPathComponent("Examples/http/example-backend-direct.json"))
        case .baseline:
            let profile = try LoadProfile.load(path: root.appendingPathComponent("Profiles/smoke.json").path)
            return try JSONEncoder().encode(LoadResults(profile: profile, workers: [], seconds: 1).summary)
        case .corpus:
            let dir = root.appendingPathComponent("Corpus")
            let first = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
                .sorted()[0]
            return try Data(contentsOf: dir.appendingPathComponent(first))
        }
    }

    static func variants(of data: Data, key: String) -> [(String, Data)] {
        let text = String(decoding: data, as: UTF8.self)
        var typeSwapped = text
        if let r = typeSwapped.range(of: "\"\(key)\"\\s*:\\s*\"[^\"]*\"", options: .regularExpression) {
            typeSwapped.replaceSubrange(r, with: "\"\(key)\": 12345")
        } else if let r = typeSwapped.range(of: "(?m)^\(key): .*$", options: .regularExpression) {
            typeSwapped.replaceSubrange(r, with: "\(key): [1, 2]")  // YAML
        }
        return [
            ("empty", Data()),
            ("truncated", data.prefix(data.count / 2)),
            ("invalid UTF-8", Data([0xFF, 0xFE, 0x7B]) + data),
            ("wrong types", Data(typeSwapped.utf8)),
            ("deeply nested", Data((String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)).utf8)),
            ("huge string", Data(("{\"x\":\"" + String(repeating: "A", count: 2_000_000) + "\"}").utf8)),
            ("array at top", Data("[\(text)]".utf8)),
            ("null", Data("null".utf8)),
        ]
    }

    @Test(.long, arguments: Reader.allCases)
    func hostileFilesGiveAnErrorNamingTheFile(_ reader: Reader) throws {
        let good = try Self.valid(reader)
        let goodPath = Scratch.directory + "good-\(UUID().uuidString).\(reader.ext)"
        try good.write(to: URL(fileURLWithPath: goodPath))
        try reader.read(goodPath)  // the unmodified file is fine
        for (name, data) in Self.variants(of: good, key: reader.readKey) {
            let path = Scratch.directory + "hostile-\(UUID().uuidString).\(reader.ext)"
            try data.write(to: URL(fileURLWithPath: path))
            do {
                try reader.read(path)
                Issue.record("\(reader.rawValue): the \(name) variant was accepted")
            } catch let e as ConfigError {
                #expect(e.file == path, "\(reader.rawValue) \(name): error does not name the file")
                #expect(!e.problems.isEmpty)
            } catch {
                Issue.record("\(reader.rawValue) \(name): \(error) is not a ConfigError naming the file")
            }
        }
    }

    /// Found by fuzzing (Fuzz/crashes/readers/yaml-mapping-as-key): a YAML mapping used as a key trapped inside
    /// the YAML library. Every non-scalar key is a ConfigError naming it.
    @Test(arguments: ["{a: 1}: 2\n", "[x, y]: 3\n", "name: smoke\n? [k]\n: v\n", "a: &x 1\nb: *x\n"])
    func yamlKeysThatAreNotStringsAreErrors(_ text: String) throws {
        let path = Scratch.directory + "hostile-\(UUID().uuidString).yaml"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ConfigError.self) { try LoadProfile.load(path: path) }
    }
}
