import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPSweeps
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

    /// Every twentieth mutant quick (CI's `iapcheck mutants` runs them all, as `iapcheck-sweeps` runs this check for
    /// every one of them: Sources/IAPSweeps); all of them with `IAPCHECK_SWEEP=full` unless that program runs them.
    @Test(arguments: Sweep.programmed.sample(Mutants.all.map(\.name), every: 20))
    func everyMutantIsCaughtAndShrunk(_ name: String) {
        let problems = Sweeps.mutantIsCaughtAndShrunk(name)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
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
