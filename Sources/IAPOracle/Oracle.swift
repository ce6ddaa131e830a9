import IAPModel

/// The reference entitlement oracle: a pure function of known facts, a user and an instant (docs/semantics.md#grant-intervals, #derived-answers).
///
/// It works with grant intervals: each transaction grants `[purchaseDate, end)`, cut at its revocation and at an
/// immediate product change; grace adds `[expiresDate of the latest, gracePeriodExpiresDate)` while in billing
/// retry. Only transactions purchased at or before `t` exist at `t`. The exact answer format is in
/// `docs/answers.md`.
public enum Oracle {
    struct Grant {
        var productId: String
        var end: Millis?
        var ownership: InAppOwnershipType
        var grace: Bool
        /// A grace grant: the end of the paid period that lapsed (what a paid-through date reports in grace).
        var paidEnd: Millis? = nil
        /// An earlier end the facts already say (a revocation or an immediate product change after the instant
        /// asked about, known to a validator whose clock is behind Apple's): then the expiry is either
        /// (docs/answers.md#what-the-facts-leave-open).
        var knownEnd: Millis? = nil
    }

    /// The expected answer and the parts of it that the known facts do not decide.
    public struct Judgement: Sendable {
        public var answer: EntitlementAnswer
        /// Fields of products, groups and balances on which two readings of the facts disagree: not compared
        /// (the fields on which they agree still are).
        public var undetermined: Set<AnswerDifference.Key>
    }

    /// The answer at `t` and what of it is undetermined. These are left open by the facts or the policy:
    /// - a question about an instant before some fact was signed (the validator's clock is behind Apple's): the
    ///   newest version of a transaction or renewal info and the version in force at `t` are both defensible;
    /// - a transaction flagged `isUpgraded` without its upgrading transaction: when the upgrade happened is
    ///   known only to be before the flagged version was signed;
    /// - a renewal info with a grace date but without the billing-retry flag, under the policy that accepts
    ///   either reading of it; a `GRACE_PERIOD` notification whose renewal info has no grace date;
    /// - an introductory period changed away from at once, under the policy that accepts either reading of it.
    /// Every reading of each is computed; the fields where they differ (a product's state, a group's effective
    /// product) are not compared, every other field is.
    public static func judge(_ k: Knowledge, user: String, at t: Millis) -> Judgement {
        let readings = k.readings
        let (primary, open) = answerAndOpenStates(k, user: user, at: t, reading: readings[0])
        var undetermined = open
        func consider(_ other: EntitlementAnswer) {
            for d in other.answerDifferences(from: primary) {
                undetermined.insert(d.key)
                // A product active in one reading only: its expiry and ownership are open too.
                if d.field == .active {
                    undetermined.insert(.init(subject: d.subject, field: .expiresDate))
                    undetermined.insert(.init(subject: d.subject, field: .ownership))
                }
            }
        }
        for r in readings.dropFirst() { consider(answer(k, user: user, at: t, reading: r)) }
        if k.newestSignedDate > t {
            for past in [k.asOf(t), k.asOf(t, perPurchase: true)] {
                for r in past.readings { consider(answer(past, user: user, at: t, reading: r)) }
            }
        }
        return Judgement(answer: primary, undetermined: undetermined)
    }

    /// One purchase can reach a validator under several transactionIds — a restore, a second device, a re-grant
    /// (docs/answers.md#one-purchase-several-transactionids). A billing period keeps its `webOrderLineItemId`, a
    /// non-consumable purchase its `originalTransactionId`; whatever of the purchase was signed last, under any of
    /// its ids (a refund, an upgrade flag, an extension), is what is known of it, and every id of it says so.
    public static func samePurchase(_ txs: [JWSTransactionDecodedPayload]) -> [JWSTransactionDecodedPayload] {
        // Nearly always every purchase is known under one id: find that out without sorting or copying.
        var seen: Set<PurchaseKey> = []
        seen.reserveCapacity(txs.count)
        var repeated = false
        for x in txs {
            if let p = purchaseKey(of: x), !seen.insert(p).inserted {
                repeated = true
                break
            }
        }
        guard repeated else { return txs }
        var newest: [PurchaseKey: JWSTransactionDecodedPayload] = [:]
        for x in txs.sorted(by: JWSTransactionDecodedPayload.signedBefore) {
            if let p = purchaseKey(of: x) { newest[p] = x }
        }
        return txs.map { x in
            guard let p = purchaseKey(of: x), let n = newest[p], n.transactionId != x.transactionId else { return x }
            var y = n
            y.transactionId = x.transactionId
            return y
        }
    }

    /// The purchase a transaction belongs to, when it can be known under several ids: its billing period (chain and
    /// `webOrderLineItemId`), or its non-consumable purchase (the chain alone); nil for consumables and
    /// non-renewing subscriptions.
    struct PurchaseKey: Hashable {
        var chain: String
        var period: String?
    }

    static func purchaseKey(of x: JWSTransactionDecodedPayload) -> PurchaseKey? {
        if x.type == ProductKind.autoRenewable.wireType {
            return x.webOrderLineItemId.map { PurchaseKey(chain: x.originalTransactionId, period: $0) }
        }
        if x.type == ProductKind.nonConsumable.wireType { return PurchaseKey(chain: x.originalTransactionId) }
        return nil
    }

    /// The answer at `t` under one reading of the facts (by default the policy's).
    public static func answer(_ k: Knowledge, user: String, at t: Millis, reading: Reading? = nil) -> EntitlementAnswer
    {
        answerAndOpenStates(k, user: user, at: t, reading: reading).answer
    }

    /// The answer, and the states it leaves open: an inactive product whose chains end in different states, under
    /// policy `inactiveState` `either` (Apple reports a status per chain; combining them is the app's choice,
    /// docs/semantics.md#q18-one-product-several-chains), and the inactive entitlements it alone could decide.
    static func answerAndOpenStates(_ k: Knowledge, user: String, at t: Millis, reading: Reading? = nil) -> (
        answer: EntitlementAnswer, open: Set<AnswerDifference.Key>
    ) {
        let reading = reading ?? Reading(policy: k.config.policy)
        let prepared = k.prepared(user)
        let all = prepared.all
        // Usually everything known was purchased by t: then no copy.
        let known = all.allSatisfy { $0.purchaseDate <= t } ? all : all.filter { $0.purchaseDate <= t }
        var tally = Tally()
        for c in prepared.chains {
            guard let chain = ChainAt(c, at: t, policy: k.config.policy) else { continue }
            tallyChain(chain, k, reading, into: &tally)
        }
        tallyNonRenewing(known, k, at: t, into: &tally)
        let products = productEntitlements(tally, known: known, reading: reading)
        let answer = EntitlementAnswer(
            products: products, groups: groupEntitlements(products, known: known, k),
            consumables: tally.consumables.map { ConsumableBalance(productId: $0.key, balance: $0.value) },
            entitlements: k.config.catalog.entitlementGrants(from: products))
        return (answer, openFields(answer, tally, k.config))
    }
}
