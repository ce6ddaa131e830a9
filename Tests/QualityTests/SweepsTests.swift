import Foundation
import IAPModel
import IAPMutants
import IAPSupport
import IAPSweeps
import IAPTesting
import PropertyEngine
import Testing

/// The long sweeps as items (Sources/IAPSweeps): `swift test` runs a share of each, `iapcheck-sweeps` runs them whole
/// (CI, from its release build). What CI relies on: every item can be named alone, a failing item fails the run and
/// says what failed, and the program's exit codes.
@Suite struct SweepsTests {
    @Test func everyItemHasANameOfItsOwnAndTheSweepsAreWhole() {
        let names = Sweeps.all.map(\.name)
        #expect(Set(names).count == names.count, "two items share a name: \(names)")
        #expect(names.filter { $0.hasPrefix("truth ") }.count == Sweeps.policies.count + 1)
        #expect(names.filter { $0.hasPrefix("reference ") }.count == Sweeps.policies.count)
        #expect(Set(names.filter { $0.hasPrefix("mutant ") }) == Set(Mutants.all.map { "mutant \($0.name)" }))
    }

    @Test func aPolicyIsNamedByWhatItChanges() {
        #expect(Sweeps.label(.default) == "default")
        #expect(Sweeps.label(Policy(refundScope: .chain)) == "refundScope=chain")
        #expect(
            Sweeps.label(Policy(refundScope: .chain, upgradeDuringIntro: .union))
                == "refundScope=chain,upgradeDuringIntro=union")
    }

    /// The reference sweep can fail: with a mutant in the reference's place it returns the shrunk timeline.
    @Test func theReferenceSweepFailsAMutant() throws {
        let mutant = try #require(Mutants.named("ignore-revocation"))
        let failures = Sweeps.referenceFollows(.default, cases: 300, validator: mutant.make())
        #expect(failures.count == 1)
        #expect(Sweeps.referenceFollows(.default, cases: 3).isEmpty)
        #expect(Sweeps.mutantIsCaughtAndShrunk("no-such-mutant") == ["no mutant named no-such-mutant"])
    }

    /// The truth sweep can fail: histories made under one refund scope, judged by the oracle under the other.
    @Test func theTruthSweepFailsAnOracleToldAnotherPolicy() {
        let chain = Policy(refundScope: .chain)
        let found = (1000..<1200).first { seed -> Bool in
            let generator = Fixtures.generator(policy: chain, drawsCatalogs: true)
            let (_, sim) = generator.generate(.entitlementAgreement, ChoiceSource(seed: UInt64(seed)))
            return !OracleTruth.mismatches(sim: sim, policy: .default).isEmpty
        }
        #expect(found != nil, "no history in 200 seeds tells the two refund scopes apart")
    }

    @Test func aFailingItemIsReportedWholeAndByName() {
        let items = [
            Sweeps.Item(name: "passes") { [] },
            Sweeps.Item(name: "fails") { ["first problem", "second problem"] },
            Sweeps.Item(name: "passes too") { [] },
        ]
        let lines = Locked<[String]>([])
        let failed = SweepRun(jobs: 2).run(items) { line in lines.withLock { $0.append(line) } }
        #expect(failed == ["fails"])
        let text = lines.value
        #expect(text.count == 4)
        #expect(text.filter { $0.hasPrefix("ok   passes") }.count == 2)
        #expect(text.contains { $0.hasPrefix("FAIL fails  ") && $0.contains("/3, ") })
        #expect(text.last == "FAIL fails:\nfirst problem\nsecond problem")
    }

    static let program = BuiltIAPCheck.repository.appendingPathComponent(".build/debug/iapcheck-sweeps").path

    /// The program: one item by its whole name passes (exit 0), a selection of nothing is a usage error (exit 2).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: program), "iapcheck-sweeps is not built"))
    func theProgramRunsTheItemsItIsGiven() throws {
        let one = try Self.run([Self.program, "--only", "mutant ignore-revocation", "--jobs", "1"])
        #expect(one.status == 0, "\(one.output)")
        #expect(one.output.contains("ok   mutant ignore-revocation  "))
        #expect(one.output.contains("all 1 sweep items passed"))
        let listed = try Self.run([Self.program, "--list", "--only", "reference "])
        #expect(listed.status == 0)
        #expect(listed.output.split(separator: "\n").count == Sweeps.policies.count)
        let none = try Self.run([Self.program, "--only", "nothing is named so"])
        #expect(none.status == 2)
        let wrong = try Self.run([Self.program, "--jobs", "0"])
        #expect(wrong.status == 2)
    }

    /// Runs the program, its output and errors in one text, and waits for it.
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: arguments[0])
        p.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()  // before waiting: a full pipe blocks the child
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
