import Foundation

/// A directory of the test process's own for the files tests write, removed when the process exits, so that a test
/// run leaves nothing behind in the temporary directory (it used to leave a few hundred files there).
public enum Scratch {
    /// Ends with a slash, as `NSTemporaryDirectory()` does: `Scratch.directory + "name"` is a path inside it.
    public static let directory: String = {
        let dir = NSTemporaryDirectory() + "iapcheck-tests-\(getpid())/"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: Scratch.directory) }
        return dir
    }()

    /// ``directory`` as a file URL.
    public static var url: URL { URL(fileURLWithPath: directory, isDirectory: true) }
}
