import Foundation
import Testing

/// The rules of docs/architecture.md that the compiler does not enforce: which modules may import which, and how
/// long a source file may grow.
@Suite struct ModuleRulesTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// The modules each Swift file of `module` imports, by file name.
    static func imports(of module: String) throws -> [String: Set<String>] {
        let dir = sources.appendingPathComponent(module)
        var out: [String: Set<String>] = [:]
        let names = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
        for name in names where name.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            out[name] = Set(
                text.split(separator: "\n").compactMap { line -> String? in
                    let words = line.split(separator: " ")
                    guard let i = words.firstIndex(of: "import"), i + 1 < words.count,
                        words[..<i].allSatisfy({ $0.hasPrefix("@") })
                    else { return nil }
                    return String(words[i + 1])
                })
        }
        #expect(!out.isEmpty, "no Swift files in Sources/\(module)")
        return out
    }

    static let transports: Set<String> = [
        "IAPVerification", "IAPReference", "IAPMutants", "IAPSubprocess", "IAPHTTP", "IAPProcess", "IAPStore",
    ]

    @Test(arguments: ["IAPConformance", "IAPLoad"])
    func runnersImportNoTransport(_ module: String) throws {
        for (file, modules) in try Self.imports(of: module) {
            let wrong = modules.intersection(Self.transports)
            #expect(
                wrong.isEmpty,
                "Sources/\(module)/\(file) imports \(wrong.sorted()): runners see validators through IAPValidatorAPI only"
            )
        }
    }

    /// IAPConformance is arranged in rooms, one folder per concern (docs/architecture.md#iapconformance-by-room):
    /// no file loose at the top, no room over a dozen files or so, and only the rooms the architecture names.
    @Test func theConformanceRunnerIsArrangedInRooms() throws {
        let dir = Self.sources.appendingPathComponent("IAPConformance")
        let rooms: Set<String> = ["Engine", "Runs", "Shards", "Certification", "Reports", "Differential"]
        for entry in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            #expect(rooms.contains(entry), "Sources/IAPConformance/\(entry) is outside the rooms \(rooms.sorted())")
        }
        for room in rooms {
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(room).path)
                .filter { $0.hasSuffix(".swift") }
            #expect(!files.isEmpty && files.count <= 13, "Sources/IAPConformance/\(room) holds \(files.count) files")
        }
    }

    @Test func theOracleImportsOnlyTheModelAndTheLock() throws {
        for (file, modules) in try Self.imports(of: "IAPOracle") {
            let wrong = modules.filter { $0.hasPrefix("IAP") && $0 != "IAPModel" && $0 != "IAPSupport" }
            #expect(wrong.isEmpty, "Sources/IAPOracle/\(file) imports \(wrong.sorted())")
        }
    }

    /// The byte and JSON layer and the support module sit under everything: they know nothing of the App Store.
    @Test(arguments: ["IAPEncoding", "IAPSupport"])
    func theLowestModulesImportNoOtherModule(_ module: String) throws {
        for (file, modules) in try Self.imports(of: module) {
            let wrong = modules.filter { $0.hasPrefix("IAP") }
            #expect(wrong.isEmpty, "Sources/\(module)/\(file) imports \(wrong.sorted())")
        }
    }

    /// The model holds Apple's types, the catalog, policies and answers: readers of bytes and JSON, base64, locks,
    /// shell quoting and markup have rooms of their own (IAPEncoding, IAPSupport).
    @Test func theModelHoldsNoEncodingOrSupportCode() throws {
        let dir = Self.sources.appendingPathComponent("IAPModel")
        let moved =
            #/^(public |package )?(final )?(struct|enum|class|protocol) (FlatJSON|StrictJSON|JSONFormat|Base64URL|ByteHash|ConfigError|Locked|Shell|Markup|CryptoCounters)\b/#
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") {
                #expect(line.firstMatch(of: moved) == nil, "Sources/IAPModel/\(name): \(line)")
                #expect(!line.hasPrefix("import Synchronization"), "Sources/IAPModel/\(name) takes locks")
                #expect(!line.contains("JSONSerialization"), "Sources/IAPModel/\(name) reads JSON itself: \(line)")
            }
        }
    }

    @Test func thePropertyEngineKnowsNothingOfTheAppStore() throws {
        for (file, modules) in try Self.imports(of: "PropertyEngine") {
            let wrong = modules.filter { $0.hasPrefix("IAP") }
            #expect(wrong.isEmpty, "Sources/PropertyEngine/\(file) imports \(wrong.sorted())")
        }
    }

    @Test func theValidatorAPIHasNoCryptoAndNoTransport() throws {
        for (file, modules) in try Self.imports(of: "IAPValidatorAPI") {
            let allowed: Set<String> = ["Foundation", "IAPModel", "IAPEncoding"]
            #expect(
                modules.isSubset(of: allowed),
                "Sources/IAPValidatorAPI/\(file) imports \(modules.subtracting(allowed).sorted())")
        }
    }

    /// CONTRIBUTING.md's "Reading the code" tells where a rule lives and which files to touch to add a mutant, a
    /// notification type, a forgery class or a route: every path it names exists.
    @Test func contributingNamesFilesThatExist() throws {
        let root = Self.sources.deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("CONTRIBUTING.md"), encoding: .utf8)
        guard let start = text.range(of: "## Reading the code") else {
            Issue.record("CONTRIBUTING.md has no \"Reading the code\" section")
            return
        }
        let section = text[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        let paths = section[..<end].matches(of: #/`((?:Sources|Tests|docs)/[^`\s]+)`/#).map { String($0.output.1) }
        #expect(paths.count >= 20)
        for path in paths {
            #expect(
                FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path),
                "CONTRIBUTING.md names \(path), which does not exist")
        }
    }

    /// A rule's comment names the section of the docs it implements (`docs/semantics.md#grace-period`, more
    /// sections of the same file as `, #q4-…`): every section cited in Sources exists, under GitHub's anchor.
    @Test func everyCitedSectionExists() throws {
        let root = Self.sources.deletingLastPathComponent()
        func anchors(_ doc: String) throws -> Set<String> {
            let text = try String(contentsOf: root.appendingPathComponent(doc), encoding: .utf8)
            return Set(
                text.split(separator: "\n").filter { $0.hasPrefix("#") }.map { line in
                    let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                    return String(
                        title.unicodeScalars.filter {
                            CharacterSet.alphanumerics.contains($0) || "_- ".unicodeScalars.contains($0)
                        }
                        .map { $0 == " " ? "-" : Character($0) })
                })
        }
        var known: [String: Set<String>] = [:]
        var cited = 0
        let files = FileManager.default.enumerator(atPath: Self.sources.path)!.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        for file in files {
            // A list of sections may go on in the next comment line: `…#grant-intervals,` then `/// #q17-…`.
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
                .replacing(#/,\s*\n\s*///\s*#/#, with: ", #")
            for m in text.matches(of: #/docs/([\w-]+\.md)((?:#[\w-]+)(?:,\s*#[\w-]+)*)/#) {
                let doc = "docs/\(m.output.1)"
                if known[doc] == nil { known[doc] = try anchors(doc) }
                for a in m.output.2.matches(of: #/#([\w-]+)/#).map({ String($0.output.1) }) {
                    cited += 1
                    let exists = known[doc]!.contains(a)
                    #expect(exists, "Sources/\(file) cites \(doc)#\(a), which has no such section")
                }
            }
        }
        #expect(cited > 50)
    }

    @Test func noSourceFileIsLongerThan400Lines() throws {
        let files = FileManager.default.enumerator(atPath: Self.sources.path)!.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 50)
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 401, "Sources/\(file) has \(lines) lines: split it by concern")
        }
    }
}
