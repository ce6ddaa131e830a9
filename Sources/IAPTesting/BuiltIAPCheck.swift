import Foundation

/// The iapcheck program the tests run as a subprocess (the command line, `serve` over the wire protocol, signals):
/// the one `IAPCHECK_TEST_BINARY` names, else the debug build's `.build/debug/iapcheck`, which `swift build
/// --build-tests` and `swift test` make. `.ci/run` names its release build there: the same program, faster, and the
/// one CI's later stages and the packed release run (docs/performance-notes.md#the-test-command-and-ci).
public enum BuiltIAPCheck {
    /// The repository this source file is in.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    public static let path: String = path(environment: ProcessInfo.processInfo.environment)

    package static func path(environment: [String: String]) -> String {
        // Relative: from the folder the tests start in (tests run the program from folders of their own).
        if let named = environment["IAPCHECK_TEST_BINARY"], !named.isEmpty { return URL(fileURLWithPath: named).path }
        return repository.appendingPathComponent(".build/debug/iapcheck").path
    }
}
