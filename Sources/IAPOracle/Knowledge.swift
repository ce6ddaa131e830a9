import IAPModel
import IAPSupport

/// The facts a validator could know: every accepted delivery merged (docs/semantics.md#knowledge-model, #ordering-and-duplicates).
///
/// Transactions merge per `transactionId` and renewal info per `originalTransactionId`, keeping the version with
/// the larger `signedDate`; duplicates are idempotent; a delivery from another environment, bundle or app is not
/// accepted. Linkage of chains to users comes from app submissions (`userId`) and from `appAccountToken`.
public struct Knowledge: Sendable {
    public let config: ValidatorConfig
    public private(set) var transactions: [String: JWSTransactionDecodedPayload] = [:]
    public private(set) var renewals: [String: JWSRenewalInfoDecodedPayload] = [:]
    /// originalTransactionId → user, from app submissions (first submission wins).
    public private(set) var submittedBy: [String: String] = [:]
    /// Every version seen, oldest signed first: what a validator that keeps history has (see ``asOf(_:)``).
    private var transactionVersions: [String: [JWSTransactionDecodedPayload]] = [:]
    private var renewalVersions: [String: [JWSRenewalInfoDecodedPayload]] = [:]
    /// Renewal info (chain → `signedDate`s) that came in a `GRACE_PERIOD` notification without a grace date: the
    /// notification says grace, the renewal info gives none (see ``Oracle/Reading/graceFromSubtype``).
    public private(set) var graceClaims: [String: Set<Millis>] = [:]
    /// The latest `signedDate` of anything merged.
    public private(set) var newestSignedDate: Millis = .min
    /// What the oracle derives from these facts, kept until a fact it depends on arrives (Knowledge+Derived.swift:
    /// the caching, apart from the rules).
    var memo = Memo()

    /// What the oracle looks up in the catalog on every answer, indexed once (the config never changes).
    let catalogIndex: CatalogIndex

    public init(config: ValidatorConfig) {
        self.config = config
        catalogIndex = CatalogIndex(config.catalog)
    }

    /// Why a delivery must be rejected, or nil when it is genuine for this app.
    public func rejection(_ d: Delivery) -> String? {
        let c = config.catalog
        func check(_ tx: JWSTransactionDecodedPayload) -> String? {
            if tx.bundleId != c.bundleId { return "bundleId \(tx.bundleId) is not \(c.bundleId)" }
            if tx.environment != c.environment { return "environment \(tx.environment) is not \(c.environment)" }
            return nil
        }
        func check(_ r: JWSRenewalInfoDecodedPayload) -> String? {
            r.environment != c.environment ? "renewal info environment \(r.environment) is not \(c.environment)" : nil
        }
        switch d {
        case .appTransaction(let s): return check(s.transaction)
        case .notification(let n):
            // The app is named in `data`, or in `summary` / `externalPurchaseToken` when there is no `data`.
            guard let app = n.app else { return "names no app" }
            if app.bundleId != c.bundleId { return "bundleId \(app.bundleId ?? "none") is not \(c.bundleId)" }
            if app.environment != c.environment {
                return "environment \(app.environment.map { "\($0)" } ?? "none") is not \(c.environment)"
            }
            // Apple's verifiers compare the app's id in Production only (an app in development may have none).
            if c.environment == .production, let id = app.appAppleId, id != c.appAppleId {
                return "appAppleId \(id) is not \(c.appAppleId)"
            }
            return n.data?.transactionInfo.flatMap(check) ?? n.data?.renewalInfo.flatMap(check)
        case .apiSnapshot(let s):
            return s.transactions.lazy.compactMap(check).first ?? s.renewalInfos.lazy.compactMap(check).first
        case .legacyReceipt(let l):
            if l.bundleId != c.bundleId { return "bundle_id \(l.bundleId) is not \(c.bundleId)" }
            if l.environment != c.environment { return "environment \(l.environment) is not \(c.environment)" }
            return nil
        }
    }

    /// Merges a delivery; returns false (and learns nothing) when it must be rejected.
    @discardableResult
    public mutating func learn(_ d: Delivery) -> Bool {
        guard rejection(d) == nil else { return false }
        switch d {
        case .appTransaction(let s):
            merge(s.transaction)
            link(chain: s.transaction.originalTransactionId, to: s.userId)
        case .notification(let n):
            if let tx = n.data?.transactionInfo { merge(tx) }
            if let r = n.data?.renewalInfo {
                merge(r)
                if n.subtype == .gracePeriod && r.gracePeriodExpiresDate == nil,
                    !graceClaims[r.originalTransactionId, default: []].contains(r.signedDate)
                {
                    forget(.renewal)
                    graceClaims[r.originalTransactionId, default: []].insert(r.signedDate)
                }
            }
        case .apiSnapshot(let s):
            for tx in s.transactions { merge(tx) }
            for r in s.renewalInfos { merge(r) }
        case .legacyReceipt(let l):
            // The receipt is the user's own: every chain in it belongs to them.
            for chain in l.chains {
                for tx in chain.transactions { merge(tx) }
                // What `pending_renewal_info` can say: it has no renewal date.
                for var r in chain.renewalInfos {
                    r.renewalDate = nil
                    merge(r)
                }
                link(chain: chain.originalTransactionId, to: l.userId)
            }
        }
        return true
    }

    /// Links a chain to a user without a delivery (for the harness's own truth tests).
    public mutating func link(chain: String, to user: String) {
        guard submittedBy[chain] == nil else { return }
        forget(.link)
        submittedBy[chain] = user
    }

    public mutating func merge(_ tx: JWSTransactionDecodedPayload) {
        // A version already known (a retry, a duplicate, the same fact by another channel) changes nothing.
        guard Self.insert(tx, into: &transactionVersions[tx.transactionId, default: []], signed: \.signedDate) else {
            return
        }
        // Its chain, and the chain of the version it replaces should that name another.
        let replaced = transactions[tx.transactionId]?.originalTransactionId
        forget(.transaction(chains: [tx.originalTransactionId] + (replaced.map { [$0] } ?? [])))
        newestSignedDate = max(newestSignedDate, tx.signedDate)
        guard Self.stands(tx, over: transactions[tx.transactionId]) else { return }
        transactions[tx.transactionId] = tx
    }

    public mutating func merge(_ r: JWSRenewalInfoDecodedPayload) {
        guard Self.insert(r, into: &renewalVersions[r.originalTransactionId, default: []], signed: \.signedDate) else {
            return
        }
        forget(.renewal)
        newestSignedDate = max(newestSignedDate, r.signedDate)
        if let old = renewals[r.originalTransactionId], old.signedDate >= r.signedDate { return }
        renewals[r.originalTransactionId] = r
    }

    /// The newest signed version of a transaction stands, whatever order its versions arrive in
    /// (docs/semantics.md#ordering-and-duplicates). So a refund's version replaces the purchase it revokes, and a
    /// refund reversal's version, signed later and without the revocation fields, replaces the refund
    /// (docs/semantics.md#refund-reversal).
    static func stands(_ new: JWSTransactionDecodedPayload, over old: JWSTransactionDecodedPayload?) -> Bool {
        guard let old else { return true }
        return new.signedDate > old.signedDate
    }

    /// Keeps one version per `signedDate`, ordered by it; false when one with that `signedDate` is already kept.
    private static func insert<T>(_ v: T, into list: inout [T], signed: (T) -> Millis) -> Bool {
        let d = signed(v)
        if list.contains(where: { signed($0) == d }) { return false }
        let i = list.firstIndex { signed($0) > d } ?? list.endIndex
        list.insert(v, at: i)
        return true
    }

    /// The facts as a validator that keeps every version would read them at `t`: per transaction and per chain's
    /// renewal info, the newest version signed at or before `t` (the oldest known when all were signed later).
    ///
    /// Equal to `self` unless something was signed after `t`, which happens only when a question is about an
    /// instant before facts the validator already has (a validator clock behind Apple's). There, "the newest
    /// version" and "the version in force at `t`" are both defensible readings (docs/answers.md).
    ///
    /// `perPurchase`: read a purchase known under several transactionIds (a restore) as one: an id first signed
    /// after `t` did not exist at `t`, so when another id of the same purchase did, the purchase is what that one
    /// said at `t` (a validator that keeps versions per purchase reads it so; one that keeps them per id reads
    /// the newer id's oldest version: both are defensible).
    public func asOf(_ t: Millis, perPurchase: Bool = false) -> Knowledge {
        guard newestSignedDate > t else { return self }
        var k = self
        k.forget(.everything)
        for (id, versions) in transactionVersions {
            k.transactions[id] = versions.last { $0.signedDate <= t } ?? versions[0]
        }
        if perPurchase {
            let existed = Set(
                transactionVersions.values.compactMap { v in v[0].signedDate <= t ? Oracle.purchaseKey(of: v[0]) : nil }
            )
            for (id, versions) in transactionVersions where versions[0].signedDate > t {
                if let p = Oracle.purchaseKey(of: versions[0]), existed.contains(p) { k.transactions[id] = nil }
            }
        }
        for (id, versions) in renewalVersions {
            k.renewals[id] = versions.last { $0.signedDate <= t } ?? versions[0]
            let kept = versions.filter { $0.signedDate <= t }
            k.renewalVersions[id] = kept.isEmpty ? [versions[0]] : kept
        }
        k.newestSignedDate = min(newestSignedDate, t)
        return k
    }

    /// Every renewal info of a chain known, oldest signed first (for the reading at an instant, those signed by then).
    public func renewalHistory(_ originalTransactionId: String) -> [JWSRenewalInfoDecodedPayload] {
        renewalVersions[originalTransactionId] ?? []
    }

    /// Transactions of chains linked to `user`.
    public func transactions(of user: String) -> [JWSTransactionDecodedPayload] {
        let linked = chains(of: user)
        return transactions.values.filter { linked.contains($0.originalTransactionId) }
    }

    /// The `originalTransactionId`s of the chains linked to `user`: submitted by them, or carrying their
    /// `appAccountToken`.
    func chains(of user: String) -> Set<String> {
        var linked: Set<String> = []
        for (otid, u) in submittedBy where u == user { linked.insert(otid) }
        for tx in transactions.values where tx.appAccountToken == user { linked.insert(tx.originalTransactionId) }
        return linked
    }
}

/// The catalog as the oracle reads it on every answer: groups and levels by product id, the non-renewing products
/// in catalog order. Built once per ``Knowledge`` (its config is fixed) and shared by every copy of it.
final class CatalogIndex: Sendable {
    struct Placement: Sendable {
        var groupId: String
        var level: Int
    }
    /// A product's group and level (`Int.max` when the catalog gives none), as ``Catalog/product(_:)`` finds it:
    /// the first product of an id. Products in no group are absent.
    let placement: [String: Placement]
    /// The group ids, in catalog order.
    let groupIds: [String]
    /// The non-renewing products (id and duration), in catalog order.
    let nonRenewing: [(id: String, period: Period?)]
    let nonRenewingIds: Set<String>

    init(_ catalog: Catalog) {
        var placement: [String: Placement] = [:]
        var seen: Set<String> = []
        for p in catalog.products where seen.insert(p.id).inserted {
            if let g = p.groupId { placement[p.id] = Placement(groupId: g, level: p.level ?? .max) }
        }
        self.placement = placement
        groupIds = catalog.groups.map(\.id)
        nonRenewing = catalog.products.filter { $0.kind == .nonRenewing }.map { ($0.id, $0.period) }
        nonRenewingIds = Set(nonRenewing.map(\.id))
    }
}
