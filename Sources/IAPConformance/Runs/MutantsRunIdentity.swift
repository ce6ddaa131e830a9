import Foundation
import IAPModel

/// What makes two `mutants --shard` summaries slices of one run: the same seed, cases per mutant, catalog, policy,
/// size and shrink budget, and the same mutant list, cut into the same number of slices.
public struct MutantsRunIdentity: Codable, Hashable, Sendable {
    public var seed: UInt64
    public var casesPerMutant: Int
    /// The catalog's digest as in ``RunIdentity`` (`drawn:` first when each case drew its own).
    public var catalogDigest: String
    public var policy: Policy
    public var maxSize: Int?
    public var shrinkAttempts: Int?
    /// The whole mutant list of the run, in order (after `--only`); shard i runs a contiguous slice of it.
    public var mutants: [String]
    public var shard: Shard

    public init(
        seed: UInt64, casesPerMutant: Int, catalog: Catalog, drawsCatalogs: Bool, policy: Policy, mutants: [String],
        shard: Shard
    ) {
        self.seed = seed
        self.casesPerMutant = casesPerMutant
        self.catalogDigest = RunIdentity.catalogDigest(catalog, drawsCatalogs: drawsCatalogs)
        self.policy = policy
        self.mutants = mutants
        self.shard = shard
    }

    /// The mutants of this shard: a contiguous slice of the list, so rows merged in shard order are in list order.
    public var slice: ArraySlice<String> { mutants[shard.range(of: mutants.count)] }
}
