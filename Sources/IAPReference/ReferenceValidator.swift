import Foundation
import IAPModel
import IAPValidatorAPI
import IAPVerification

/// The reference validator: a correct, readable backend a real team could copy the ideas from.
///
/// How it works (docs/semantics.md#core-rules, #ordering-and-duplicates):
/// 0. Verify every JWS (``SignedDataVerifier``): the envelope of a notification and, separately, the transaction
///    and renewal info nested in it.
/// 1. Accept only facts for this app: `bundleId`, `appAppleId` and `environment` must match.
/// 2. Drop a notification whose `notificationUUID` was seen before.
/// 3. Store transactions per `transactionId` and renewal info per `originalTransactionId`, keeping the version
///    with the later `signedDate`; never trust arrival order or the notification type.
/// 4. Link a chain to a user through an app submission or the `appAccountToken`.
/// 5. Answer from the stored facts at the asked instant: per subscription chain, take the latest transaction
///    (by `purchaseDate`, skipping `isUpgraded` ones) and derive Apple's status (docs/semantics.md#subscription-status); active and grace entitle.
///
/// It is written independently of the oracle (which unions grant intervals), so the two check each other.
/// Each decision point is a method so that a mutant (the IAPMutants module) can change exactly one of them; the
/// ones no mutant replaces yet live in the extensions (`+Answers`): make one `open` here to write a mutant of it.
open class ReferenceValidator: DecodedDeliveryValidator {
    public struct Chain {
        public var transactions: [String: JWSTransactionDecodedPayload] = [:]
        public var renewal: JWSRenewalInfoDecodedPayload?
        /// Under policy extensionSignedAs `renewal-info`: every renewal info with a renewal date, out of billing
        /// retry, by `signedDate` (an extension may be said only there).
        public var renewalDates: [Millis: JWSRenewalInfoDecodedPayload] = [:]
        public var user: String?
        /// Some purchase of the chain is known under more than one transactionId (see `onePerPurchase`).
        public var severalIdsPerPurchase = false
    }

    open var name: String { "reference" }
    /// What it is checked on: as a validator that declares nothing (its entitlement answers are the same function
    /// of its product answers as the oracle's, so comparing them adds nothing), unless a test or `serve
    /// --answers/--channels` sets a profile to see a validator of that profile (the answers themselves stay whole;
    /// the harness compares what is declared).
    public var profile: ValidatorProfile = .undeclared
    public private(set) var config = ValidatorConfig(catalog: .standard, policy: .default)
    public package(set) var chains: [String: Chain] = [:]
    public private(set) var seenNotifications: Set<String> = []
    /// Consumable credits, once per transaction id: transactionId → (user-linked chain, quantity).
    public var consumableCredits: [String: JWSTransactionDecodedPayload] = [:]
    var productsById: [String: CatalogProduct] = [:]
    /// Each grouped product's group and level (`Int.max` for none), read by the answers without copying products.
    var placementById: [String: (groupId: String, level: Int)] = [:]
    public private(set) var verifier = SignedDataVerifier(trustedRoots: [])

    public init() {}

    /// A notification whose `notificationUUID` was seen is a duplicate: acknowledged, nothing learned from it.
    open var dedupesNotifications: Bool { true }

    /// How strictly JWS are verified (mutants loosen one switch).
    /// `base` is the reference's options under the case's policy (its token size limit, when it declares one).
    open func verifierOptions(_ base: SignedDataVerifier.Options) -> SignedDataVerifier.Options { base }

    open func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        if config.trustedRoots != self.config.trustedRoots || verifier.roots.isEmpty
            || config.policy.tokenSizeLimit != self.config.policy.tokenSizeLimit
        {
            var base = SignedDataVerifier.Options()
            // Without the policy the reference keeps its own 256 KB cap (a hardening choice either verdict passes).
            if let limit = config.policy.tokenSizeLimit { base.maxTokenBytes = limit }
            verifier = SignedDataVerifier(trustedRoots: config.trustedRoots, options: verifierOptions(base))
        }
        self.config = config
        chains = [:]
        seenNotifications = []
        consumableCredits = [:]
        productsById = Dictionary(config.catalog.products.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        placementById = productsById.compactMapValues { p in p.groupId.map { ($0, p.level ?? .max) } }
    }

    public func product(_ id: String) -> CatalogProduct? { productsById[id] }

    // MARK: Ingestion

    /// Called with the validator's clock before each signed delivery is verified (a hook for mutants).
    open func willVerify(now: Millis) {}

    open func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        willVerify(now: now)
        switch delivery {
        case let .appTransaction(userId, jws, deviceTime):
            switch verifyTransaction(jws) {
            case .failure(let f): return .rejected(reason: "transaction: \(f)")
            case .success(let tx):
                return ingestApp(AppTransactionSubmission(userId: userId, transaction: tx, deviceTime: deviceTime))
            }
        case .notification(let signedPayload):
            return ingestSignedNotification(signedPayload)
        case let .apiSnapshot(otid, history, statuses):
            return ingestAPIResponses(originalTransactionId: otid, history: history, statuses: statuses)
        case let .legacyReceipt(userId, body):
            return ingestLegacyReceipt(userId: userId, body: body)
        }
    }

    /// A `verifyReceipt` response: status 0, this app and environment; each entry converted to a transaction
    /// (`cancellation_date` is a refund unless `is_upgraded` says it marks an upgrade), `pending_renewal_info` to
    /// renewal info, all as of `request_date_ms`. Every chain in the receipt is the submitting user's.
    open func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        ingestLegacy(userId: userId, body: body)
    }

    /// One legacy receipt entry as a transaction; nil for a product the catalog does not know.
    open func convertLegacy(
        _ e: LegacyReceiptResponse.InApp, bundleId: String, environment: Environment, requestDate: Millis
    ) -> JWSTransactionDecodedPayload? {
        legacyTransaction(e, bundleId: bundleId, environment: environment, requestDate: requestDate)
    }

    /// History pages and statuses: the app identity of every body, then every signed transaction and renewal info.
    /// Transactions keep the order the pages gave (Apple promises none).
    open func ingestAPIResponses(
        originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?
    ) -> DeliveryVerdict {
        verifyAPIResponses(originalTransactionId: otid, history: history, statuses: statuses)
    }

    public func deliver(decoded delivery: Delivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        switch delivery {
        case .appTransaction(let s): ingestApp(s)
        case .notification(let n): ingestNotification(n)
        case .apiSnapshot(let s): ingestHistory(s)
        case .legacyReceipt(let l):
            ingestDecodedLegacy(l)
        }
    }

    open func verifyTransaction(_ jws: String) -> Result<JWSTransactionDecodedPayload, SignedDataVerifier.Failure> {
        verifier.verify(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
    }

    /// The transaction nested in a notification is a JWS of its own and is verified like any other.
    open func verifyNestedTransaction(_ jws: String) -> Result<JWSTransactionDecodedPayload, SignedDataVerifier.Failure>
    {
        verifyTransaction(jws)
    }

    open func verifyRenewal(_ jws: String) -> Result<JWSRenewalInfoDecodedPayload, SignedDataVerifier.Failure> {
        verifier.verify(jws, as: JWSRenewalInfoDecodedPayload.self) { $0.signedDate }
    }

    /// Verifies the envelope, checks the app, drops a replayed UUID, then verifies the nested JWS separately.
    open func ingestSignedNotification(_ signedPayload: String) -> DeliveryVerdict { verifyNotification(signedPayload) }

    open func ingestApp(_ s: AppTransactionSubmission) -> DeliveryVerdict {
        if let why = rejectTransaction(s.transaction) { return .rejected(reason: why) }
        store(s.transaction, via: .app)
        let otid = s.transaction.originalTransactionId
        if chains[otid]!.user == nil { chains[otid]!.user = s.userId }
        return .accepted
    }

    open func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
        // Every notification names its app: in `data`, or in `summary` / `externalPurchaseToken` (no `data`).
        guard let app = n.app else {
            return .rejected(reason: "notification names no app (no data, summary or externalPurchaseToken)")
        }
        guard let bundleId = app.bundleId, let environment = app.environment else {
            return .rejected(reason: "notification without bundleId or environment")
        }
        if let why = rejectApp(bundleId: bundleId, appAppleId: app.appAppleId, environment: environment) {
            return .rejected(reason: why)
        }
        if let data = n.data {
            if let tx = data.transactionInfo, let why = rejectTransaction(tx) { return .rejected(reason: why) }
            if let r = data.renewalInfo, let why = rejectRenewal(r) { return .rejected(reason: why) }
        }
        // duplicate: done already
        guard seenNotifications.insert(n.notificationUUID).inserted || !dedupesNotifications else { return .accepted }
        // The type is a hint, not state: whatever it says, merge the signed snapshots it carries.
        if let tx = n.data?.transactionInfo { store(tx, via: .notification) }
        if let r = n.data?.renewalInfo { store(r) }
        return .accepted
    }

    /// An App Store Server API answer (the customer's history, in the order of its pages, and statuses).
    open func ingestHistory(_ s: APISnapshot) -> DeliveryVerdict { ingestSnapshot(s) }

    /// Facts about one or more chains, from an API answer or a legacy receipt.
    open func ingestSnapshot(_ s: APISnapshot) -> DeliveryVerdict {
        for tx in s.transactions {
            if let why = rejectTransaction(tx) { return .rejected(reason: why) }
        }
        for r in s.renewalInfos {
            if let why = rejectRenewal(r) { return .rejected(reason: why) }
        }
        for tx in s.transactions { store(tx, via: .api) }
        for r in s.renewalInfos { store(r) }
        return .accepted
    }

    open func rejectApp(bundleId: String, appAppleId: Int64?, environment: Environment) -> String? {
        if bundleId != config.catalog.bundleId { return "wrong bundleId \(bundleId)" }
        // Compared in Production only, as Apple's verifiers do (an app in development may have none).
        if config.catalog.environment == .production, let id = appAppleId, id != config.catalog.appAppleId {
            return "wrong appAppleId \(id)"
        }
        if environment != config.catalog.environment { return "wrong environment \(environment)" }
        return nil
    }

    open func rejectTransaction(_ tx: JWSTransactionDecodedPayload) -> String? {
        rejectApp(bundleId: tx.bundleId, appAppleId: nil, environment: tx.environment)
    }

    open func rejectRenewal(_ r: JWSRenewalInfoDecodedPayload) -> String? {
        r.environment != config.catalog.environment ? "wrong environment \(r.environment)" : nil
    }

    /// Upserts a transaction version and credits a consumable once.
    open func store(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        let replace = chains[tx.originalTransactionId]?.transactions[tx.transactionId].map { old in
            shouldReplace(old.signedDate, with: tx.signedDate, old: old, new: tx)
        }
        // Changed where it is stored: a copy taken out of `chains` would copy its transactions on the first change.
        withChain(tx.originalTransactionId) { chain in
            if replace == nil && Self.repeatsAPurchase(tx, in: chain) { chain.severalIdsPerPurchase = true }
            if replace ?? true { chain.transactions[tx.transactionId] = tx }
        }
        if tx.type == .consumable { creditConsumable(tx, via: channel) }
    }

    open func store(_ r: JWSRenewalInfoDecodedPayload) {
        let replace = chains[r.originalTransactionId]?.renewal.map { old in
            shouldReplace(old.signedDate, with: r.signedDate, old: nil, new: nil)
        }
        let keepsDate =
            config.policy.extensionSignedAs == .renewalInfo && r.renewalDate != nil && r.isInBillingRetryPeriod != true
        withChain(r.originalTransactionId) { chain in
            if keepsDate { chain.renewalDates[r.signedDate] = r }
            if replace ?? true { chain.renewal = r }
        }
    }

    /// Last signed wins (never last arrived).
    open func shouldReplace(
        _ oldSigned: Millis, with newSigned: Millis, old: JWSTransactionDecodedPayload?,
        new: JWSTransactionDecodedPayload?
    ) -> Bool {
        newSigned > oldSigned
    }

    open func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        if let old = consumableCredits[tx.transactionId], old.signedDate >= tx.signedDate { return }
        consumableCredits[tx.transactionId] = tx
    }

    // MARK: Decisions

    open func evaluationInstant(_ q: EntitlementQuery) -> Millis { q.at }

    open func isRevoked(_ tx: JWSTransactionDecodedPayload, at t: Millis) -> Bool { tx.isRevoked(at: t) }

    open func expiry(of tx: JWSTransactionDecodedPayload) -> Millis? { tx.expiresDate }

    /// Where `tx`'s period ends: its expiry, unless (policy extensionSignedAs `renewal-info`) the newest renewal info
    /// of its product signed during the period — before any other known transaction of the chain was bought, also
    /// one bought after the instant asked about — moved the renewal date past it.
    open func periodEnd(of tx: JWSTransactionDecodedPayload, chain otid: String) -> Millis? {
        let own = expiry(of: tx)
        guard config.policy.extensionSignedAs == .renewalInfo, let chain = chains[otid], !chain.renewalDates.isEmpty
        else { return own }
        let said = chain.renewalDates
        let following = chain.transactions.values.lazy.filter { $0.purchaseDate > tx.purchaseDate }.map(\.purchaseDate)
            .min()
        let during = said.filter { signed, r in
            signed >= tx.purchaseDate && (following.map { signed < $0 } ?? true) && r.productId == tx.productId
        }
        guard let newest = during.max(by: { $0.key < $1.key })?.value.renewalDate else { return own }
        return own.map { Swift.max($0, newest) } ?? newest
    }

    /// Half-open validity: from `start` inclusive to `end` exclusive.
    open func covers(start: Millis, end: Millis, at t: Millis) -> Bool { start <= t && t < end }

    /// The chain's current transaction at `t`: the last one purchased at or before `t`.
    ///
    /// Not "the last one without `isUpgraded`": that flag is set when the upgrade happens, so a validator whose
    /// clock is behind Apple's (or that answers for an earlier instant) can hold the flag before the instant it
    /// asks about, when the upgraded transaction was still the current one. The upgrading transaction has the
    /// later `purchaseDate`, so taking the last purchased is right whenever the upgrade is visible at `t`.
    open func latestTransaction(_ txs: [JWSTransactionDecodedPayload], chain otid: String, at t: Millis)
        -> JWSTransactionDecodedPayload?
    {
        txs.last
    }

    /// The chain's transactions as used at `t`: the newest signed version of each. (Keeping every version and
    /// using the one in force at `t` is right too: see `KeepsHistory`.)
    open func transactions(of chain: Chain, chain otid: String, at t: Millis) -> [JWSTransactionDecodedPayload] {
        Array(chain.transactions.values)
    }

    /// A purchase known under several transactionIds (restored, re-granted, seen on a second device) is one
    /// purchase: the ids of one billing period share a `webOrderLineItemId`, the ids of one non-consumable purchase
    /// its chain. Each id takes the content of the purchase's newest signed version, whichever id it came under,
    /// so a refund or upgrade Apple signs under one id holds for all of them.
    open func onePerPurchase(_ txs: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload] {
        let groups = Dictionary(grouping: txs) { tx -> String in
            switch tx.type {
            case .autoRenewable: tx.webOrderLineItemId ?? tx.transactionId
            case .nonConsumable: tx.originalTransactionId
            default: tx.transactionId
            }
        }
        var out: [JWSTransactionDecodedPayload] = []
        for members in groups.values {
            guard members.count > 1,
                let newest = members.max(by: JWSTransactionDecodedPayload.signedBefore)
            else {
                out += members
                continue
            }
            for m in members {
                var same = newest
                same.transactionId = m.transactionId
                out.append(same)
            }
        }
        return out
    }

    /// The renewal info used at `t`: the newest signed.
    open func renewalInfo(of chain: Chain, chain otid: String, at t: Millis) -> JWSRenewalInfoDecodedPayload? {
        chain.renewal
    }

    open func graceEnd(_ renewal: JWSRenewalInfoDecodedPayload?, latest: JWSTransactionDecodedPayload) -> Millis? {
        renewal?.gracePeriodExpiresDate
    }

    /// In billing retry: the flag says so, or (unless the policy reads the flag only) a grace date does
    /// (policy `graceWithoutRetryFlag`, docs/policies.md).
    open func inBillingRetry(_ renewal: JWSRenewalInfoDecodedPayload?) -> Bool {
        guard let renewal else { return false }
        if renewal.isInBillingRetryPeriod == true { return true }
        return config.policy.graceWithoutRetryFlag != .deny && renewal.gracePeriodExpiresDate != nil
    }

    /// Apple's subscription status of a chain at `t` (docs/semantics.md#subscription-status), honouring the refund-scope policy.
    open func status(
        latest: JWSTransactionDecodedPayload, all txs: [JWSTransactionDecodedPayload],
        renewal: JWSRenewalInfoDecodedPayload?, chain otid: String, at t: Millis
    ) -> SubscriptionStatus {
        if isRevoked(latest, at: t) { return .revoked }
        if config.policy.refundScope == .chain,
            txs.contains(where: { isRevoked($0, at: t) && $0.revocationDate! > latest.purchaseDate })
        {
            return .revoked
        }
        if let e = periodEnd(of: latest, chain: otid), covers(start: latest.purchaseDate, end: e, at: t) {
            return .active
        }
        if inBillingRetry(renewal) {
            if let g = graceEnd(renewal, latest: latest), let e = expiry(of: latest), covers(start: e, end: g, at: t) {
                return .billingGracePeriod
            }
            return .billingRetry
        }
        return .expired
    }

    open func isEntitled(_ s: SubscriptionStatus) -> Bool { s == .active || s == .billingGracePeriod }

    /// The product a chain entitles to: the latest transaction's product.
    open func entitledProduct(latest: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?) -> String {
        latest.productId
    }

    open func ownership(_ tx: JWSTransactionDecodedPayload) -> InAppOwnershipType { tx.inAppOwnershipType }

    open func includes(_ tx: JWSTransactionDecodedPayload) -> Bool { true }

    open func nonRenewingEnd(_ tx: JWSTransactionDecodedPayload, start: Millis) -> Millis? {
        product(tx.productId)?.period?.added(to: start)
    }

    /// Intro offer eligibility for a group from the user's own transactions in it (policy `introEligibility`).
    open func introEligible(group: String, own txs: [JWSTransactionDecodedPayload]) -> Bool {
        switch config.policy.introEligibility {
        case .neverReceivedIntro: !txs.contains { $0.offerType == .introductory }
        case .neverSubscribed: txs.isEmpty
        }
    }

    /// Units of each consumable the user holds at `t`: every credited purchase, less what refunds clawed back.
    open func consumableBalance(userId: String, at t: Millis) -> [String: Int] {
        consumableUnits(userId: userId, at: t)
    }

    // MARK: Answers

    /// What the user may use at the asked instant, from the stored facts (see `ReferenceValidator+Answers.swift`).
    open func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer { answer(q) }
}
