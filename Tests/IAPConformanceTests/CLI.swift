import Foundation
import IAPTesting

/// The `iapcheck` executable of this build, run as a user runs it: arguments, a working folder, its exit status and
/// output.
enum CLI {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binary = BuiltIAPCheck.path

    struct Result {
        var status: Int32
        var out: String
        var err: String
    }

    /// Runs `iapcheck ARGS` in `directory` (a new temporary folder when nil) and waits for it.
    static func run(_ args: [String], in directory: String? = nil) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args
        if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read before waiting: a full pipe would block the child.
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Result(
            status: p.terminationStatus, out: String(decoding: o, as: UTF8.self),
            err: String(decoding: e, as: UTF8.self))
    }

    /// A new empty folder.
    static func folder(_ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "iapcheck-\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}
