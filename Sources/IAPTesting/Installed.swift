import Foundation

/// What the machine has that some tests need and `.ci/run` installs: such a test is enabled only where it is.
public enum Installed {
    /// `python3` can import Apple's `app-store-server-library` (`python3 -m pip install app-store-server-library`).
    public static let applePython: Bool = {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", "import appstoreserverlibrary"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }()
}
