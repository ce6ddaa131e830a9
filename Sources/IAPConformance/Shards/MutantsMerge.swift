import Foundation
import IAPModel

/// Joins the `--json` summaries of the shards of one `mutants --shard i/N` run.
public enum MutantsMerge {
    public typealias Input = ShardFile<Reports.MutantsSummary>

    public struct Result: Sendable {
        /// The table one unsharded run would have printed (the rows of the shards present, in list order).
        public var summary: Reports.MutantsSummary
        public var missing: [Shard]
        public var complete: Bool { missing.isEmpty }
    }

    public static func merge(_ inputs: [Input]) throws(ShardMerge.Mismatch) -> Result {
        guard let first = inputs.first else { throw ShardMerge.Mismatch(description: "no summaries to merge") }
        func identity(_ x: Input) throws(ShardMerge.Mismatch) -> MutantsRunIdentity {
            guard let id = x.summary.run, id.shard.isValid else {
                throw ShardMerge.Mismatch(description: "\(x.path): not the summary of a mutants --shard run")
            }
            let expected = Array(id.slice)
            let ran = x.summary.mutants.map(\.name)
            let accounted = Set(ran + (x.summary.skipped ?? []) + (x.summary.setupErrors ?? []))
            // The rows are the slice's mutants in list order; those without a row were skipped or failed to start.
            guard ran == expected.filter(Set(ran).contains), accounted == Set(expected),
                x.summary.total == ran.count
            else {
                throw ShardMerge.Mismatch(
                    description:
                        "\(x.path): its rows are not the mutants of shard \(id.shard) (\(expected.joined(separator: ", ")))"
                )
            }
            return id
        }
        let id0 = try identity(first)
        var byIndex: [Int: Input] = [:]
        for x in inputs {
            var id = try identity(x)
            if x.summary.iapcheckVersion != first.summary.iapcheckVersion {
                throw ShardMerge.Mismatch(
                    description:
                        "\(x.path) and \(first.path) are not shards of one run: iapcheck version \(x.summary.iapcheckVersion) vs \(first.summary.iapcheckVersion)"
                )
            }
            let index = id.shard.index
            id.shard.index = id0.shard.index
            guard id == id0 else {
                throw ShardMerge.Mismatch(
                    description:
                        "\(x.path) and \(first.path) are not shards of one run: \(differences(id0, id).joined(separator: "; "))"
                )
            }
            if let other = byIndex[index] {
                throw ShardMerge.Mismatch(
                    description: "shard \(index)/\(id.shard.count) appears twice: \(other.path) and \(x.path)")
            }
            byIndex[index] = x
        }
        let n = id0.shard.count
        // A summary file is input: its shard count may be absurd, so walk the shards present, and list at most
        // 1000 missing ones.
        var missing: [Shard] = []
        for i in 0..<n where byIndex[i] == nil {
            missing.append(Shard(index: i, count: n))
            if missing.count == 1000 { break }
        }
        let present = byIndex.keys.sorted().map { byIndex[$0]! }
        let rows = present.flatMap(\.summary.mutants)
        var summary = Reports.MutantsSummary(
            seed: id0.seed, casesPerMutant: id0.casesPerMutant, total: rows.count,
            killed: rows.filter(\.killed).count, medianShrunkEvents: MutantsRun.medianShrunk(rows), mutants: rows)
        summary.iapcheckVersion = first.summary.iapcheckVersion
        summary.run = id0
        summary.run?.shard = Shard(index: 0, count: 1)
        let skipped = present.flatMap { $0.summary.skipped ?? [] }
        let errors = present.flatMap { $0.summary.setupErrors ?? [] }
        if !skipped.isEmpty { summary.skipped = skipped }
        if !errors.isEmpty { summary.setupErrors = errors }
        return Result(summary: summary, missing: missing)
    }

    /// The fields two identities differ in, named as the command line names them.
    static func differences(_ a: MutantsRunIdentity, _ b: MutantsRunIdentity) -> [String] {
        var out: [String] = []
        if a.seed != b.seed { out.append("seed \(b.seed) vs \(a.seed)") }
        if a.casesPerMutant != b.casesPerMutant { out.append("--cases \(b.casesPerMutant) vs \(a.casesPerMutant)") }
        if a.catalogDigest != b.catalogDigest { out.append("catalog") }
        if a.policy != b.policy { out.append("policy") }
        if a.maxSize != b.maxSize { out.append("--max-size") }
        if a.shrinkAttempts != b.shrinkAttempts { out.append("--shrink-attempts") }
        if a.mutants != b.mutants { out.append("the mutant list (--only, or another version's catalogue)") }
        if a.shard.count != b.shard.count { out.append("shard count \(b.shard.count) vs \(a.shard.count)") }
        return out
    }
}
