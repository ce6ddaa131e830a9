import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import Testing

/// The harness's power: every mutant is caught within the budget and shrunk to a small history; every saved
/// counterexample still fails against its mutant and passes against the reference.
@Suite struct MutantQualityTests {
    /// A mutant's mistake number is explained in the repository: `mutants --list` prints it, docs/mistakes.md has a
    /// section for it (what the mistake is, where it was seen, its public sources).
    @Test func everyMistakeNumberHasItsSectionInTheDocs() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/mistakes.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let numbered = Mutants.all.filter { $0.pitfall.hasPrefix("J") }
        #expect(numbered.count > 40)
        for m in numbered {
            let section = "\n### \(m.pitfall) "
            #expect(text.contains(section), "mutant \(m.name): \(m.pitfall) has no section in docs/mistakes.md")
        }
    }

    /// Every third mutant quick (CI's `iapcheck mutants` runs them all, and checks the shrunk sizes too); all of them
    /// with `IAPCHECK_SWEEP=full`.
    @Test(arguments: Sweep.sample(Mutants.all.map(\.name), every: 20))
    func everyMutantIsCaughtAndShrunk(_ name: String) throws {
        var o = CheckOptions()
        o.cases = 2000
        o.drawsCatalogs = true  // as `iapcheck mutants` runs them
        o.shrinkBudget = .init(maxAttempts: 600)
        if let p = Mutants.named(name)!.policy { o.policy = p }
        let report = Checker(options: o, validator: Mutants.named(name)!.make()).run()
        let f = try #require(report.failure, "mutant \(name) survived \(o.cases) cases")
        // Shrinking did its job: a small history, and never larger than what was found.
        // (a window of ten recent purchases takes eleven to show; 600 attempts bring it near that)
        #expect(
            f.shrunk.actionCount <= (name == "recent-window" ? 24 : 10),
            "\(name): shrunk to \(f.shrunk.actionCount) actions")
        #expect(
            f.shrunk.actionCount < f.originalActions || f.originalActions <= 4,
            "\(name): not shrunk from \(f.originalActions)")
        // A race mutant fails only when the race is lost: replay a few times and require one failure.
        #expect((0..<5).contains { _ in !CaseRunner.run(f.shrunk, against: Mutants.named(name)!.make()).isPass })
        #expect(CaseRunner.run(f.shrunk, against: ReferenceValidator()).isPass)
    }

    static let corpusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Corpus").path

    @Test func theCommittedCorpusCoversTheMutantsAndReplays() throws {
        let files = Corpus.files(in: Self.corpusDirectory)
        var covered: Set<String> = []
        for file in files {
            let saved = try Corpus.load(path: file)
            #expect(
                CaseRunner.run(saved.testCase, against: ReferenceValidator()).isPass,
                "\(file) fails against the reference")
            guard saved.foundWith.hasPrefix("mutant:") else { continue }
            let name = String(saved.foundWith.dropFirst(7))
            // A renamed or removed mutant must not leave a counterexample that silently tests nothing.
            let m = try #require(
                Mutants.named(name), "\(file) was found with \(saved.foundWith), which no longer exists")
            covered.insert(name)
            // A race mutant fails only when the race is lost: replays until one failure.
            #expect(
                (0..<50).contains { _ in !CaseRunner.run(saved.testCase, against: m.make()).isPass },
                "\(file) no longer fails against \(saved.foundWith)")
        }
        let uncovered = Set(Mutants.all.map(\.name)).subtracting(covered).sorted()
        #expect(
            uncovered.isEmpty,
            "no committed counterexample for: \(uncovered); run iapcheck mutants --only NAME --save-corpus Corpus")
    }
}
