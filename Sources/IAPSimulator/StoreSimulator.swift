import IAPModel

/// A model of the App Store for one app: executes actions on a virtual clock, records the facts Apple would sign
/// (transaction and renewal-info versions, notifications) and the truth (who may use what, when).
///
/// The simulator is deterministic and takes no random input: the ``HistoryGenerator`` makes every choice and
/// calls the action methods. Every object version is stamped with the instant it was signed, and two versions of
/// one object never share an instant (actions are at least 1 ms apart), so "latest signed wins" is well defined.
public struct StoreSimulator: Sendable {
    public let catalog: Catalog
    public let policy: Policy
    public let persons: [Person]
    public internal(set) var now: Millis
    /// The instant the history starts (its first purchase, when it opens with one).
    public let start: Millis
    public internal(set) var chains: [String: SimChain] = [:]
    public internal(set) var chainOrder: [String] = []
    public internal(set) var txVersions: [String: [JWSTransactionDecodedPayload]] = [:]
    public internal(set) var txOrder: [String] = []
    /// A re-issued transactionId → the transaction it re-issues (see ``restore(_:at:)``).
    public internal(set) var restoredFrom: [String: String] = [:]
    public internal(set) var renewalVersions: [String: [JWSRenewalInfoDecodedPayload]] = [:]
    public internal(set) var notifications: [EmittedNotification] = []
    public internal(set) var creations: [TransactionCreation] = []
    public internal(set) var events: [StoreEvent] = []
    /// The generator's action under way, recorded in the events it makes (nil outside a generator).
    public var currentAction: Int?
    public internal(set) var segments: [TruthSegment] = []
    public internal(set) var marks: [ChainMark] = []
    public internal(set) var ledger: [LedgerEntry] = []
    /// Instant of the first purchase; timelines print instants relative to it.
    public internal(set) var origin: Millis?
    var paidSegment: [String: Int] = [:]
    var graceSegment: [String: Int] = [:]
    /// Segments a refund cut short, for a later reversal: refunded tx → [(segment, original end)].
    var cutByRefund: [String: [RefundCut]] = [:]
    var nextId: Int64 = 0
    var nonRenewingEnd: [String: Millis] = [:]
    /// Transactions a chain-scope refund voids (policy `refundScope: chain`).
    var voided: Set<String> = []
    /// People who left their family during the case.
    public internal(set) var leftFamily: Set<Int> = []

    public static let forever: Millis = 4_102_444_800_000  // 2100-01-01, "no end" for non-consumables

    public init(catalog: Catalog, policy: Policy, persons: [Person], start: Millis) {
        self.catalog = catalog
        self.policy = policy
        self.persons = persons
        self.now = start
        self.start = start
    }

    // MARK: Clock

    /// Moves the clock to `t` (never backwards).
    public mutating func advance(to t: Millis) {
        precondition(t >= now, "time goes forward")
        now = t
    }

    // MARK: Lookup

    public func latest(_ txId: String, at t: Millis = .max) -> JWSTransactionDecodedPayload? {
        txVersions[txId]?.last { $0.signedDate <= t }
    }

    public func latestRenewal(_ chainId: String, at t: Millis = .max) -> JWSRenewalInfoDecodedPayload? {
        renewalVersions[chainId]?.last { $0.signedDate <= t }
    }

    public func chains(of person: Int) -> [SimChain] {
        chainOrder.compactMap { chains[$0] }.filter { $0.person == person }
    }

    public func ownChain(person: Int, group: String) -> SimChain? {
        chains(of: person).last { $0.groupId == group && $0.ownership == .purchased }
    }

    func product(_ id: String) -> CatalogProduct { catalog.product(id)! }

    /// Subscription status of a chain at `t`, as the store would put in a notification's `data.status` (docs/semantics.md#subscription-status).
    public func status(_ c: SimChain, at t: Millis) -> SubscriptionStatus {
        switch c.phase {
        case .active: return (c.expires ?? 0) > t ? .active : .expired
        case .retry(_, let g, _): return (g ?? 0) > t ? .billingGracePeriod : .billingRetry
        case .expired: return .expired
        case .revoked: return .revoked
        }
    }

    // MARK: Primitive recording

    mutating func newId() -> String {
        nextId += 1
        return String(2_000_000_000_000_000 + nextId)
    }

    mutating func newUUID() -> String {
        nextId += 1
        let hex = String(nextId, radix: 16)
        return "5e1f0000-0000-4000-9000-" + String(repeating: "0", count: 12 - hex.count) + hex
    }

    mutating func log(_ person: Int, _ family: ScenarioFamily, _ summary: String, change: ProductMove? = nil) {
        events.append(
            StoreEvent(
                time: now, person: person, family: family, summary: summary, change: change, action: currentAction))
    }

    /// Creates a transaction in chain `cid` (the chain must exist), records its first version and truth.
    @discardableResult
    mutating func makeTransaction(
        chain cid: String, productId: String, purchase: Millis, expires: Millis?, reason: TransactionReason?,
        offer: (OfferType, OfferSpec)?, quantity: Int = 1, inApp: Bool, txId given: String? = nil
    ) -> String {
        var c = chains[cid]!
        let p = product(productId)
        let txId = given ?? newId()
        var tx = JWSTransactionDecodedPayload(
            transactionId: txId, originalTransactionId: c.id,
            webOrderLineItemId: p.kind == .autoRenewable ? newId() : nil, bundleId: catalog.bundleId,
            productId: productId, subscriptionGroupIdentifier: p.groupId, purchaseDate: purchase,
            originalPurchaseDate: c.txIds.first.flatMap { latest($0)?.purchaseDate } ?? purchase,
            expiresDate: expires, quantity: quantity, type: p.kind.wireType, appAccountToken: c.accountToken,
            inAppOwnershipType: c.ownership, signedDate: now, environment: catalog.environment,
            transactionReason: p.kind == .autoRenewable ? reason : .purchase)
        if let (type, spec) = offer {
            tx.offerType = type
            tx.offerIdentifier = spec.id
            tx.offerDiscountType = spec.discountType
            tx.offerPeriod = spec.period.description
        }
        tx.storefront = "USA"
        tx.storefrontId = "143441"
        tx.currency = "USD"
        tx.price = offer?.1.discountType == .freeTrial ? 0 : 4990
        c.txIds.append(txId)
        chains[cid] = c
        txVersions[txId] = [tx]
        txOrder.append(txId)
        creations.append(
            TransactionCreation(transactionId: txId, chainId: cid, person: c.person, time: now, inApp: inApp))
        if origin == nil { origin = purchase }
        // Truth: what is true from now on (a recovered period signed later than its purchaseDate grants from now).
        switch p.kind {
        case .autoRenewable:
            addPaidSegment(tx: txId, chain: c, productId: productId, start: max(purchase, now), end: expires!)
        case .nonConsumable:
            addPaidSegment(tx: txId, chain: c, productId: productId, start: purchase, end: Self.forever)
        case .nonRenewing:
            // Stacking (a policy) starts a purchase where the previous one of the same product ends, refunded or not.
            let key = "\(c.person)/\(productId)"
            let start = policy.nonRenewingStacking ? max(purchase, nonRenewingEnd[key] ?? purchase) : purchase
            let end = p.period!.added(to: start)
            nonRenewingEnd[key] = end
            addPaidSegment(tx: txId, chain: c, productId: productId, start: start, end: end)
        case .consumable:
            ledger.append(
                LedgerEntry(
                    person: c.person, productId: productId, time: purchase, delta: quantity, transactionId: txId,
                    clawback: false))
        }
        mark(cid)
        return txId
    }

    mutating func addPaidSegment(tx: String, chain c: SimChain, productId: String, start: Millis, end: Millis) {
        guard end > start else { return }
        paidSegment[tx] = segments.count
        segments.append(
            TruthSegment(
                person: c.person, productId: productId, chainId: c.id, start: start, end: end, kind: .paid,
                ownership: c.ownership,
                promisedEnd: c.kind == .nonConsumable ? nil : end))
    }

    /// Records where chain `cid` stands from now on (see ``ChainMark``); called after every change of it.
    mutating func mark(_ cid: String) {
        let c = chains[cid]!
        guard let tx = c.currentTx, let start = latest(tx)?.purchaseDate else { return }
        let lapsed: EntitlementState
        if case .revoked = c.phase {
            lapsed = .revoked
        } else if cutByRefund[tx] != nil || voided.contains(tx) {
            lapsed = .revoked
        } else if case .retry = c.phase {
            // Under the policy that reads only the flag, a renewal info without it is not billing retry.
            lapsed =
                c.renewalQuirk == .graceWithoutRetryFlag && policy.graceWithoutRetryFlag == .deny
                ? .expired : .billingRetry
        } else {
            lapsed = .expired
        }
        marks.append(
            ChainMark(
                chainId: cid, person: c.person, time: now, productId: c.productId, periodStart: start, lapsed: lapsed))
    }

    /// Cuts the truth of transaction `tx` at `t` (refund, upgrade, revoke).
    mutating func cutPaid(_ tx: String, at t: Millis) -> (Int, Millis)? {
        guard let i = paidSegment[tx], segments[i].end > t else { return nil }
        let old = segments[i].end
        segments[i].end = max(segments[i].start, t)
        return (i, old)
    }

    /// Signs a new version of `txId`, and the same change of every transactionId that re-issues it: the App
    /// Store keeps one purchase's facts under all its ids (its notifications name only the original one).
    mutating func updateTransaction(_ txId: String, _ change: (inout JWSTransactionDecodedPayload) -> Void) {
        let copies =
            latest(txId).flatMap { chains[$0.originalTransactionId]?.restoredTxIds.filter { restoredFrom[$0] == txId } }
            ?? []
        for id in [txId] + copies {
            var tx = latest(id)!
            change(&tx)
            tx.signedDate = now
            txVersions[id]!.append(tx)
        }
    }

    /// Records the chain's renewal info as of now (auto-renewable chains only).
    mutating func signRenewal(_ cid: String) {
        let c = chains[cid]!
        guard c.kind == .autoRenewable else { return }
        var r = JWSRenewalInfoDecodedPayload(
            originalTransactionId: c.id, productId: c.productId, autoRenewProductId: c.autoRenewProductId,
            autoRenewStatus: c.autoRenew ? .on : .off, signedDate: now, environment: catalog.environment)
        r.expirationIntent = c.expirationIntent
        r.priceIncreaseStatus = c.priceIncrease
        r.renewalDate = c.expires
        r.appAccountToken = c.accountToken
        r.recentSubscriptionStartDate = c.txIds.first.flatMap { latest($0)?.purchaseDate }
        if case .retry(_, let g, _) = c.phase {
            r.isInBillingRetryPeriod = true
            r.gracePeriodExpiresDate = g
        } else {
            r.isInBillingRetryPeriod = false
        }
        mark(cid)
        switch c.renewalQuirk {
        case .graceWithoutRetryFlag: r.isInBillingRetryPeriod = false
        case .gracePeriodWithoutDate: r.gracePeriodExpiresDate = nil
        case .expiredWithoutIntent: r.expirationIntent = nil
        case nil: break
        }
        chains[cid]!.renewalQuirk = nil
        if let o = c.nextOffer {
            r.offerType = o.type
            r.offerIdentifier = o.spec.id
            r.offerDiscountType = o.spec.discountType
            r.offerPeriod = o.spec.period.description
        }
        renewalVersions[cid, default: []].append(r)
    }

    /// Emits a notification about chain `cid` carrying its latest transaction (or `txId`) and renewal info.
    mutating func notify(_ cid: String, _ type: NotificationTypeV2, _ subtype: Subtype? = nil, tx txId: String? = nil) {
        let c = chains[cid]!
        let tx = (txId ?? c.currentTx).flatMap { latest($0) }
        let data = NotificationData(
            appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
            transactionInfo: tx, renewalInfo: c.kind == .autoRenewable ? latestRenewal(cid) : nil,
            status: c.kind == .autoRenewable ? status(c, at: now) : nil)
        let n = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: newUUID(), signedDate: now, data: data)
        notifications.append(EmittedNotification(payload: n, chainId: cid, person: c.person))
    }

    /// Emits a notification about the app rather than a subscription: no `data`, but a `summary` or an
    /// `externalPurchaseToken`.
    mutating func emit(
        _ type: NotificationTypeV2, _ subtype: Subtype, person: Int, summary: NotificationSummary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil
    ) {
        let n = ResponseBodyV2DecodedPayload(
            notificationType: type, subtype: subtype, notificationUUID: newUUID(), signedDate: now, data: nil,
            summary: summary, externalPurchaseToken: externalPurchaseToken)
        notifications.append(EmittedNotification(payload: n, chainId: nil, person: person))
    }

    /// One chain as the API would describe it at `t`: its transactions in Apple's order (ascending by the date the
    /// App Store last modified each, so a refunded old purchase comes after newer ones), each signed at `t`, and its
    /// renewal info. A legacy receipt is built from these.
    public func snapshot(chain cid: String, at t: Millis) -> APISnapshot {
        let c = chains[cid]!
        var r = latestRenewal(cid, at: t)
        r?.signedDate = t
        return APISnapshot(
            originalTransactionId: c.id, transactions: resigned(c.txIds + c.restoredTxIds, at: t), renewalInfo: r)
    }

    /// What the App Store Server API answers at `t` to a request made with a transaction of chain `cid`: the whole
    /// history of the customer who holds it (every chain, every product type, every state, family-shared ones
    /// included) in Apple's order, and the renewal info of every subscription chain they have, all signed at `t`.
    public func history(asking cid: String, at t: Millis) -> APISnapshot {
        let own = chains(of: chains[cid]!.person)
        let renewals = own.filter { $0.kind == .autoRenewable }.compactMap { c -> JWSRenewalInfoDecodedPayload? in
            var r = latestRenewal(c.id, at: t)
            r?.signedDate = t
            return r
        }
        return APISnapshot(
            originalTransactionId: cid, transactions: resigned(own.flatMap { $0.txIds + $0.restoredTxIds }, at: t),
            renewalInfos: renewals)
    }

    /// The versions of `ids` in force at `t`, in Apple's history order, re-signed at `t`.
    private func resigned(_ ids: [String], at t: Millis) -> [JWSTransactionDecodedPayload] {
        ids.compactMap { latest($0, at: t) }
            .sorted {
                ($0.signedDate, $0.purchaseDate, $0.transactionId) < ($1.signedDate, $1.purchaseDate, $1.transactionId)
            }
            .map { v -> JWSTransactionDecodedPayload in
                var v = v
                v.signedDate = t
                return v
            }
    }

    mutating func newChain(
        person: Int, ownership: InAppOwnershipType, productId: String, token: String?, source: String? = nil
    ) -> String {
        let p = product(productId)
        let id = newId()
        var c = SimChain(
            id: id, person: person, ownership: ownership, kind: p.kind, groupId: p.groupId, productId: productId,
            autoRenewProductId: productId)
        c.accountToken = token
        c.source = source
        c.autoRenew = p.kind == .autoRenewable
        chains[id] = c
        chainOrder.append(id)
        return id
    }
}

/// A truth segment a refund cut short: which transaction, which segment, and where it used to end.
struct RefundCut: Hashable, Sendable {
    var tx: String
    var segment: Int
    var end: Millis
}
