import Foundation
import Testing

/// The modules that are the specification in executable form — the oracle, the reference validator, the simulator
/// and its delivery planner — keep each rule a small named function (CONTRIBUTING.md, "Reading the code"). A
/// function may run longer where a table or a state machine reads better whole: a comment line saying
/// `long by design:` and why, right above it, says so.
@Suite struct FunctionLengthTests {
    static let limit = 80

    /// Each function, initializer or subscript of `text` and its length in lines, from its declaration to its
    /// closing brace; braces inside string literals and comments are not counted.
    static func functions(in text: String) -> [(name: String, line: Int, lines: Int, excused: Bool)] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let code = lines.map(stripped)
        let declaration =
            #/^\s*(@\w+(\([^)]*\))?\s+)*((public|private|fileprivate|internal|package|static|final|override|mutating|nonisolated|convenience|required|open|class)\s+)*(func\s+[^\s(<]+|init[?!]?|subscript)[\s(<]/#
        var out: [(String, Int, Int, Bool)] = []
        for (i, line) in code.enumerated() {
            guard let m = line.firstMatch(of: declaration) else { continue }
            var depth = 0, opened = false, end: Int?
            scan: for k in i..<code.count {
                for ch in code[k] {
                    if ch == "{" {
                        depth += 1
                        opened = true
                    } else if ch == "}" {
                        depth -= 1
                    }
                    if opened && depth == 0 {
                        end = k
                        break scan
                    }
                }
                // A requirement or declaration without a body.
                if !opened && k > i + 8 { break }
            }
            guard let end else { continue }
            let excused =
                i > 0
                && lines[..<i].reversed().prefix { $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                    .contains { $0.contains("long by design:") }
            out.append((String(m.output.5), i + 1, end - i + 1, excused))
        }
        return out
    }

    /// `line` without string literals and `//` comments (enough for brace counting in this code base: its
    /// multi-line strings hold no unbalanced braces).
    static func stripped(_ line: String) -> String {
        var out = "", inString = false, escaped = false
        var previous: Character = " "
        for ch in line {
            if inString {
                if escaped {
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    inString = false
                }
            } else if ch == "\"" {
                inString = true
            } else if ch == "/" && previous == "/" {
                out.removeLast()
                break
            } else {
                out.append(ch)
            }
            previous = ch
        }
        return out
    }

    @Test func theCounterSeesALongFunctionAndItsExcuse() {
        let body = Array(repeating: "    let s = \"}\" // }", count: 90).joined(separator: "\n")
        let text =
            "struct A {\n    func long() {\n\(body)\n    }\n    // long by design: a table\n    func table() {\n\(body)\n    }\n    func short() { }\n}\n"
        let found = Self.functions(in: text)
        #expect(found.map(\.name) == ["func long", "func table", "func short"])
        #expect(found.map(\.lines) == [92, 92, 1])
        #expect(found.map(\.excused) == [false, true, false])
    }

    /// Every module's Swift files, subfolders included, as `Module/Folder/File.swift` and their text.
    static func sourceFiles() throws -> [(String, String)] {
        let root = ModuleRulesTests.sources
        var out: [(String, String)] = []
        for module in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() {
            let dir = root.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap({ $0 as? String }) else {
                continue
            }
            for name in files.sorted() where name.hasSuffix(".swift") {
                out.append(
                    ("\(module)/\(name)", try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)))
            }
        }
        return out
    }

    /// No function of `Sources/` over the limit, unless it says why it is long by design.
    @Test func everyFunctionOfSourcesIsShort() throws {
        let files = try Self.sourceFiles()
        #expect(files.count > 100)
        for (file, text) in files {
            for f in Self.functions(in: text) where f.lines > Self.limit && !f.excused {
                Issue.record(
                    "Sources/\(file):\(f.line) \(f.name) is \(f.lines) lines: split it by concept (named steps, a type with methods), or say `// long by design: why` above it"
                )
            }
        }
    }

    /// A command's `run` parses its options, calls its library run and prints: 40 lines at most.
    @Test func everyCommandRunIsShort() throws {
        for (file, text) in try Self.sourceFiles() where file.hasPrefix("iapcheck/") {
            for f in Self.functions(in: text) where f.name == "func run" && f.lines > Self.commandLimit {
                Issue.record(
                    "Sources/\(file):\(f.line) run is \(f.lines) lines: a command parses, calls its library run and prints (at most \(Self.commandLimit))"
                )
            }
        }
    }
    static let commandLimit = 40
}
