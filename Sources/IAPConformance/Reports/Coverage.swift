import IAPModel
import IAPSimulator

/// How many cases exercised each scenario family and each notification type/subtype (the check's own
/// statistics: a family nobody generated is a blind spot).
public struct Coverage: Codable, Hashable, Sendable {
    /// Cases per scenario family, 0 for a family the run's catalog allows (``expect(_:)``, which the checker calls
    /// before the first case) that no case made; a family the catalog rules out is absent
    /// (``ScenarioFamily/possible(in:drawsCatalogs:)``).
    public var families: [String: Int] = [:]
    public var notifications: [String: Int] = [:]
    public var properties: [String: Int] = [:]
    /// Cases with a product change in each direction (``ProductMove/directions``: level × duration) that some
    /// case's catalog allows; a direction no pair of products of any case's catalog makes is absent.
    public var productChanges: [String: Int] = [:]
    /// Transactions per customer (every person of every case with at least one), by bucket, with the largest seen.
    public var historySize = Histogram(bounds: [5, 10, 20, 40, 60], lowest: 1)
    /// Pages per App Store Server API history answer delivered (20 transactions a page), by bucket.
    public var apiPages = Histogram(bounds: [1, 2, 3], lowest: 1)

    /// Counts of values in buckets `lowest…b0`, `b0+1…b1`, …, `> last` (a bucket of one value is named by it), and
    /// the largest value.
    public struct Histogram: Codable, Hashable, Sendable {
        public var bounds: [Int]
        public var lowest: Int
        public var buckets: [String: Int] = [:]
        public var max = 0
        public var count = 0

        public init(bounds: [Int], lowest: Int = 0) {
            self.bounds = bounds
            self.lowest = lowest
        }

        public mutating func add(_ v: Int) {
            let key: String
            if let i = bounds.firstIndex(where: { v <= $0 }) {
                let lo = i == 0 ? lowest : bounds[i - 1] + 1
                key = lo >= bounds[i] ? "\(bounds[i])" : "\(lo)-\(bounds[i])"
            } else {
                key = "> \(bounds.last ?? 0)"
            }
            buckets[key, default: 0] += 1
            max = Swift.max(max, v)
            count += 1
        }

        public mutating func merge(_ o: Histogram) {
            for (k, n) in o.buckets { buckets[k, default: 0] += n }
            max = Swift.max(max, o.max)
            count += o.count
        }
    }

    /// The notification type/subtype pairs Apple documents for in-app purchases (docs/semantics.md, the
    /// notification table; Advanced Commerce types left out): coverage lists each, 0 when no case sent it, so a gap
    /// shows instead of hiding.
    public static let documentedNotifications: [String] = [
        "SUBSCRIBED/INITIAL_BUY", "SUBSCRIBED/RESUBSCRIBE", "DID_RENEW", "DID_RENEW/BILLING_RECOVERY",
        "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_PREF/UPGRADE", "DID_CHANGE_RENEWAL_PREF/DOWNGRADE",
        "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED",
        "OFFER_REDEEMED", "OFFER_REDEEMED/INITIAL_BUY", "OFFER_REDEEMED/RESUBSCRIBE", "OFFER_REDEEMED/UPGRADE",
        "OFFER_REDEEMED/DOWNGRADE", "DID_FAIL_TO_RENEW", "DID_FAIL_TO_RENEW/GRACE_PERIOD", "GRACE_PERIOD_EXPIRED",
        "EXPIRED", "EXPIRED/VOLUNTARY", "EXPIRED/BILLING_RETRY", "EXPIRED/PRICE_INCREASE",
        "EXPIRED/PRODUCT_NOT_FOR_SALE",
        "PRICE_INCREASE/PENDING", "PRICE_INCREASE/ACCEPTED", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "CONSUMPTION_REQUEST", "REVOKE", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION/SUMMARY", "RENEWAL_EXTENSION/FAILURE",
        "ONE_TIME_CHARGE", "TEST", "EXTERNAL_PURCHASE_TOKEN/UNREPORTED",
    ]

    public init() {
        for k in Self.documentedNotifications { notifications[k] = 0 }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        families = try c.decode([String: Int].self, forKey: .families)
        notifications = try c.decode([String: Int].self, forKey: .notifications)
        for k in Self.documentedNotifications where notifications[k] == nil { notifications[k] = 0 }
        properties = try c.decode([String: Int].self, forKey: .properties)
        productChanges = try c.decodeIfPresent([String: Int].self, forKey: .productChanges) ?? [:]
        historySize = try c.decodeIfPresent(Histogram.self, forKey: .historySize) ?? historySize
        apiPages = try c.decodeIfPresent(Histogram.self, forKey: .apiPages) ?? apiPages
    }

    /// Counts the families `possible` as blind spots until a case makes them.
    public mutating func expect(_ possible: Set<ScenarioFamily>) {
        for f in possible where families[f.rawValue] == nil { families[f.rawValue] = 0 }
    }

    public mutating func add(_ c: GeneratedCase) {
        for f in c.families { families[f.rawValue, default: 0] += 1 }
        for k in Set(c.notificationKinds) { notifications[k, default: 0] += 1 }
        properties[c.property.rawValue, default: 0] += 1
        // The directions some case's catalog allows (cases draw their catalogs unless one is pinned).
        if productChanges.count < ProductMove.directions.count {
            for d in Self.possibleDirections(c.config.catalog) where productChanges[d] == nil { productChanges[d] = 0 }
        }
        for d in Set(c.events.compactMap { $0.change?.direction(in: c.config.catalog) }) {
            productChanges[d, default: 0] += 1
        }
        for n in c.historySizes ?? [] { historySize.add(n) }
        for case .deliver(let d) in c.steps {
            if case .apiSnapshot(let s) = d.delivery {
                apiPages.add(HistoryResponse.pages(forTransactions: s.transactions.count))
            }
        }
    }

    /// The directions some pair of auto-renewable products of one group makes.
    static func possibleDirections(_ catalog: Catalog) -> Set<String> {
        var out: Set<String> = []
        for g in catalog.groups {
            let ps = catalog.products(inGroup: g.id).filter { $0.kind == .autoRenewable }
            // What `ProductMove.direction(in:)` reads for each id (the catalog's first product of it), found once.
            let found = ps.map { catalog.product($0.id) }
            for i in ps.indices {
                for j in ps.indices where ps[j].id != ps[i].id {
                    if let a = found[i], let b = found[j], let d = ProductMove.direction(from: a, to: b) {
                        out.insert(d)
                    }
                }
            }
        }
        return out
    }

    /// Scenario families the catalog allows that no case exercised, then the product-change directions the catalog
    /// allows that no case made.
    public var missingFamilies: [String] {
        ScenarioFamily.allCases.map(\.rawValue).filter { families[$0] == 0 }
            + ProductMove.directions.filter { productChanges[$0] == 0 }.map { "product change " + $0 }
    }
}
