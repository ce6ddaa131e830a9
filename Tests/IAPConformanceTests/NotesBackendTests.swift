import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPSimulator
import IAPTesting
import IAPValidatorAPI
import Testing

/// A backend written as a team writes one (Examples/notes-backend: Python, SQLite, Apple's library, its own routes,
/// the wall clock, no reset route), checked as it is through its target file, under libfaketime.
@Suite struct NotesBackendTests {
    static let root = ExampleBackendTests.root
    static let usable = FakeClock.findLibrary() != nil && Installed.applePython

    /// The example's target file, on a port of this test process, with the repository's paths made absolute.
    static func target(_ name: String, port: Int, edit: (String) -> String = { $0 }) throws -> HTTPValidator.Target {
        var text = try edit(
            String(contentsOf: root.appendingPathComponent("Examples/notes-backend/\(name)"), encoding: .utf8))
        text = text.replacingOccurrences(of: "Examples/", with: root.path + "/Examples/")
        for p in ["8700", "8701"] { text = text.replacingOccurrences(of: p, with: String(port)) }
        let path = Scratch.directory + "notes-\(UUID().uuidString).json"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return try HTTPValidator.Target.load(path: path)
    }

    static func catalog() throws -> Catalog {
        try CatalogLoader.load(path: root.appendingPathComponent("Examples/notes-backend/iapcheck-catalog.json").path)
    }

    @Test(.long, .enabled(if: usable, "needs libfaketime and python3 -m pip install app-store-server-library"))
    func theNotesBackendIsCheckedAsItIsAndItsPlantedBugIsCaught() throws {
        let catalog = try Self.catalog()
        let correct = try HTTPValidator.make(
            target: Self.target("target.json", port: ExampleBackendTests.port(17)), name: "http:notes", timeout: 10,
            store: nil, faults: FaultProfile())
        defer { (correct as? ManagedHTTPValidator)?.backend.stopAndForget() }
        #expect(correct.isolation == .namespace)
        let doctor = Doctor(validator: correct, catalog: catalog, policy: .default).run()
        #expect(doctor.usable && !doctor.items.contains { $0.status == .finding }, "\(doctor.text)")
        var o = CheckOptions()
        o.catalog = catalog
        o.cases = 40
        let passed = Checker(options: o, validator: correct).run()
        #expect(
            passed.failure == nil,
            "\(passed.failure.map { Timeline.render($0.shrunk, failingStep: $0.failingStep) } ?? "")")

        let buggy = try HTTPValidator.make(
            target: Self.target("target-planted-bug.json", port: ExampleBackendTests.port(19)), name: "http:notes-bug",
            timeout: 10, store: nil, faults: FaultProfile())
        defer { (buggy as? ManagedHTTPValidator)?.backend.stopAndForget() }
        o.cases = 200
        o.shrinkBudget = .init(maxAttempts: 150)
        let failed = Checker(options: o, validator: buggy).run()
        // The planted bug ignores refunds: a refunded grant still counts (active, or a later expiry), in a short history
        // that has the refund.
        let f = try #require(failed.failure)
        let d = try #require(f.discrepancy)
        #expect(!d.differences.isEmpty)
        #expect(
            f.shrunk.events.contains { $0.family == .refund },
            "\(Timeline.render(f.shrunk, failingStep: f.failingStep))")
        #expect(f.shrunk.actionCount <= 5)
    }

    /// The backend refuses a body over 128 KiB with 413, as web servers do. A target that does not list 413 among its
    /// refusals would stop `check` at the first oversized token: the doctor sends one and names the fix.
    @Test(.enabled(if: usable, "needs libfaketime and python3 -m pip install app-store-server-library"))
    func aRefusalStatusTheTargetDoesNotMapIsAConfigurationError() throws {
        let port = try LoopbackHTTPClient.freePort()
        let v = try HTTPValidator.make(
            target: Self.target("target.json", port: port) {
                $0.replacingOccurrences(of: "\"refused\": [409, 413, 422]", with: "\"refused\": [409, 422]")
            }, name: "http:notes-413", timeout: 10, store: nil, faults: FaultProfile())
        defer { (v as? ManagedHTTPValidator)?.backend.stopAndForget() }
        let doctor = Doctor(validator: v, catalog: try Self.catalog(), policy: .default).run()
        #expect(!doctor.usable, "\(doctor.text)")
        let problem = try #require(doctor.items.first { $0.status == .misconfigured }, "\(doctor.text)")
        #expect(
            problem.name == "forgery oversized-token (appTransaction)" && problem.detail.contains("HTTP 413"),
            "\(doctor.text)")
        #expect(
            doctor.items.contains { $0.name == "forgery oversized-token (notification)" && $0.status == .misconfigured }
        )
        #expect(problem.fix?.contains("add 413 to `refused` of appTransaction") == true, "\(doctor.text)")
    }
}
