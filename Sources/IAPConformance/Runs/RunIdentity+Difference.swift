import Foundation
import IAPEncoding
import IAPModel

/// Whether two summaries are shards of one run, field by field, said as a person reads it.
extension RunIdentity {
    /// The first field in which `other` differs from this identity, with this one's value and the other's; nil when
    /// both are of one run (the shard index aside).
    public func firstDifference(from other: RunIdentity) -> (what: String, mine: String, theirs: String)? {
        if other.seed != seed { return ("seed", "\(seed)", "\(other.seed)") }
        if other.totalCases != totalCases { return ("--cases", "\(totalCases)", "\(other.totalCases)") }
        if other.shard.count != shard.count { return ("shard count", "\(shard.count)", "\(other.shard.count)") }
        if other.catalogDigest != catalogDigest {
            func mode(_ d: String) -> String {
                d.hasPrefix("drawn:") ? "drawn per case (\(d.dropFirst(6)))" : "pinned (\(d))"
            }
            return ("catalog", mode(catalogDigest), mode(other.catalogDigest))
        }
        if other.maxSize != maxSize {
            return ("--max-size", maxSize.map(String.init) ?? "default", other.maxSize.map(String.init) ?? "default")
        }
        if other.policy != policy {
            let (a, b) = Self.policyDifference(policy, other.policy)
            return ("policy", a, b)
        }
        if other.properties != properties {
            return ("properties", properties.joined(separator: ","), other.properties.joined(separator: ","))
        }
        if other.signed != signed { return ("signed", "\(signed)", "\(other.signed)") }
        return runOptionsDifference(from: other)
    }

    /// The options that change what a validator goes through: the corpus, faults, declared divergences and profile,
    /// the shrink budget.
    func runOptionsDifference(from other: RunIdentity) -> (what: String, mine: String, theirs: String)? {
        if (other.corpusSkipped ?? false) != (corpusSkipped ?? false) {
            func corpus(_ r: RunIdentity) -> String { r.corpusSkipped == true ? "skipped (--no-corpus)" : "replayed" }
            return ("corpus", corpus(self), corpus(other))
        }
        if other.faults != faults { return ("--faults", faults ?? "none", other.faults ?? "none") }
        if other.knownDivergences != knownDivergences {
            return (
                "--known-divergences", knownDivergences?.joined(separator: ",") ?? "none",
                other.knownDivergences?.joined(separator: ",") ?? "none"
            )
        }
        if other.profile != profile {
            return ("declared profile", profile?.description ?? "none", other.profile?.description ?? "none")
        }
        if other.shrinkAttempts != shrinkAttempts || other.shrinkSeconds != shrinkSeconds {
            func budget(_ r: RunIdentity) -> String {
                "\(r.shrinkAttempts.map(String.init) ?? "default") attempts"
                    + (r.shrinkSeconds.map { ", \($0) s" } ?? "")
            }
            return ("shrink budget", budget(self), budget(other))
        }
        return nil
    }

    /// The keys on which two policies differ, as `key: value` lists.
    static func policyDifference(_ a: Policy, _ b: Policy) -> (String, String) {
        let e = JSONFormat.compact()
        func fields(_ p: Policy) -> [String: String] {
            guard let data = try? e.encode(p), let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return [:] }
            return o.mapValues { "\($0)" }
        }
        let fa = fields(a), fb = fields(b)
        let keys = Set(fa.keys).union(fb.keys).filter { fa[$0] != fb[$0] }.sorted()
        return (
            keys.map { "\($0): \(fa[$0] ?? "-")" }.joined(separator: ", "),
            keys.map { "\($0): \(fb[$0] ?? "-")" }.joined(separator: ", ")
        )
    }
}
