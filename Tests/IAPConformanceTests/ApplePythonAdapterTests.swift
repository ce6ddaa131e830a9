import Foundation
import IAPConformance
import IAPModel
import IAPSubprocess
import IAPTesting
import Testing

/// Apple's official Python library, wrapped by `Examples/python/apple_validator.py`, checked over the subprocess
/// transport. Runs when python3 can import the library (`.ci/run` installs it).
@Suite struct ApplePythonAdapterTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/python/apple_validator.py").path

    static let available = Installed.applePython

    @Test(.long, .enabled(if: available, "python3 with app-store-server-library is not installed"))
    func applesLibraryWithTheAdapterAgreesWithTheOracle() {
        var o = CheckOptions()
        o.cases = 30
        o.properties = [.entitlementAgreement, .idempotentDelivery, .orderInsensitivity]
        let v = SubprocessValidator(command: "python3 \(Self.script)", timeout: 20)
        defer { v.stop() }
        let report = Checker(options: o, validator: v).run()
        #expect(
            report.failure == nil,
            "\(report.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")
        #expect(v.hello?.name == "apple-app-store-server-library-python")
    }

    /// The library has no token size limit (docs/verifiers.md#what-is-left-to-the-application): fine without a
    /// declared limit (Apple sets none), found when the app's policy declares one.
    @Test(.long, .enabled(if: available, "python3 with app-store-server-library is not installed"))
    func theSizeLimitDivergenceIsFound() throws {
        var o = CheckOptions()
        o.cases = 400
        o.properties = [.forgeryRejected]
        o.policy = Policy(tokenSizeLimit: 262_144)
        o.shrinkBudget = .init(maxAttempts: 50, maxSeconds: 10)
        let v = SubprocessValidator(command: "python3 \(Self.script)", timeout: 20)
        defer { v.stop() }
        let report = Checker(options: o, validator: v).run()
        let d = try #require(report.failure?.discrepancy)
        #expect(d.kind == .verdict && d.expected.contains("oversized-token"))
    }
}
