import Foundation
import IAPEncoding
import IAPModel

/// What makes two summaries parts of one run: a shard of one run can only be merged with the other shards of it.
public struct RunIdentity: Codable, Hashable, Sendable {
    public var seed: UInt64
    /// Cases of the whole run (all shards together).
    public var totalCases: Int
    public var properties: [String]
    public var policy: Policy
    /// A digest of the catalog as the run used it (after `--bundle-id` and overrides); `drawn:` before it when
    /// every case drew its own catalog from it as the base.
    public var catalogDigest: String
    public var signed: Bool
    public var shard: Shard
    /// `--max-size` when not the default (absent in summaries written before it existed).
    public var maxSize: Int?
    /// `--faults` as given, when any (they change what the validator goes through, and so the verdict).
    public var faults: String?
    /// `--shrink-attempts` when not the default, and `--shrink-seconds` when given: they decide the counterexample
    /// the merged report shows.
    public var shrinkAttempts: Int?
    public var shrinkSeconds: Double?
    /// The validator's declared profile, when it declared one: shards checked on other fields or channels are
    /// different runs.
    public var profile: ValidatorProfile?
    /// True when the run did not replay the corpus (`--no-corpus`); absent when it did. A shard that skipped it
    /// and one that replayed it are different runs: merged, the corpus verdict would rest on some shards only.
    public var corpusSkipped: Bool?
    /// Forgery classes left out as declared divergences (`--known-divergences`), sorted; absent when none.
    public var knownDivergences: [String]?

    public init(
        seed: UInt64, totalCases: Int, properties: [String], policy: Policy, catalog: Catalog,
        drawsCatalogs: Bool = false, signed: Bool, shard: Shard
    ) {
        self.seed = seed
        self.totalCases = totalCases
        self.properties = properties
        self.policy = policy
        self.catalogDigest = Self.catalogDigest(catalog, drawsCatalogs: drawsCatalogs)
        self.signed = signed
        self.shard = shard
    }

    /// The catalog's digest, `drawn:` first when each case drew its own catalog from it, and how grace was set when
    /// the catalog states it.
    static func catalogDigest(_ catalog: Catalog, drawsCatalogs: Bool) -> String {
        (drawsCatalogs ? "drawn:" : "")
            + (catalog.graceChoice == .varies ? "" : "grace-\(catalog.graceChoice.rawValue):") + digest(catalog)
    }

    /// FNV-1a (64 bit) of the catalog's canonical JSON: equal catalogs give equal digests on every machine.
    static func digest(_ catalog: Catalog) -> String {
        let e = JSONFormat.compact()
        let bytes = (try? e.encode(catalog)) ?? Data()
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return String(h, radix: 16)
    }
}
