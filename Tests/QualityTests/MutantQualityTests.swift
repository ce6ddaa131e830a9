import Foundation
import IAPConformance
import IAPModel
import IAPValidators
import Testing

/// The harness's power: every mutant is caught within the budget and shrunk to a small history; every saved
/// counterexample still fails against its mutant and passes against the reference.
@Suite struct MutantQualityTests {
    @Test(arguments: Mutants.all.map(\.name))
    func everyMutantIsCaughtAndShrunk(_ name: String) throws {
        var o = CheckOptions()
        o.cases = 2000
        o.shrinkBudget = .init(maxAttempts: 600, maxSeconds: 5)
        let report = Checker(options: o, validator: Mutants.named(name)!.make()).run()
        let f = try #require(report.failure, "mutant \(name) survived \(o.cases) cases")
        #expect(f.shrunk.actionCount <= 12)
        // A race mutant fails only when the race is lost: replay a few times and require one failure.
        #expect((0..<5).contains { _ in !CaseRunner.run(f.shrunk, against: Mutants.named(name)!.make()).isPass })
        #expect(CaseRunner.run(f.shrunk, against: ReferenceValidator()).isPass)
    }

    static let corpusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Corpus").path

    @Test func theCommittedCorpusCoversTheMutantsAndReplays() throws {
        let files = Corpus.files(in: Self.corpusDirectory)
        #expect(files.count >= 25)
        for file in files {
            let saved = try Corpus.load(path: file)
            #expect(CaseRunner.run(saved.testCase, against: ReferenceValidator()).isPass, "\(file) fails against the reference")
            if saved.foundWith.hasPrefix("mutant:"), let m = Mutants.named(String(saved.foundWith.dropFirst(7))) {
                #expect(!CaseRunner.run(saved.testCase, against: m.make()).isPass, "\(file) no longer fails against \(saved.foundWith)")
            }
        }
    }
}
