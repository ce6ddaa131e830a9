import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import Testing

/// `mutants --shard i/N` and `merge-reports`: slices of the mutant list, joined, give the table of one run.
@Suite struct MutantsShardTests {
    static let names = ["ignore-revocation", "expiry-from-duration", "array-order-latest", "unknown-type-rejected"]

    static func summary(shard: Shard?, seed: UInt64 = 1) -> Reports.MutantsSummary {
        var o = CheckOptions()
        o.cases = 300
        o.seed = seed
        let id = MutantsRunIdentity(
            seed: seed, casesPerMutant: o.cases, catalog: o.catalog, drawsCatalogs: false, policy: o.policy,
            mutants: names, shard: shard ?? Shard(index: 0, count: 1))
        let mine = Set(id.slice)
        let entries = names.filter { mine.contains($0) }.map { name in
            let m = Mutants.named(name)!
            return MutantsRun.Entry(
                name: m.name, description: m.description, pitfall: m.pitfall, make: m.make, policy: m.policy)
        }
        var rows: [Reports.MutantSummary] = []
        MutantsRun(options: o).run(entries) { row, _, _ in rows.append(row) }
        var s = Reports.MutantsSummary(
            seed: seed, casesPerMutant: o.cases, total: rows.count, killed: rows.filter(\.killed).count,
            medianShrunkEvents: MutantsRun.medianShrunk(rows), mutants: rows)
        if shard != nil { s.run = id }
        return s
    }

    @Test(.long) func mergedShardsGiveTheTableOfOneRun() throws {
        let whole = Self.summary(shard: nil)
        let shards = (0..<3).map {
            MutantsMerge.Input(path: "m\($0).json", summary: Self.summary(shard: Shard(index: $0, count: 3)))
        }
        let merged = try MutantsMerge.merge(shards.reversed())
        #expect(merged.complete)
        #expect(merged.summary.mutants.map(\.name) == Self.names)
        #expect(merged.summary.mutants.map(\.casesToKill) == whole.mutants.map(\.casesToKill))
        #expect(merged.summary.mutants.map(\.shrunkEvents) == whole.mutants.map(\.shrunkEvents))
        #expect(merged.summary.killed == whole.killed && merged.summary.total == whole.total)
        #expect(merged.summary.medianShrunkEvents == whole.medianShrunkEvents)

        let partial = try MutantsMerge.merge([shards[0], shards[2]])
        #expect(partial.missing == [Shard(index: 1, count: 3)])
        #expect(!partial.complete)
        #expect(partial.lines(given: 2, of: 3).last == "MISSING shards: 1/3")
        #expect(partial.lines(given: 2, of: 3)[1] == TextReport.mutantsHeader)
        #expect(merged.exitCode == (whole.killed < whole.total ? 1 : 0) && partial.exitCode != 0)

        var other = shards[1]
        other.summary.run?.seed = 9
        #expect(throws: ShardMerge.Mismatch.self) { try MutantsMerge.merge([shards[0], other, shards[2]]) }
        var twice = shards[0]
        twice.path = "again.json"
        #expect(throws: ShardMerge.Mismatch.self) { try MutantsMerge.merge(shards + [twice]) }
        var wrongRows = shards[0]
        wrongRows.summary.mutants = shards[2].summary.mutants
        #expect(throws: ShardMerge.Mismatch.self) { try MutantsMerge.merge([wrongRows, shards[1], shards[2]]) }
    }

    /// A summary file is input: an absurd shard count is merged (its slice is empty) without walking every shard.
    @Test(.long) func anAbsurdShardCountNeitherHangsNorTraps() throws {
        var huge = MutantsMerge.Input(path: "huge.json", summary: Self.summary(shard: Shard(index: 0, count: 3)))
        huge.summary.run?.shard = Shard(index: 0, count: Int.max)
        huge.summary.mutants = []
        huge.summary.total = 0
        huge.summary.killed = 0
        let merged = try MutantsMerge.merge([huge])
        #expect(merged.missing.count == 1000 && !merged.complete)
        #expect(merged.summary.total == 0)
    }
}
