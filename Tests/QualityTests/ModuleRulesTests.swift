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
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
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

    @Test func theOracleImportsOnlyTheModel() throws {
        for (file, modules) in try Self.imports(of: "IAPOracle") {
            let wrong = modules.filter { $0.hasPrefix("IAP") && $0 != "IAPModel" }
            #expect(wrong.isEmpty, "Sources/IAPOracle/\(file) imports \(wrong.sorted())")
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
            let allowed: Set<String> = ["Foundation", "IAPModel"]
            #expect(
                modules.isSubset(of: allowed),
                "Sources/IAPValidatorAPI/\(file) imports \(modules.subtracting(allowed).sorted())")
        }
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
