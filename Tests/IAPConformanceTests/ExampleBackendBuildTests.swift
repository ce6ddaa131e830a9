import Foundation
import IAPSupport
import Testing

/// Where `mutants`, the tests and the start script find the example backend: the newest build wins, and a wrong
/// IAPCHECK_EXAMPLE_BACKEND is reported rather than replaced.
@Suite struct ExampleBackendBuildTests {
    /// A root with the given builds (relative paths), each an executable file modified `age` seconds ago.
    static func root(_ builds: [(String, TimeInterval)]) throws -> String {
        let root = NSTemporaryDirectory() + "example-backend-build-\(UUID().uuidString)"
        for (path, age) in builds {
            let file = root + "/" + path
            try FileManager.default.createDirectory(
                atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data("#!/bin/sh\n".utf8).write(to: URL(fileURLWithPath: file))
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o755, .modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: file)
        }
        return root
    }

    @Test func theNewestBuildWinsWhereverItIs() throws {
        let name = ExampleBackendBuild.executableName
        let root = try Self.root([
            ("Examples/ExampleBackend/.build/release/" + name, 3600),  // a stale release build
            (".build/debug/" + name, 60),
            ("Examples/ExampleBackend/.build/debug/" + name, 600),
        ])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(ExampleBackendBuild.executable(root: root, environment: [:]) == root + "/.build/debug/" + name)
        // Beside the running program (a packed release), when that copy is the newest.
        let packed = try Self.root([("bin/" + name, 1)])
        defer { try? FileManager.default.removeItem(atPath: packed) }
        #expect(
            ExampleBackendBuild.executable(root: root, besides: packed + "/bin/iapcheck", environment: [:])
                == packed + "/bin/" + name)
    }

    @Test func noBuildAndAWrongSettingAreNil() throws {
        let root = try Self.root([(".build/debug/" + ExampleBackendBuild.executableName, 1)])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(ExampleBackendBuild.executable(root: root + "/nowhere", environment: [:]) == nil)
        // The setting wins over every build, and names no executable here: nil, not the build beside.
        let env = ["IAPCHECK_EXAMPLE_BACKEND": root + "/missing"]
        #expect(ExampleBackendBuild.executable(root: root, environment: env) == nil)
        let named = root + "/.build/debug/" + ExampleBackendBuild.executableName
        #expect(
            ExampleBackendBuild.executable(root: "/nowhere", environment: ["IAPCHECK_EXAMPLE_BACKEND": named]) == named)
        #expect(ExampleBackendBuild.notBuilt(environment: [:]).contains(ExampleBackendBuild.buildCommand))
        #expect(ExampleBackendBuild.notBuilt(environment: env).contains("/missing, which is not an executable"))
    }
}
