import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import Testing

/// `iapcheck mutants` as a library call (``MutantsRun/table(_:then:emit:save:)``), without the command line: the rows
/// in list order, mutants with a check of their own after the in-process ones, and the verdict's exit code.
@Suite struct MutantsTableTests {
    static func entry(_ name: String) -> MutantsRun.Entry {
        let m = Mutants.named(name)!
        return MutantsRun.Entry(
            name: m.name, description: m.description, pitfall: m.pitfall, make: m.make, policy: m.policy)
    }

    static var options: CheckOptions {
        var o = CheckOptions()
        o.cases = 300
        return o
    }

    struct SetupFailed: Error, CustomStringConvertible {
        var description: String { "could not start" }
    }

    @Test(.long) func rowsComeInListOrderAndOwnChecksFollow() throws {
        var run = MutantsRun(options: Self.options)
        run.jobs = 2
        let own = [
            MutantsRun.OwnCheck(
                name: "own-killed", description: "the reference with a bug, checked by its own run", pitfall: "J1",
                run: { o in Checker(options: o, validator: Mutants.named("ignore-revocation")!.make()).run() }),
            MutantsRun.OwnCheck(
                name: "own-unavailable", description: "cannot run here", pitfall: "J2", run: nil,
                unavailable: "its program is not built"),
        ]
        var lines: [String] = []
        var saved = 0
        let verdict = try run.table(
            [Self.entry("expiry-from-duration"), Self.entry("ignore-revocation")], then: own,
            emit: { lines.append($0) }, save: { report, _ in saved += report.failure == nil ? 0 : 1 })
        #expect(verdict.rows.map(\.name) == ["expiry-from-duration", "ignore-revocation", "own-killed"])
        #expect(verdict.killed == 3 && verdict.skipped == ["own-unavailable"] && verdict.setupErrors.isEmpty)
        #expect(verdict.exitCode == 0)
        #expect(saved == 2, "only in-process mutants' counterexamples are offered for saving")
        #expect(lines.first == TextReport.mutantsHeader)
        #expect(lines.contains { $0.hasPrefix("own-unavailable") && $0.contains("skipped: its program is not built") })
        #expect(lines.last?.hasPrefix("killed 3/3") == true)
        let summary = try #require(verdict.summary(seed: 1, casesPerMutant: 300, identity: nil))
        #expect(summary.killed == 3 && summary.skipped == ["own-unavailable"])
    }

    @Test(.long) func aSurvivorFailsTheRunAndASetupErrorIsExitThree() throws {
        let survivor = MutantsRun.Entry(
            name: "not-a-bug", description: "the reference itself", pitfall: "-", make: { ReferenceValidator() })
        let survived = try MutantsRun(options: Self.options).table([survivor], then: [], emit: { _ in })
        #expect(survived.killed == 0 && survived.exitCode == 1)

        let broken = MutantsRun.OwnCheck(
            name: "own-broken", description: "its backend does not start", pitfall: "J3",
            run: { _ in throw SetupFailed() })
        var lines: [String] = []
        let verdict = try MutantsRun(options: Self.options).table(
            [Self.entry("ignore-revocation")], then: [broken], emit: { lines.append($0) })
        #expect(verdict.setupErrors == ["own-broken"] && verdict.exitCode == 3)
        #expect(lines.contains { $0.hasPrefix("own-broken") && $0.contains("ERROR  could not start") })
    }

    @Test func aStoppedRunWritesNoSummary() throws {
        var o = Self.options
        o.shouldStop = { true }
        let verdict = try MutantsRun(options: o).table([Self.entry("ignore-revocation")], then: [], emit: { _ in })
        #expect(verdict.interrupted && verdict.exitCode == 130)
        #expect(verdict.summary(seed: 1, casesPerMutant: 300, identity: nil) == nil)
    }
}

/// `mutants --over exec`: each mutant served by the iapcheck binary as a program, caught at the same case as in this
/// process, its shrunk counterexample within two actions of the in-process one (docs/check.md#mutants-over-exec).
@Suite struct MutantsOverExecTests {
    @Test(.long) func caughtAtTheSameCaseAndShrunkAlike() throws {
        let dir = try CLI.folder("over-exec")
        let names = ["ignore-revocation", "no-grace"]
        let only = names.flatMap { ["--only", $0] }
        let inProcess = try CLI.run(["mutants", "--cases", "40", "--json", dir + "/in.json"] + only)
        let overExec = try CLI.run(["mutants", "--cases", "40", "--over", "exec", "--json", dir + "/exec.json"] + only)
        #expect(inProcess.status == 0 && overExec.status == 0, "\(overExec.out)\(overExec.err)")
        let a = try JSONDecoder().decode(
            Reports.MutantsSummary.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/in.json")))
        let b = try JSONDecoder().decode(
            Reports.MutantsSummary.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/exec.json")))
        #expect(a.mutants.map(\.name) == names && b.mutants.map(\.name) == names)
        for (x, y) in zip(a.mutants, b.mutants) {
            #expect(x.killed && y.killed)
            #expect(x.casesToKill == y.casesToKill, "\(x.name)")
            #expect(abs((x.shrunkEvents ?? 0) - (y.shrunkEvents ?? 0)) <= 2, "\(x.name)")
        }
        let bad = try CLI.run(["mutants", "--over", "http"])
        #expect(bad.status == 2 && bad.err.contains("--over takes exec"))
    }
}
