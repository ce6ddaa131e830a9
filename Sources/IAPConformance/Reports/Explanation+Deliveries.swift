import Foundation
import IAPEncoding
import IAPModel
import IAPSimulator

extension Explanation {
    /// `--explain`: per delivery of a case up to `step`, the decoded fields of each signed artifact it carries that
    /// changed from the previous version of that artifact (the same transactionId; a chain's renewal info); a new
    /// transaction lists the fields that decide entitlements. Dates are relative to the
    /// first purchase, as in the timeline; a forged artifact says what was forged.
    public static func deliveries(_ c: GeneratedCase, upTo step: Int, race: Discrepancy.Race? = nil) -> [String] {
        let rel = { (t: Millis) in CivilTime.relative(t - c.origin) }
        let names = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
        var lastVersion: [String: [String: String]] = [:]  // by transactionId
        var chainsSeen: Set<String> = []
        var lastRenewal: [String: [String: String]] = [:]  // by originalTransactionId
        var out: [String] = []
        /// What changed from the previous version; a first version lists the fields that decide entitlements.
        func diff(_ label: String, _ fields: [String: String], against previous: [String: String]?, first: String)
            -> [String]
        {
            guard let previous else {
                let shown = fields.keys.sorted().filter(deciding.contains).map { "\($0) \(fields[$0]!)" }
                return ["      \(label) (\(first)): " + shown.joined(separator: ", ")]
            }
            let changed = fields.keys.sorted().filter { previous[$0] != fields[$0] }
            let gone = previous.keys.sorted().filter { fields[$0] == nil }
            guard !changed.isEmpty || !gone.isEmpty else { return ["      \(label): nothing changed"] }
            let what =
                changed.map { k in previous[k].map { "\(k) \($0) → \(fields[k]!)" } ?? "\(k) \(fields[k]!)" }
                + gone.map { "\($0) \(previous[$0]!) → absent" }
            return ["      \(label): " + what.joined(separator: ", ")]
        }
        func transaction(_ t: JWSTransactionDecodedPayload) -> [String] {
            let f = fields(t, rel: rel)
            defer {
                lastVersion[t.transactionId] = f
                chainsSeen.insert(t.originalTransactionId)
            }
            let previous = lastVersion[t.transactionId]
            let chain = "…\(t.originalTransactionId.suffix(4))"
            return diff(
                previous == nil
                    ? "new transaction …\(t.transactionId.suffix(4))" : "transaction …\(t.transactionId.suffix(4))",
                f, against: previous,
                first: chainsSeen.contains(t.originalTransactionId)
                    ? "in chain \(chain)" : "the first of chain \(chain)")
        }
        func renewal(_ r: JWSRenewalInfoDecodedPayload) -> [String] {
            let f = fields(r, rel: rel)
            defer { lastRenewal[r.originalTransactionId] = f }
            return diff(
                "renewal info of …\(r.originalTransactionId.suffix(4))", f,
                against: lastRenewal[r.originalTransactionId], first: "the chain's first")
        }
        for (i, s) in c.steps.enumerated() where i <= step {
            guard case .deliver(let d) = s else { continue }
            if i == race?.firstStep {
                out.append("    \(rel(d.arrival)) from here on, sent by two concurrent clients at once")
            }
            out.append("    \(rel(d.arrival)) \(Timeline.describe(d, names: names))")
            if let f = d.forgery { out.append("      forged (\(f.rawValue)): \(forgedPart(f))") }
            switch d.delivery {
            case .appTransaction(let a): out += transaction(a.transaction)
            case .notification(let n):
                out.append("      notificationUUID …\(n.notificationUUID.suffix(4)), signedDate \(rel(n.signedDate))")
                if let t = n.data?.transactionInfo { out += transaction(t) }
                if let r = n.data?.renewalInfo { out += renewal(r) }
            case .apiSnapshot(let a):
                for t in a.transactions.sorted(by: { $0.purchaseDate < $1.purchaseDate }) { out += transaction(t) }
                for r in a.renewalInfos { out += renewal(r) }
            case .legacyReceipt(let l):
                for chain in l.chains {
                    for t in chain.transactions.sorted(by: { $0.purchaseDate < $1.purchaseDate }) {
                        out += transaction(t)
                    }
                    for r in chain.renewalInfos { out += renewal(r) }
                }
            }
        }
        let stepQuestion: PlannedQuery? =
            if c.steps.indices.contains(step), case .query(let q) = c.steps[step] { q } else { nil }
        if let q = race?.question ?? stepQuestion {
            let after = race == nil ? "" : ", after the race"
            out.append("    \(rel(q.appleTime)) the question\(after): \(names[q.query.userId] ?? q.query.userId)")
        }
        return out
    }

    /// The fields a new transaction or a chain's first renewal info lists under `--explain` (the rest — price,
    /// storefront, ids of other systems — shows only when it changes).
    static let deciding: Set<String> = [
        "productId", "type", "purchaseDate", "expiresDate", "revocationDate", "revocationReason", "inAppOwnershipType",
        "transactionReason", "offerType", "isUpgraded", "quantity", "signedDate", "appAccountToken", "environment",
        "bundleId", "autoRenewProductId", "autoRenewStatus", "isInBillingRetryPeriod", "gracePeriodExpiresDate",
        "expirationIntent", "priceIncreaseStatus", "renewalDate",
    ]
    /// Ids shown by their last four digits, as the timeline shows them.
    static let ids: Set<String> = ["transactionId", "originalTransactionId", "webOrderLineItemId", "appTransactionId"]

    /// Apple's boolean fields of transactions and renewal infos.
    static let booleans: Set<String> = ["isInBillingRetryPeriod", "isUpgraded"]

    /// An artifact's decoded fields in Apple's names, dates relative to the case's first purchase.
    static func fields<T: Encodable>(_ value: T, rel: (Millis) -> String) -> [String: String] {
        guard let data = try? JSONFormat.compact().encode(value),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        var out: [String: String] = [:]
        for (k, v) in object {
            if k.hasSuffix("Date"), let n = v as? NSNumber {
                out[k] = rel(n.int64Value)
            } else if ids.contains(k) {
                out[k] = "…" + String("\(v)".suffix(4))
            } else if booleans.contains(k), let n = v as? NSNumber {
                out[k] = n.boolValue ? "true" : "false"  // JSONSerialization reads JSON booleans as numbers here
            } else {
                out[k] = "\(v)"
            }
        }
        return out
    }
}
