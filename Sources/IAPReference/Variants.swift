import IAPModel
import IAPValidatorAPI

/// Correct validators that read the App Store differently from the reference where Apple leaves room: each must
/// pass every property. They keep the oracle honest — a false failure of one of them is a harness bug — and
/// show users that iapcheck does not demand the reference's own choices.
public enum Variants {
    public struct Entry: Sendable {
        public var name: String
        public var description: String
        public var make: @Sendable () -> ReferenceValidator
    }

    public static func named(_ name: String) -> Entry? { all.first { $0.name == name } }

    public static let all: [Entry] = [
        Entry(
            name: "keeps-history",
            description:
                "keeps every signed version of transactions and renewal info and answers for t from the versions signed at or before t",
            make: { KeepsHistory() }),
        Entry(
            name: "retry-flag-only",
            description:
                "takes a subscription to be in billing retry (and so in grace) only when isInBillingRetryPeriod says so, never from a grace date alone (the reference reads the date)",
            make: { RetryFlagOnly() }),
        Entry(
            name: "paid-first",
            description:
                "while a paid grant (a family share) covers a product in the user's own grace period, answers the paid grant's end and ownership (the reference: the later grace end and PURCHASED)",
            make: { PaidFirst() }),
    ]
}

/// Reads `isInBillingRetryPeriod` alone: a renewal info with a grace date but without the flag is no grace.
/// Differs from the reference only on such self-contradicting renewal info, which the default policy
/// (`graceWithoutRetryFlag: either`) leaves open.
public final class RetryFlagOnly: ReferenceValidator {
    override public var name: String { "variant:retry-flag-only" }
    override public func inBillingRetry(_ renewal: JWSRenewalInfoDecodedPayload?) -> Bool {
        renewal?.isInBillingRetryPeriod == true
    }
}

/// Reads a product's end paid grant first (docs/semantics.md#q18-one-product-several-chains): where the user's own
/// grace and a family share cover the product at once, the share's end and `FAMILY_SHARED`. Differs from the
/// reference only there, which the default policy (`expiresMeaning: either`) leaves open.
public final class PaidFirst: ReferenceValidator {
    override public var name: String { "variant:paid-first" }
    override public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        var c = config
        if c.policy.expiresMeaning == .either { c.policy.expiresMeaning = .paidFirst }
        try super.reset(c)
    }
}

/// Keeps every version of each transaction and of each chain's renewal info, and answers a question about `t`
/// from the newest version signed at or before `t` (the oldest when all were signed later) — as a backend with an
/// append-only event table would. Differs from the reference only for questions about an instant before facts it
/// already holds, where both readings are right.
public final class KeepsHistory: ReferenceValidator {
    override public var name: String { "variant:keeps-history" }
    private var transactionVersions: [String: [JWSTransactionDecodedPayload]] = [:]
    private var renewalVersions: [String: [JWSRenewalInfoDecodedPayload]] = [:]

    override public func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        transactionVersions = [:]
        renewalVersions = [:]
    }

    override public func store(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        super.store(tx, via: channel)
        Self.keep(tx, in: &transactionVersions[tx.transactionId, default: []], signed: tx.signedDate, \.signedDate)
    }

    override public func store(_ r: JWSRenewalInfoDecodedPayload) {
        super.store(r)
        Self.keep(r, in: &renewalVersions[r.originalTransactionId, default: []], signed: r.signedDate, \.signedDate)
    }

    override public func transactions(of chain: Chain, chain otid: String, at t: Millis)
        -> [JWSTransactionDecodedPayload]
    {
        chain.transactions.keys.compactMap { id in
            guard let versions = transactionVersions[id], !versions.isEmpty else { return chain.transactions[id] }
            return versions.last { $0.signedDate <= t } ?? versions[0]
        }
    }

    override public func renewalInfo(of chain: Chain, chain otid: String, at t: Millis) -> JWSRenewalInfoDecodedPayload?
    {
        guard let versions = renewalVersions[otid], !versions.isEmpty else { return chain.renewal }
        return versions.last { $0.signedDate <= t } ?? versions[0]
    }

    private static func keep<T>(_ v: T, in list: inout [T], signed d: Millis, _ date: (T) -> Millis) {
        guard !list.contains(where: { date($0) == d }) else { return }
        list.insert(v, at: list.firstIndex { date($0) > d } ?? list.endIndex)
    }
}
