import Foundation
import IAPTesting
import Testing

/// The program the tests run as a subprocess: CI's release build where `IAPCHECK_TEST_BINARY` names it, the debug
/// build's otherwise.
@Suite struct BuiltIAPCheckTests {
    @Test func theSettingWinsAndTheDebugBuildIsTheDefault() {
        #expect(BuiltIAPCheck.path(environment: ["IAPCHECK_TEST_BINARY": "/opt/ci/iapcheck"]) == "/opt/ci/iapcheck")
        let relative = BuiltIAPCheck.path(environment: ["IAPCHECK_TEST_BINARY": "ci/iapcheck"])
        #expect(relative == FileManager.default.currentDirectoryPath + "/ci/iapcheck")
        let debug = BuiltIAPCheck.repository.appendingPathComponent(".build/debug/iapcheck").path
        #expect(BuiltIAPCheck.path(environment: [:]) == debug)
        #expect(BuiltIAPCheck.path(environment: ["IAPCHECK_TEST_BINARY": ""]) == debug)
        // The repository is the one holding this package's manifest.
        #expect(
            FileManager.default.fileExists(
                atPath: BuiltIAPCheck.repository.appendingPathComponent("Package.swift").path))
    }
}
