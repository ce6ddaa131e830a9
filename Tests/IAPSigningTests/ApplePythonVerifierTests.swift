import Foundation
import IAPModel
import IAPSigning
import IAPTesting
import Testing

/// Apple's official Python verifier (`pip install app-store-server-library`) accepts iapcheck's root and JWS, and
/// rejects the forgeries it is designed to reject. Runs when python3 can import the library (`.ci/run` installs it).
@Suite struct ApplePythonVerifierTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/python/verify_samples.py").path

    static func run(_ args: [String]) -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3"] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        do { try p.run() } catch { return (-1, "\(error)") }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static let available = Installed.applePython

    /// Known, documented differences (docs/verifiers.md#what-is-left-to-the-application): the library has no size limit, and it is
    /// stateless, so a replayed notification UUID is the application's to catch.
    static let acceptedByDesign: Set<String> = [
        ForgeryClass.oversizedToken.rawValue, ForgeryClass.replayedNotificationUUID.rawValue,
    ]

    @Test(.enabled(if: available, "python3 with app-store-server-library is not installed"))
    func applesVerifierAcceptsOurPKIAndRejectsForgeries() throws {
        let dir = Scratch.directory + "iapcheck-samples-\(UUID().uuidString)"
        try PKIExport.samples(
            TestPKI.shared(seed: 1), catalog: .standard, at: CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay,
            to: dir)
        let (status, output) = Self.run([Self.script, dir])
        #expect(status == 0, "\(output)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String: String]])
        #expect(json["genuine"]?.values.allSatisfy { $0 == "accepted" } == true, "\(output)")
        // Notifications without `data` name the app in `summary` / `externalPurchaseToken`; the library checks it there.
        #expect(json["genuine"]?["summary-notification.jws"] == "accepted")
        #expect(json["genuine"]?["external-purchase-token-notification.jws"] == "accepted")
        for (name, verdict) in json["forged"] ?? [:] where !Self.acceptedByDesign.contains(name) {
            #expect(verdict.hasPrefix("rejected"), "Apple's verifier accepted forgery \(name)")
        }
        // Every class that is a JWS (the legacy classes are verifyReceipt answers).
        #expect((json["forged"] ?? [:]).count == ForgeryClass.allCases.filter { !$0.isLegacyOnly }.count)
    }
}
