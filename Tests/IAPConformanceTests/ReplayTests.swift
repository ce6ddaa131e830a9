import Foundation
import IAPTesting
import Testing

/// `replay` without files reads the folder check saves a backend's counterexamples in, and says when it holds none
/// instead of "0 cases replayed" (a CI job replaying an empty default passed without a word), starting no backend.
@Suite struct ReplayDefaultFolderTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func aBackendsReplayReadsItsOwnFolder() throws {
        let dir = try CLI.folder("replay-default")
        try Data(
            #"""
            {"name": "shop", "baseURL": "http://127.0.0.1:9", "start": {"command": "exit 7"},
             "channels": ["app-transaction"],
             "routes": {"reset": {"method": "POST", "path": "/r"}, "appTransaction": {"method": "POST", "path": "/a"},
                        "entitlements": {"method": "GET", "path": "/e/{userId}?at={at}"}}}
            """#.utf8
        ).write(to: URL(fileURLWithPath: dir + "/target.json"))
        let r = try CLI.run(["replay", "--validator", "http:target.json"], in: dir)
        #expect(r.status == 0 && r.out.contains("no saved counterexamples in Corpus/http-shop"), "\(r.out)\n\(r.err)")
    }
}
