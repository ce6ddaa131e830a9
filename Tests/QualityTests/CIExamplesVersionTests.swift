import Foundation
import IAPModel
import Testing

/// The CI jobs teams copy download the release named by their `IAPCHECK_VERSION`: it must be the version this build
/// reports (`iapcheck --version`, and the tarball `scripts/release.sh` names after it), or the download fails.
@Suite struct CIExamplesVersionTests {
    static let root = ReadmeCommandsTests.root

    @Test(arguments: ["Examples/ci/github-actions.yml", "Examples/ci/gitlab-ci.yml"])
    func theExampleJobsDownloadThisVersion(_ file: String) throws {
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
