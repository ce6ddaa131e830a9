/// A tiny entitlement service: the part of a purchase backend that decides "what may this user use now?".
///
/// It keeps facts that were already verified and decoded (Apple's signed transactions and renewal info; checking
/// the JWS signatures, bundle and environment happens before they get here) and answers from them alone:
/// notification types, arrival order and device clocks decide nothing. Rules (half-open intervals, times in ms):
/// - a subscription transaction grants `[purchaseDate, expiresDate)`, cut at its `revocationDate` and at the
///   `purchaseDate` of a later `PURCHASE` in its chain that starts inside that period (an immediate upgrade or
///   crossgrade); flagged `isUpgraded` before that purchase is known, it ended when the flag was signed;
/// - a Billing Grace Period grants `[expiresDate of the chain's latest transaction, gracePeriodExpiresDate)` while
///   the renewal info says `isInBillingRetryPeriod`; billing retry without grace grants nothing;
/// - a lifetime (non-consumable) purchase grants from its `purchaseDate` until it is revoked;
/// - one purchase known under several transactionIds (a restore) is one purchase: its newest signed version counts;
/// - a chain belongs to the user the app submitted it for, or whose id its `appAccountToken` carries.
public final class EntitlementService {
    public enum ProductKind: Sendable { case autoRenewable, nonConsumable, consumable, nonRenewing }

    /// The fields of Apple's `JWSTransactionDecodedPayload` the answer depends on. Dates in ms since 1970.
    public struct Transaction: Sendable, Hashable {
        public var transactionId: String
        public var originalTransactionId: String
        /// Shared by every transactionId of one billing period (a restore re-issues the period under a new id).
        public var webOrderLineItemId: String?
        public var productId: String
        public var purchaseDate: Int64
        public var expiresDate: Int64?
        public var revocationDate: Int64?
        public var signedDate: Int64
        public var appAccountToken: String?
        public var isUpgraded: Bool
        /// Apple's `transactionReason` (`PURCHASE`, `RENEWAL`), nil when absent.
        public var transactionReason: String?

        public init(
            transactionId: String, originalTransactionId: String, webOrderLineItemId: String?, productId: String,
            purchaseDate: Int64, expiresDate: Int64?, revocationDate: Int64?, signedDate: Int64,
            appAccountToken: String?, isUpgraded: Bool, transactionReason: String?
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.webOrderLineItemId = webOrderLineItemId
            self.productId = productId
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.revocationDate = revocationDate
            self.signedDate = signedDate
            self.appAccountToken = appAccountToken
            self.isUpgraded = isUpgraded
            self.transactionReason = transactionReason
        }
    }

    /// The fields of Apple's `JWSRenewalInfoDecodedPayload` the answer depends on.
    public struct RenewalInfo: Sendable, Hashable {
        public var originalTransactionId: String
        public var isInBillingRetryPeriod: Bool
        public var gracePeriodExpiresDate: Int64?
        public var signedDate: Int64

        public init(
            originalTransactionId: String, isInBillingRetryPeriod: Bool, gracePeriodExpiresDate: Int64?,
            signedDate: Int64
        ) {
            self.originalTransactionId = originalTransactionId
            self.isInBillingRetryPeriod = isInBillingRetryPeriod
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.signedDate = signedDate
        }
    }

    let entitlements: [String: [String]]
    let kinds: [String: ProductKind]
    var transactions: [String: Transaction] = [:]  // transactionId → newest signed version
    var renewals: [String: RenewalInfo] = [:]  // originalTransactionId → newest signed version
    var owners: [String: String] = [:]  // originalTransactionId → user of the first app submission
    /// A deliberate mistake, off by default: revoked (refunded, family-revoked) purchases keep granting.
    public var ignoresRevocation = false

    /// `entitlements`: entitlement id → the products that unlock it; `products`: product id → kind.
    public init(entitlements: [String: [String]], products: [String: ProductKind]) {
        self.entitlements = entitlements
        self.kinds = products
    }

    /// Records a transaction; with `user`, the app submitted it for that logged-in user.
    public func record(transaction tx: Transaction, forUser user: String? = nil) {
        // The version signed last wins, whatever the arrival order; a duplicate changes nothing.
        if transactions[tx.transactionId].map({ $0.signedDate < tx.signedDate }) ?? true {
            transactions[tx.transactionId] = tx
        }
        if let user, owners[tx.originalTransactionId] == nil { owners[tx.originalTransactionId] = user }
    }

    public func record(renewalInfo r: RenewalInfo) {
        if renewals[r.originalTransactionId].map({ $0.signedDate < r.signedDate }) ?? true {
            renewals[r.originalTransactionId] = r
        }
    }

    /// The entitlements `user` may use at `t` (ms), each with when its current grant ends (nil: never).
    public func entitlements(user: String, at t: Int64) -> [String: Int64?] {
        // Per product, the ends of the paid grants in force (nil: lifetime) and of the grace grants.
        var paid: [String: [Int64?]] = [:], grace: [String: [Int64?]] = [:]
        func revoked(_ x: Transaction) -> Bool { !ignoresRevocation && x.revocationDate.map { $0 <= t } ?? false }
        for chain in Dictionary(grouping: purchases(of: user), by: \.originalTransactionId).values {
            let known = chain.filter { $0.purchaseDate <= t }.sorted {
                ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId)
            }
            for x in known where !revoked(x) {
                switch kinds[x.productId] {
                case .nonConsumable: paid[x.productId, default: []].append(nil)
                case .autoRenewable:
                    guard let expires = x.expiresDate else { continue }
                    // Purchases known to come later count too: they say when an upgraded transaction ended.
                    let cut = chain.filter {
                        $0.transactionReason == "PURCHASE" && $0.purchaseDate > x.purchaseDate
                            && $0.purchaseDate < expires
                    }.map(\.purchaseDate).min()
                    var end = min(expires, cut ?? .max)
                    if cut == nil && x.isUpgraded { end = min(end, x.signedDate) }
                    if t < end { paid[x.productId, default: []].append(expires) }
                default: continue  // consumables unlock nothing; non-renewing passes: this app sells none
                }
            }
            guard let latest = known.last(where: { kinds[$0.productId] == .autoRenewable }), !revoked(latest),
                let expires = latest.expiresDate, expires <= t, let renewal = renewals[latest.originalTransactionId],
                renewal.isInBillingRetryPeriod, let graceEnd = renewal.gracePeriodExpiresDate, t < graceEnd
            else { continue }
            grace[latest.productId, default: []].append(graceEnd)
        }
        var out: [String: Int64?] = [:]
        for (id, products) in entitlements {
            // Each product's current grants: its paid ones, or while there are none its grace.
            let ends = Set(products).flatMap { paid[$0] ?? grace[$0] ?? [] }
            if ends.isEmpty { continue }
            let expires: Int64? = ends.contains(nil) ? nil : ends.compactMap { $0 }.max()
            out[id] = expires
        }
        return out
    }

    /// The user's transactions, one per purchase: a billing period or lifetime unlock known under several
    /// transactionIds is read as its newest signed version.
    func purchases(of user: String) -> [Transaction] {
        var chains = Set(owners.filter { $0.value == user }.keys)
        for x in transactions.values where x.appAccountToken == user { chains.insert(x.originalTransactionId) }
        var newest: [String: Transaction] = [:]
        for x in transactions.values where chains.contains(x.originalTransactionId) {
            let key: String =
                switch (kinds[x.productId], x.webOrderLineItemId) {
                case (.autoRenewable, let period?): "period \(x.originalTransactionId) \(period)"
                case (.nonConsumable, _): "lifetime \(x.originalTransactionId)"
                default: "id \(x.transactionId)"
                }
            if let n = newest[key], (n.signedDate, n.transactionId) > (x.signedDate, x.transactionId) { continue }
            newest[key] = x
        }
        return Array(newest.values)
    }
}
