import Foundation
import IAPModel
import Testing

/// The CI jobs teams copy download the release named by their `IAPCHECK_VERSION`: it must be the version this build
/// reports (`iapcheck --version`, and the tarball `scripts/release.sh` names after it), or the download fails.
@Suite struct CIExamplesVersionTests {
    static let root = ReadmeCommandsTests.root

    /// Every CI file of Examples/ci (each variant a team may copy).
    static func ciFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Examples/ci").path)
            .filter { $0.hasSuffix(".yml") }.sorted().map { "Examples/ci/\($0)" }
    }

    @Test func theExampleJobsDownloadThisVersion() throws {
        let files = try Self.ciFiles()
        #expect(files.count >= 3, "\(files)")
        for file in files {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let pinned = text.split(separator: "\n").compactMap { line -> String? in
                let t = line.trimmingCharacters(in: .whitespaces)
                guard t.hasPrefix("IAPCHECK_VERSION:") else { return nil }
                return t.dropFirst("IAPCHECK_VERSION:".count).trimmingCharacters(in: CharacterSet(charactersIn: " \"'"))
            }
            #expect(!pinned.isEmpty, "\(file) pins no IAPCHECK_VERSION")
            for v in pinned {
                #expect(v == IAPCheckVersion.current, "\(file) pins \(v); this build is \(IAPCheckVersion.current)")
            }
        }
    }

    /// The jobs pass the app's entitlements and the team's baseline when those files exist, in every variant.
    @Test func theExampleJobsPassEntitlementsAndTheBaseline() throws {
        for file in try Self.ciFiles() {
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            #expect(text.contains("--entitlements iapcheck/entitlements.json"), "\(file)")
            #expect(text.contains("--baseline iapcheck/baseline.json"), "\(file)")
        }
    }
}
