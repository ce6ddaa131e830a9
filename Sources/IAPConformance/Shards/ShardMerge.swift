import Foundation
import IAPEncoding
import IAPModel

/// A shard's summary as read from its file (the path names it in messages).
public struct ShardFile<Summary: Sendable>: Sendable {
    public var path: String
    public var summary: Summary
    public init(path: String, summary: Summary) {
        self.path = path
        self.summary = summary
    }
}

/// Joins the JSON summaries of the shards of one run (`iapcheck merge-reports`).
public enum ShardMerge {
    public typealias Input = ShardFile<Reports.CheckSummary>

    public struct Result: Sendable {
        /// The merged summary: what one unsharded run would have reported (counts up to the lowest failure).
        public var summary: Reports.CheckSummary
        /// Shards of the run with no summary.
        public var missing: [Shard]
        /// Shards stopped before their last case (Ctrl-C, or a run that died), with their files.
        public var interrupted: [String]
        public var complete: Bool { missing.isEmpty && interrupted.isEmpty }
    }

    public struct Mismatch: Error, CustomStringConvertible {
        public var description: String
    }

    /// Checks that the inputs are shards of one run and merges them. Throws when they are not (different seeds,
    /// versions, catalogs, policies, properties or shard counts, a shard twice, a summary without its run, or
    /// fields no shard can have).
    public static func merge(_ inputs: [Input]) throws(Mismatch) -> Result {
        guard let first = inputs.first else { throw Mismatch(description: "no summaries to merge") }
        let byIndex = try shardsOfOneRun(inputs)
        let n = try identity(first).shard.count
        // Shards missing (listed up to a readable number).
        var missing: [Shard] = []
        for i in 0..<n where byIndex[i] == nil {
            missing.append(Shard(index: i, count: n))
            if missing.count == 1000 { break }
        }
        let interrupted = byIndex.values.filter { $0.summary.interrupted == true }.map(\.path).sorted()
        var merged = first.summary
        // An incomplete merge says so in its own summary, so that merging it again cannot pass.
        merged.interrupted = !(missing.isEmpty && interrupted.isEmpty)
        fold(byIndex, count: n, into: &merged)
        return Result(summary: merged, missing: missing, interrupted: interrupted)
    }

    /// A summary's run identity, after checking that its counts are ones a shard can have.
    static func identity(_ x: Input) throws(Mismatch) -> RunIdentity {
        guard let id = x.summary.run else {
            throw Mismatch(
                description:
                    "\(x.path): names no run: a single-case run (check --case) or a summary of an iapcheck older than --shard"
            )
        }
        let s = x.summary
        guard id.shard.isValid, id.totalCases >= 0, s.cases >= 0, s.passed >= 0, s.passed <= s.cases,
            s.questions >= 0,
            s.cases <= id.shard.range(of: id.totalCases).count
        else {
            throw Mismatch(
                description:
                    "\(x.path): not a shard summary iapcheck writes: shard \(id.shard.index)/\(id.shard.count), \(s.cases) cases (\(s.passed) passed) of \(id.totalCases)"
            )
        }
        return id
    }

    /// The inputs by shard index, once each, when every one is a shard of the first one's run: same version,
    /// validator and run identity (``RunIdentity/firstDifference(from:)``).
    static func shardsOfOneRun(_ inputs: [Input]) throws(Mismatch) -> [Int: Input] {
        let first = inputs[0]
        let id0 = try identity(first)
        var byIndex: [Int: Input] = [:]
        for x in inputs {
            let id = try identity(x)
            func differ(_ what: String, _ a: String, _ b: String) -> Mismatch {
                var hint = ""
                if what == "shard count" && (a == "1" || b == "1") {
                    hint =
                        " (a merged or unsharded summary among the shards? write the merged summary outside their directory)"
                }
                return Mismatch(
                    description: "\(x.path) and \(first.path) are not shards of one run: \(what) \(b) vs \(a)\(hint)")
            }
            if x.summary.iapcheckVersion != first.summary.iapcheckVersion {
                throw differ("iapcheck version", first.summary.iapcheckVersion, x.summary.iapcheckVersion)
            }
            if x.summary.validator != first.summary.validator {
                throw differ("validator", first.summary.validator, x.summary.validator)
            }
            if let d = id0.firstDifference(from: id) { throw differ(d.what, d.mine, d.theirs) }
            if let other = byIndex[id.shard.index] {
                throw Mismatch(description: "shard \(id.shard) appears twice: \(other.path) and \(x.path)")
            }
            byIndex[id.shard.index] = x
        }
        return byIndex
    }

    /// In index order, up to and including the first shard that failed: what one run would have counted. Every
    /// shard replays the corpus: a corpus failure in any of them counts, once per file.
    static func fold(_ byIndex: [Int: Input], count n: Int, into merged: inout Reports.CheckSummary) {
        merged.run?.shard = Shard(index: 0, count: 1)
        merged.cases = 0
        merged.passed = 0
        merged.questions = 0
        merged.seconds = 0
        merged.coverage = Coverage()
        merged.raceResent = nil
        foldAccepted(byIndex.keys.sorted().map { byIndex[$0]!.summary }, into: &merged)
        foldCorpus(byIndex.keys.sorted().map { byIndex[$0]!.summary }, into: &merged)
        var tallies: [[Reports.ForgerySummary]] = []
        for i in 0..<n {
            guard let s = byIndex[i]?.summary else { continue }
            merged.seconds = max(merged.seconds, s.seconds)
            merged.cases = Self.saturating(merged.cases, s.cases)
            merged.passed = Self.saturating(merged.passed, s.passed)
            merged.questions = Self.saturating(merged.questions, s.questions)
            merged.coverage.merge(s.coverage)
            tallies.append(s.forgeries)
            if let race = s.raceResent { merged.raceResent = (merged.raceResent ?? RaceTally()).merged(race) }
            let found = s.discrepancies.filter { $0.caseIndex != nil },
                crashed = s.validatorFailures.filter { $0.caseIndex != nil }
            merged.validatorFailures += crashed
            // Shards run with --keep-going name each failure's signature: every shard counts, and a failure seen
            // in several shards is listed once (the lowest case), its failing cases summed.
            let keptGoing = found.contains { $0.signature != nil }
            for d in found {
                if let sig = d.signature,
                    let k = merged.discrepancies.firstIndex(where: { $0.caseIndex != nil && $0.signature == sig })
                {
                    merged.discrepancies[k].occurrences =
                        (merged.discrepancies[k].occurrences ?? 1) + (d.occurrences ?? 1)
                } else {
                    merged.discrepancies.append(d)
                }
            }
            if (!found.isEmpty && !keptGoing) || !crashed.isEmpty { break }
        }
        merged.forgeries = Reports.ForgerySummary.merge(tallies)
    }

    /// A baseline's accepted divergences over every shard: each signature's failing cases summed (a corpus case
    /// accepted in every shard's replay counts once per shard), and an entry not met only if no shard met it.
    static func foldAccepted(_ ordered: [Reports.CheckSummary], into merged: inout Reports.CheckSummary) {
        let withBaseline = ordered.filter { $0.accepted != nil || $0.baselineNotSeen != nil }
        guard !withBaseline.isEmpty else { return }
        var accepted: [AcceptedFailure] = []
        for a in withBaseline.flatMap({ $0.accepted ?? [] }) {
            if let k = accepted.firstIndex(where: { $0.signature == a.signature }) {
                accepted[k].occurrences = saturating(accepted[k].occurrences, a.occurrences)
            } else {
                accepted.append(a)
            }
        }
        merged.accepted = accepted
        let met = Set(accepted.map(\.signature))
        var notSeen: [String] = []
        for n in withBaseline.flatMap({ $0.baselineNotSeen ?? [] }) where !met.contains(n) && !notSeen.contains(n) {
            notSeen.append(n)
        }
        merged.baselineNotSeen = notSeen
    }

    /// The corpus failures of every shard, once per file (every shard replays the same corpus).
    static func foldCorpus(_ ordered: [Reports.CheckSummary], into merged: inout Reports.CheckSummary) {
        var corpusFailures: [Reports.DiscrepancySummary] = []
        var corpusCrashes: [Reports.ValidatorFailureSummary] = []
        var failedFiles: [String] = []
        for s in ordered {
            for d in s.discrepancies
            where d.caseIndex == nil
                && !corpusFailures.contains(where: { $0.corpusFile == d.corpusFile && $0.property == d.property })
            {
                corpusFailures.append(d)
            }
            for f in s.validatorFailures
            where f.caseIndex == nil && !corpusCrashes.contains(where: { $0.kind == f.kind && $0.message == f.message })
            {
                corpusCrashes.append(f)
            }
            for f in s.corpus.failed where !failedFiles.contains(f) { failedFiles.append(f) }
        }
        merged.discrepancies = corpusFailures
        merged.validatorFailures = corpusCrashes
        merged.corpus = Reports.CorpusSummary(
            replayed: ordered.map(\.corpus.replayed).max() ?? 0, failed: failedFiles,
            skipped: ordered.compactMap(\.corpus.skipped).max { $0.values.reduce(0, +) < $1.values.reduce(0, +) })
    }

    static func saturating(_ a: Int, _ b: Int) -> Int {
        let (s, o) = a.addingReportingOverflow(b)
        return o ? .max : s
    }
}
