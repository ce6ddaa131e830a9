import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// `CheckRun`, the whole `check` as a library call: the counterexample saved and replayed from the corpus, the
/// verdict, and the text a user reads.
@Suite struct CheckRunTests {
    static func run(_ v: any Validator, corpus: String?, cases: Int = 40) throws -> (CheckRunReport, [String]) {
        var o = CheckOptions()
        o.cases = cases
        o.seed = 3
        var run = CheckRun(validatorSpec: "mutant:ignore-revocation", checker: Checker(options: o, validator: v))
        run.corpus = corpus
        var lines: [String] = []
        let report = try run.run { lines.append($0) }
        return (report, lines)
    }

    @Test func aFailureIsSavedThenReplayedFromTheCorpus() throws {
        let dir = Scratch.url.appendingPathComponent("checkrun-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mutant = Mutants.named("ignore-revocation")!
        let (first, text) = try Self.run(mutant.make(), corpus: dir, cases: 600)
        #expect(first.verdict == .discrepancy)
        let saved = try #require(first.summary.discrepancies.first?.corpusFile)
        #expect(Corpus.files(in: dir) == [saved])
        #expect(text.contains { $0.hasPrefix("FAIL ") && $0.contains("disagrees with the oracle") })
        #expect(
            text.contains { $0.contains("replay:   iapcheck replay \(saved) --validator mutant:ignore-revocation") })

        // The same mutant again: the saved case fails from the corpus before any generated case runs.
        let (again, againText) = try Self.run(mutant.make(), corpus: dir, cases: 0)
        #expect(again.summary.corpus.replayed == 1)
        #expect(again.summary.corpus.failed == [saved])
        #expect(again.verdict == .discrepancy)
        #expect(againText.first?.contains("(corpus \(saved))") == true)

        // The reference passes the saved case.
        let (fixed, _) = try Self.run(ReferenceValidator(), corpus: dir, cases: 20)
        #expect(fixed.verdict == .pass)
        #expect(fixed.summary.corpus.replayed == 1 && fixed.summary.corpus.failed.isEmpty)
        #expect(fixed.summary.run?.totalCases == 20)
    }

    @Test func anUnreadableCorpusFileIsAConfigurationError() throws {
        let dir = Scratch.url.appendingPathComponent("checkrun-bad-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: dir + "/broken.json"))
        #expect(throws: CheckRun.UnreadableCorpus.self) { _ = try Self.run(ReferenceValidator(), corpus: dir) }
    }

    @Test func aPassingRunSaysSoAndNamesTheForgeries() throws {
        let (report, text) = try Self.run(ReferenceValidator(), corpus: nil, cases: 30)
        #expect(report.verdict == .pass)
        #expect(text.last { $0.hasPrefix("forgeries: ") } != nil)
        #expect(text.contains { $0.contains("30/30 cases passed") })
    }
}
