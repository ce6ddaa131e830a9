import Foundation

/// Where the example backend's executable is. The backend is a package of its own (Examples/ExampleBackend), so
/// iapcheck's build does not make it; `mutants`' backend mutants, the tests that start it and
/// Examples/http/start-example-backend.sh all find it here, in one order.
public enum ExampleBackendBuild {
    public static let executableName = "iapcheck-example-backend"

    /// How to build it: in its package's own build folder. (CI builds it into iapcheck's `.build` of a fresh clone to
    /// reuse the modules built there; after that, SwiftPM can keep a stale build plan when the two packages take
    /// turns in one folder, so day to day it gets a folder of its own.)
    public static let buildCommand = "swift build --package-path Examples/ExampleBackend"

    /// The executable, or nil when none is built. The one `IAPCHECK_EXAMPLE_BACKEND` names wins (nil when it names
    /// no executable, so a wrong setting is not silently replaced); else the newest of the candidates: beside
    /// `besides` (the running iapcheck, a packed release, or the test bundle in the build folder), then the debug and
    /// release builds in iapcheck's build folder and in the package's own, under `root`. The newest, so that a stale
    /// release build never wins over the debug build made a minute ago.
    public static func executable(
        root: String, besides: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let files = FileManager.default
        if let named = environment["IAPCHECK_EXAMPLE_BACKEND"], !named.isEmpty {
            return files.isExecutableFile(atPath: named) ? named : nil
        }
        var candidates = besides.map { [($0 as NSString).deletingLastPathComponent + "/" + executableName] } ?? []
        for folder in [".build", "Examples/ExampleBackend/.build"] {
            for configuration in ["debug", "release"] {
                candidates.append("\(root)/\(folder)/\(configuration)/\(executableName)")
            }
        }
        let built = candidates.filter { files.isExecutableFile(atPath: $0) }
        func modified(_ path: String) -> Date {
            ((try? files.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
        }
        return built.max { modified($0) < modified($1) }
    }

    /// Why the example backend's tests or mutants do not run, with what to do about it.
    public static func notBuilt(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let named = environment["IAPCHECK_EXAMPLE_BACKEND"], !named.isEmpty {
            return "IAPCHECK_EXAMPLE_BACKEND names \(named), which is not an executable"
        }
        return "the example backend is not built (\(buildCommand))"
    }
}
