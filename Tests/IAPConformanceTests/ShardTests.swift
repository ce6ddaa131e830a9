import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// `check --shard i/N` and `merge-reports`: the shards of one run, merged, say what the unsharded run says.
@Suite struct ShardTests {

    /// The JSON summary the `check` command writes for a run (corpus aside).
    static func summary(
        _ v: any Validator, shard: Shard?, cases: Int = 150, seed: UInt64 = 1, faults: String? = nil,
        shrinkAttempts: Int = 2000, corpus: String? = nil
    ) throws -> Reports.CheckSummary {
        var o = CheckOptions()
        o.cases = cases
        o.seed = seed
        o.shard = shard
        o.flakinessReplays = 1
        o.shrinkBudget.maxAttempts = shrinkAttempts
        var run = CheckRun(validator: "test", checker: Checker(options: o, validator: v))
        run.selection.faults = faults
        run.corpus = corpus
        return try run.run { _ in }.summary
    }

    static func shards(_ v: () throws -> any Validator, count: Int, cases: Int = 150) throws -> [ShardMerge.Input] {
        try (0..<count).map { i in
            ShardMerge.Input(
                path: "shard\(i).json",
                summary: try summary(try v(), shard: Shard(index: i, count: count), cases: cases))
        }
    }

    @Test func shardsSliceTheCaseIndicesWithoutGapsOrOverlaps() {
        for total in [0, 1, 2, 7, 150, 1001] {
            for n in 1...5 {
                let ranges = (0..<n).map { Shard(index: $0, count: n).range(of: total) }
                #expect(ranges.flatMap { Array($0) } == Array(0..<total), "\(total) cases in \(n) shards")
            }
        }
        #expect(Shard(parsing: "2/3") == Shard(index: 2, count: 3))
        for bad in ["3/3", "-1/3", "1/0", "1", "a/b", "1/2/3", ""] { #expect(Shard(parsing: bad) == nil, "\(bad)") }
    }

    @Test(.long) func mergedShardsOfAPassingRunEqualTheUnshardedRun() throws {
        let whole = try Self.summary(ReferenceValidator(), shard: nil)
        let result = try ShardMerge.merge(try Self.shards({ ReferenceValidator() }, count: 3))
        #expect(result.complete)
        let m = result.summary
        #expect(m.cases == whole.cases && m.passed == whole.passed && m.questions == whole.questions)
        #expect(m.coverage == whole.coverage)
        #expect(m.discrepancies.isEmpty)
        #expect(
            m.forgeries.map(\.sent) == whole.forgeries.map(\.sent)
                && m.forgeries.map(\.rejected) == whole.forgeries.map(\.rejected))
        // What merge-reports prints and exits with: the summary line of the unsharded run, exit 0.
        let lines = result.lines(given: 3, of: 3)
        #expect(lines.first?.hasPrefix("merged 3 of 3 shards of reference (seed ") == true, "\(lines)")
        #expect(
            lines.contains(
                "reference: \(whole.passed)/\(whole.cases) cases passed, \(whole.questions) questions, corpus \(whole.corpus.replayed) replayed"
            ))
        #expect(result.exitCode == 0)
    }

    /// Shards sized so that the mutant's first failure falls in the second of three; a later failure (made up in the
    /// third shard's summary) must not count, as the unsharded run never gets there.
    @Test(.long) func mergedShardsOfAFailingRunReportTheLowestFailureAsTheUnshardedRunDoes() throws {
        // The first of these mutants whose first failure is late enough to fall in a later shard (which one depends on
        // the generator, not on what is tested here).
        var chosen: ((() throws -> ReferenceValidator), Int)?
        for name in [
            "latest-by-max-expires", "no-grace", "extension-ignored", "intro-per-product", "ignore-revocation",
        ] {
            let make = { try #require(Mutants.named(name)).make() }
            let index = try #require(
                try Self.summary(try make(), shard: nil, cases: 2000).discrepancies.first?.caseIndex)
            if index >= 2 {
                chosen = (make, index)
                break
            }
        }
        let (make, first) = try #require(chosen, "every mutant fails too early to place its failure in a later shard")
        let cases = 3 * first  // shard 1 is [first, 2·first)
        let whole = try Self.summary(try make(), shard: nil, cases: cases)
        var inputs = try Self.shards(make, count: 3, cases: cases)
        #expect(inputs[0].summary.discrepancies.isEmpty && inputs[1].summary.discrepancies.first?.caseIndex == first)
        if inputs[2].summary.discrepancies.isEmpty, let d = inputs[1].summary.discrepancies.first {
            var later = d
            later.caseIndex = 2 * first + 1
            inputs[2].summary.discrepancies = [later]
            inputs[2].summary.cases = 2
            inputs[2].summary.passed = 1
        }
        let result = try ShardMerge.merge(inputs)
        let m = result.summary
        #expect(m.cases == whole.cases && m.passed == whole.passed && m.questions == whole.questions)
        #expect(m.coverage == whole.coverage)
        #expect(m.discrepancies.map(\.caseIndex) == [first])
        #expect(result.exitCode == 1 && result.lines(given: 3, of: 3).contains { $0.contains("FAIL ") })
        #expect(
            m.discrepancies.first?.timeline == whole.discrepancies.first?.timeline, "the same shrunk counterexample")
        // merge-reports prints the FAIL line the unsharded check printed, shrink figures and all.
        let headline = try #require(whole.discrepancies.first?.headline)
        #expect(headline.contains("shrunk") && m.discrepancies.first?.headline == headline)
    }

    @Test(.long) func aMissingShardIsReportedAndForeignShardsAreRefused() throws {
        var inputs = try Self.shards({ ReferenceValidator() }, count: 3)
        let result = try ShardMerge.merge([inputs[0], inputs[2]])
        #expect(result.missing == [Shard(index: 1, count: 3)])
        #expect(!result.complete)
        #expect(result.exitCode == 5 && result.lines(given: 2, of: 3).last == "MISSING shards: 1/3")

        var other = inputs[1]
        other.summary.run?.seed = 2
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([inputs[0], other, inputs[2]]) }
        var again = inputs[0]
        again.path = "copy.json"
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge(inputs + [again]) }
        inputs[1].summary.run?.policy = Policy(refundScope: .chain)
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge(inputs) }
    }

    /// Shards run under other faults, with another shrink budget, or with the corpus where the others skipped it, are
    /// parts of another run.
    @Test(.long) func shardsOfOtherFaultsOrShrinkBudgetsAreRefused() throws {
        let inputs = try Self.shards({ ReferenceValidator() }, count: 2, cases: 40)
        #expect(try ShardMerge.merge(inputs).complete)
        let underFaults = ShardMerge.Input(
            path: "faults.json",
            summary: try Self.summary(
                ReferenceValidator(), shard: Shard(index: 1, count: 2), cases: 40, faults: "reset"))
        #expect(underFaults.summary.run?.faults == "reset")
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([inputs[0], underFaults]) }
        let shorterShrink = ShardMerge.Input(
            path: "shrink.json",
            summary: try Self.summary(
                ReferenceValidator(), shard: Shard(index: 1, count: 2), cases: 40, shrinkAttempts: 10))
        #expect(shorterShrink.summary.run?.shrinkAttempts == 10)
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([inputs[0], shorterShrink]) }
        // Defaults leave the identity as summaries before these fields had it.
        #expect(inputs[0].summary.run?.faults == nil && inputs[0].summary.run?.shrinkAttempts == nil)
        // A shard that replayed the corpus and one run with --no-corpus (these) are parts of different runs.
        let dir = Scratch.url.appendingPathComponent("shard-corpus-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let replaying = ShardMerge.Input(
            path: "corpus.json",
            summary: try Self.summary(ReferenceValidator(), shard: Shard(index: 1, count: 2), cases: 40, corpus: dir))
        #expect(replaying.summary.run?.corpusSkipped == nil && inputs[0].summary.run?.corpusSkipped == true)
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([inputs[0], replaying]) }
    }

    /// Summary files are input: fields no shard can have are refused with the file named, never trapped on.
    @Test func impossibleShardFieldsAreRefusedNotTrappedOn() throws {
        let good = try Self.shards({ ReferenceValidator() }, count: 2, cases: 10)
        #expect(Shard(index: Int.max - 1, count: Int.max).range(of: Int.max).count >= 0)
        #expect(Shard(index: 1, count: 2).range(of: Int.max) == (Int.max / 2)..<Int.max)
        var bad = good[0]
        bad.summary.run?.shard = Shard(index: 0, count: -1)
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([bad, good[1]]) }
        bad = good[0]
        bad.summary.cases = .max
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([bad, good[1]]) }
        bad = good[0]
        bad.summary.run?.shard = Shard(index: 5, count: 2)
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([bad, good[1]]) }
        bad = good[0]
        bad.summary.run = nil
        #expect(throws: ShardMerge.Mismatch.self) { try ShardMerge.merge([bad, good[1]]) }
    }

    /// Every shard replays the corpus: a corpus failure seen by any shard fails the merged verdict; and the merged
    /// summary of an incomplete set stays incomplete when merged again.
    @Test func corpusFailuresOfAnyShardCountAndIncompleteMergesStayIncomplete() throws {
        var inputs = try Self.shards({ ReferenceValidator() }, count: 3, cases: 30)
        inputs[2].summary.discrepancies = [
            Reports.DiscrepancySummary(
                property: "entitlement-agreement", corpusFile: "Corpus/x.json", shrunkEvents: 2, expected: "a",
                observed: "b",
                differences: ["x"], timeline: "", replay: "iapcheck replay Corpus/x.json")
        ]
        inputs[2].summary.corpus.failed = ["Corpus/x.json"]
        let failed = try ShardMerge.merge(inputs).summary
        #expect(
            failed.discrepancies.map(\.corpusFile) == ["Corpus/x.json"] && failed.corpus.failed == ["Corpus/x.json"])

        let partial = try ShardMerge.merge([inputs[0], inputs[1]])
        #expect(!partial.complete && partial.summary.interrupted == true)
        let again = try ShardMerge.merge([ShardMerge.Input(path: "merged.json", summary: partial.summary)])
        #expect(!again.complete, "a merged summary of missing shards passed when merged again")
        #expect(Reports.junit(partial.summary).contains("completeness"))
    }

    /// A gate's shards each accept some failing cases: the merge sums them per signature (it used to keep shard 0's),
    /// names an entry as not met only when no shard met it, and says both in its text and its JUnit.
    @Test func acceptedDivergencesOfEveryShardAreSummed() throws {
        var inputs = try Self.shards({ ReferenceValidator() }, count: 3, cases: 30)
        let (a, b, c) = ("entitlement disagreement, field active", "field expiresDate", "field balance")
        inputs[0].summary.accepted = [AcceptedFailure(signature: a, reason: "NOTES-311", occurrences: 13)]
        inputs[0].summary.baselineNotSeen = [b, c]
        inputs[1].summary.accepted = [
            AcceptedFailure(signature: a, reason: "NOTES-311", occurrences: 15),
            AcceptedFailure(signature: b, reason: "NOTES-312", occurrences: 2),
        ]
        inputs[1].summary.baselineNotSeen = [c]
        inputs[2].summary.accepted = []
        inputs[2].summary.baselineNotSeen = [a, b, c]
        let merged = try ShardMerge.merge(inputs)
        #expect(merged.summary.accepted?.map(\.occurrences) == [28, 2])
        #expect(merged.summary.baselineNotSeen == [c])
        let text = merged.lines(given: 3, of: 3).joined(separator: "\n")
        #expect(text.contains("(28 failing cases): NOTES-311") && text.contains("not met in this run: \(c)"), "\(text)")
        #expect(Reports.junit(merged.summary).contains("accepted-divergences"))
        #expect(merged.exitCode == 0)
        // A merge that stopped at a shard's failure did not reach the other entries: it does not call them unmet.
        var stopped = merged
        stopped.summary.cases = 21
        let stoppedText = stopped.lines(given: 3, of: 3).joined(separator: "\n")
        #expect(stoppedText.contains("not met before the run stopped (after 21 of 30 cases)"), "\(stoppedText)")
        // A failure's JUnit names its signature, which a baseline entry would accept.
        var failing = merged.summary
        var d = Reports.DiscrepancySummary(
            property: "entitlement-agreement", caseIndex: 3, shrunkEvents: 2, expected: "a", observed: "b",
            differences: ["x"], timeline: "", replay: "r")
        d.signature = "entitlement disagreement, field active, auto-renewable, after REFUND (notification)"
        failing.discrepancies = [d]
        #expect(Reports.junit(failing).contains("signature: \(d.signature!)"))
    }
}
