import Foundation
import IAPTesting
import Testing

/// The README is the front door: the commands it shows must run as written. The short ones (`swift run iapcheck …`
/// in its indented blocks, on this repository's own files) run here against the built binary; commands on a reader's
/// own files sit in ```console blocks and are not run.
@Suite struct ReadmeCommandsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binary = BuiltIAPCheck.path

    /// The README's indented commands that start with `swift run iapcheck`, without their comments.
    static func commands() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("    swift run iapcheck ") else { return nil }
            let command = line.dropFirst(4).split(separator: "#", maxSplits: 1)[0]
            return command.trimmingCharacters(in: .whitespaces)
        }
    }

    @Test func theReadmeShowsItsMainCommandsAndStaysShort() throws {
        let commands = try Self.commands()
        #expect(commands.contains("swift run iapcheck check"), "\(commands)")
        let text = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(text.contains("    swift test"))
        #expect(text.split(separator: "\n", omittingEmptySubsequences: false).count <= 220)
    }

    @Test(.long, .enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func everyShortReadmeCommandRunsAsWritten() throws {
        // A directory of its own, with the repository's files the commands name: what they write stays there.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["Examples", "Corpus", "Profiles"] {
            try FileManager.default.createSymbolicLink(
                at: dir.appendingPathComponent(name), withDestinationURL: Self.root.appendingPathComponent(name))
        }
        let commands = try Self.commands()
        #expect(commands.count >= 3)
        for command in commands {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", Self.binary + " " + command.dropFirst("swift run iapcheck ".count)]
            p.currentDirectoryURL = dir
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(command) exited \(p.terminationStatus):\n\(text.suffix(2000))")
        }
    }
}
