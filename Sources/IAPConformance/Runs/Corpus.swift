import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

/// A saved, shrunk counterexample: concrete history and deliveries, the property, what was expected and
/// observed, and (as metadata only) the seed and version that found it. Schema-versioned JSON under `Corpus/`.
public struct CorpusCase: Codable, Sendable {
    public static let schema = "iapcheck.corpus/1"
    public var schema: String
    public var iapcheckVersion: String
    /// The validator the failure was found on (`mutant:no-grace`, `reference`, `exec:…`).
    public var foundWith: String
    public var seed: UInt64?
    public var caseIndex: Int?
    public var createdFor: String?
    public var failure: Discrepancy?
    public var testCase: GeneratedCase

    enum CodingKeys: String, CodingKey {
        case schema, iapcheckVersion, foundWith, seed, caseIndex, createdFor, failure
        case testCase = "case"
    }

    public init(foundWith: String, seed: UInt64?, caseIndex: Int?, failure: Discrepancy?, testCase: GeneratedCase) {
        self.schema = Self.schema
        self.iapcheckVersion = IAPCheckVersion.current
        self.foundWith = foundWith
        self.seed = seed
        self.caseIndex = caseIndex
        self.failure = failure
        self.testCase = testCase
    }

    /// A stable file name: the validator, the property and a hash of the case's content.
    public var fileName: String {
        let who = foundWith.replacingOccurrences(of: "mutant:", with: "").map {
            $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_"
        }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var named = testCase
        named.lost = nil  // for reading only: a case saved before it existed keeps its name
        named.historySizes = nil
        for b in (try? Corpus.encoder.encode(named)) ?? Data() {
            h = (h ^ UInt64(b)) &* 0x100_0000_01b3
        }
        return "\(String(who))-\(testCase.property.rawValue)-\(String(h, radix: 16).prefix(8)).json"
    }
}

public enum Corpus {
    static let encoder = JSONFormat.pretty()

    /// Loads one corpus file; a malformed file is a ``ConfigError`` naming the file.
    public static func load(path: String) throws(ConfigError) -> CorpusCase {
        let data = try StrictJSON.readFile(path)
        let r = StrictJSON(file: path)
        let root = try r.root(data)
        if let s = root.string("schema"), s != CorpusCase.schema {
            r.problem("schema", "\"\(s)\" is not \(CorpusCase.schema); this iapcheck cannot replay it")
        }
        try r.finish()
        do {
            return try JSONDecoder().decode(CorpusCase.self, from: data)
        } catch let e as DecodingError {
            throw ConfigError(file: path, key: codingPath(e), describe(e))
        } catch {
            throw ConfigError(file: path, key: "", "\(error)")
        }
    }

    static func codingPath(_ e: DecodingError) -> String {
        let ctx: DecodingError.Context
        switch e {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c): ctx = c
        case .keyNotFound(let k, let c):
            return (c.codingPath + [k]).map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
                .trimmingCharacters(in: CharacterSet(charactersIn: "."))
        @unknown default: return ""
        }
        return ctx.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingCharacters(
            in: CharacterSet(charactersIn: "."))
    }

    static func describe(_ e: DecodingError) -> String {
        switch e {
        case .typeMismatch(let t, _): "wrong type (expected \(t))"
        case .valueNotFound(let t, _): "missing value (expected \(t))"
        case .keyNotFound: "required key is missing"
        case .dataCorrupted(let c): c.debugDescription
        @unknown default: "\(e)"
        }
    }

    /// Writes a case atomically (temporary file, then rename), so a kill never leaves half a file.
    @discardableResult
    public static func save(_ c: CorpusCase, in directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(c.fileName)
        try encoder.encode(c).write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    /// Where the counterexamples of a validator go when no `--corpus` says: iapcheck's own validators' into `base`
    /// itself (the regression corpus), a user's program or backend into a folder of its own under `base`, named for
    /// it (`Corpus/http-my-backend/`, `Corpus/exec-python3-validator.py/`), which iapcheck's own suite never replays.
    public static func directory(forValidator spec: ValidatorSpec, base: String = "Corpus") -> String {
        switch spec {
        case .http(let file):
            folder("http-" + ((file as NSString).lastPathComponent as NSString).deletingPathExtension, base: base)
        case .exec(let command): folder("exec-" + command, base: base)
        case .reference, .mutant, .variant: base
        }
    }

    /// Where a backend's counterexamples go: named for the backend, not for the file that describes it, so a renamed
    /// or copied target file keeps replaying them — its `"name"` when the target gives one, else the app's bundle id
    /// and the backend's address (`Corpus/http-com.acme.notes-127.0.0.1-8700/`).
    public static func directory(
        forBackend name: String?, bundleId: String, host: String, port: Int, base: String = "Corpus"
    )
        -> String
    {
        folder("http-" + (name ?? "\(bundleId)-\(host)-\(port)"), base: base)
    }

    /// Other folders under `base` holding saved counterexamples of `bundleId`'s app found with one of `foundWith`
    /// (the backend's name and its address), with how many each holds: a run that starts a new folder says so, since
    /// they are the same backend's under an older folder name. Another backend's (another name or address) are not.
    public static func otherFolders(
        ofApp bundleId: String, foundWith: Set<String>, besides directory: String, base: String = "Corpus"
    ) -> [(folder: String, cases: Int)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return names.sorted().compactMap { name in
            let dir = (base as NSString).appendingPathComponent(name)
            guard dir != directory, name.hasPrefix("http-") || name.hasPrefix("exec-") else { return nil }
            let n = files(in: dir).filter {
                guard let c = try? load(path: $0) else { return false }
                return c.testCase.config.catalog.bundleId == bundleId && foundWith.contains(c.foundWith)
            }.count
            return n > 0 ? (dir, n) : nil
        }
    }

    /// `key` as a folder name under `base`: letters, digits, `.`, `_` and `-`, at most 80.
    static func folder(_ key: String, base: String) -> String {
        var cleaned = ""
        for ch in key.unicodeScalars {
            let keep = CharacterSet.alphanumerics.contains(ch) && ch.isASCII || "._-".unicodeScalars.contains(ch)
            let next: Unicode.Scalar = keep ? ch : "-"
            if !(next == "-" && cleaned.hasSuffix("-")) { cleaned.unicodeScalars.append(next) }
        }
        let name = String(cleaned.prefix(80)).trimmingCharacters(in: CharacterSet(charactersIn: "-."))
        return (base as NSString).appendingPathComponent(name.isEmpty ? "validator" : name)
    }

    /// Which saved counterexamples a run replays: those of its app, that its validator can be given
    /// (docs/corpus.md). A case saved for another app would fail a correct backend that knows only its own.
    public struct Selection: Sendable {
        /// The run's catalog (the base of the draws when ``drawsCatalogs``).
        public var catalog: Catalog
        public var drawsCatalogs: Bool
        public var policy: Policy
        public var profile: ValidatorProfile
        public var isolation: CaseIsolation
        /// Properties declared as known divergences: their cases are not replayed.
        public var declared: Set<PropertyName> = []

        public init(
            catalog: Catalog, drawsCatalogs: Bool, policy: Policy, profile: ValidatorProfile, isolation: CaseIsolation
        ) {
            self.catalog = catalog
            self.drawsCatalogs = drawsCatalogs
            self.policy = policy
            self.profile = profile
            self.isolation = isolation
        }

        public enum Skip: String, Sendable, Codable {
            /// Another bundle id, environment or App Store id; with a fixed catalog, another catalog; for a
            /// validator that keeps its own configuration (no reset), another policy.
            case anotherApp = "another app"
            /// The case delivers over a channel the validator does not take.
            case anotherProfile = "another profile"
            /// The case checks a property declared as a known divergence (`--known-divergences`).
            case declared = "declared divergence"
        }

        /// Why `c` is not replayed in this run, or nil when it is.
        public func skip(_ c: GeneratedCase) -> Skip? {
            if declared.contains(c.property) { return .declared }
            let theirs = c.config.catalog
            if theirs.bundleId != catalog.bundleId || theirs.environment != catalog.environment
                || theirs.appAppleId != catalog.appAppleId
            {
                return .anotherApp
            }
            if !drawsCatalogs && !Self.sameProducts(theirs, catalog) { return .anotherApp }
            if isolation == .namespace && (drawsCatalogs || c.config.policy != policy) { return .anotherApp }
            for case .deliver(let d) in c.steps where !profile.accepts(d.delivery.channel) { return .anotherProfile }
            return nil
        }

        /// The same products and groups (entitlements aside: a case adds them for a validator that answers in
        /// entitlements; the grace setting aside: every case draws the store's, and no validator reads it).
        static func sameProducts(_ a: Catalog, _ b: Catalog) -> Bool {
            a.products == b.products && a.groups == b.groups
        }
    }

    /// The `.json` files of a directory, sorted; an empty list if it does not exist.
    public static func files(in directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasSuffix(".json") }.sorted().map {
            (directory as NSString).appendingPathComponent($0)
        }
    }
}
