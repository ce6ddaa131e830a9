import IAPModel

extension Oracle {
    /// How to read a fact the known facts leave open. Every reading is consistent with what the validator was
    /// given; where two readings answer differently, the answer is not determined (see ``judge(_:user:at:)``).
    public struct Reading: Sendable, Hashable {
        /// A transaction flagged `isUpgraded` whose upgrading transaction is unknown: the upgrade happened at some
        /// instant between its purchase and the signing of the flagged version. `false`: it grants until that
        /// signing; `true`: it grants nothing.
        public var upgradedGrantsNothing = false
        /// A renewal info with a `gracePeriodExpiresDate` but `isInBillingRetryPeriod` false contradicts itself
        /// (policy `graceWithoutRetryFlag`). `true`: the grace date says the chain is in billing retry, in grace
        /// until that date; `false`: only the flag says so.
        public var graceDateMeansRetry = true
        /// A `GRACE_PERIOD` notification whose renewal info has no grace date. `false` (the rule): no date, no
        /// grace. `true`: the subtype's word ("continue to provide service through the grace period") grants it
        /// while that renewal info is the one in force — a reading a notification-driven validator may take.
        public var graceFromSubtype = false
        /// An introductory-offer transaction changed away from at once (policy `upgradeDuringIntro`). `false`:
        /// the change ends it like any period; `true`: it keeps granting its product until its own expiry.
        public var introOutlivesChange = false
        /// The user's own grace period while a paid grant (a family share) covers the same product
        /// (docs/semantics.md#q18-one-product-several-chains): Apple says to keep giving service through the grace
        /// period and nothing about which grant a backend reports. `access-end`: the later end of the two, the user's
        /// own ownership; `paid-first`: the paid grant's end and ownership, grace only once no paid grant covers;
        /// `paid-through`: as paid-first, and in grace alone the end of the lapsed paid period (policy expiresMeaning).
        public var expiresMeaning: Policy.ExpiresMeaning = .accessEnd
        public init(
            upgradedGrantsNothing: Bool = false, graceDateMeansRetry: Bool = true, graceFromSubtype: Bool = false,
            introOutlivesChange: Bool = false, expiresMeaning: Policy.ExpiresMeaning = .accessEnd
        ) {
            self.upgradedGrantsNothing = upgradedGrantsNothing
            self.graceDateMeansRetry = graceDateMeansRetry
            self.graceFromSubtype = graceFromSubtype
            self.introOutlivesChange = introOutlivesChange
            self.expiresMeaning = expiresMeaning
        }

        /// The reading a policy asks for where it decides (the first of several where it leaves the choice open).
        public init(policy: Policy) {
            self.init(
                graceDateMeansRetry: policy.graceWithoutRetryFlag != .deny,
                introOutlivesChange: policy.upgradeDuringIntro == .union,
                expiresMeaning: policy.expiresMeaning == .either ? .accessEnd : policy.expiresMeaning)
        }

        /// Every reading of the facts in `k`: the policy's first, then the others where the facts or the policy
        /// leave a choice.
        static func all(_ k: Knowledge) -> [Reading] {
            var rs = [Reading(policy: k.config.policy)]
            if k.transactions.values.contains(where: { $0.isUpgraded == true }) {
                rs += rs.map {
                    var r = $0; r.upgradedGrantsNothing = true; return r
                }
            }
            if k.config.policy.graceWithoutRetryFlag == .either,
                k.renewals.values.contains(where: {
                    $0.isInBillingRetryPeriod != true && $0.gracePeriodExpiresDate != nil
                })
            {
                rs += rs.map {
                    var r = $0; r.graceDateMeansRetry.toggle(); return r
                }
            }
            if !k.graceClaims.isEmpty {
                rs += rs.map {
                    var r = $0; r.graceFromSubtype = true; return r
                }
            }
            // Only where an introductory period was (or may have been) changed away from: an upgrade flag or a
            // later purchase in its chain.
            var introChains: Set<String> = []
            if k.config.policy.upgradeDuringIntro == .either {
                for x in k.transactions.values where x.offerType == .introductory && x.type == .autoRenewable {
                    introChains.insert(x.originalTransactionId)
                }
            }
            if !introChains.isEmpty,
                k.transactions.values.contains(where: {
                    introChains.contains($0.originalTransactionId)
                        && ($0.isUpgraded == true
                            || ($0.transactionReason == .purchase && $0.offerType != .introductory))
                })
            {
                rs += rs.map {
                    var r = $0; r.introOutlivesChange = true; return r
                }
            }
            // Only where a share and a grace date may meet: a family-shared transaction and a renewal info with a
            // grace date (the grant rules then decide whether they cover one product at one instant); a policy
            // that says what the end means (expiresMeaning) leaves no choice.
            if k.config.policy.expiresMeaning == .either,
                k.transactions.values.contains(where: { $0.inAppOwnershipType == .familyShared }),
                k.renewals.values.contains(where: { $0.gracePeriodExpiresDate != nil })
            {
                rs += rs.map {
                    var r = $0; r.expiresMeaning = .paidFirst; return r
                }
            }
            return rs
        }
    }
}
