import IAPModel
import IAPSupport

/// What the oracle derives from a ``Knowledge``, kept until a fact it depends on arrives: the questions of a case
/// come in runs about one user between deliveries. A copy shares it until either copy learns something. The
/// users' transactions (``prepared(_:)``) depend only on transactions and links, so a renewal info leaves them,
/// and a transaction changes only its own chain's preparation; the readings depend on transactions, renewal
/// infos and grace claims.
extension Knowledge {
    /// The derived values, behind one lock. Forgotten in place when no copy shares them (a case's knowledge, learning
    /// one delivery after another), so a fact learned costs no new lock; a copy that shares them gets new ones.
    final class Memo: Sendable {
        struct Values {
            /// Per user, the chains linked to them (``Oracle/Prepared``).
            var prepared: [String: Oracle.Prepared] = [:]
            /// Per chain (`originalTransactionId`), its prepared transactions, whoever it is linked to.
            var chains: [String: Oracle.Prepared.Chain] = [:]
            var readings: [Oracle.Reading]?
        }
        let values: Locked<Values>
        init(_ v: Values = Values()) { values = Locked(v) }
    }

    /// What changed in the facts, for ``forget(_:)``.
    enum Change {
        /// A chain was linked to a user.
        case link
        /// A renewal info or a grace claim.
        case renewal
        /// A transaction version, in these chains.
        case transaction(chains: [String])
        /// Anything: every derived value goes.
        case everything
    }

    /// Forgets what the derived values took from facts that `change` changed.
    mutating func forget(_ change: Change) {
        func apply(_ v: inout Memo.Values) {
            switch change {
            case .link: v.prepared.removeAll(keepingCapacity: true)
            case .renewal: v.readings = nil
            case .transaction(let chains):
                v.prepared.removeAll(keepingCapacity: true)
                for c in chains { v.chains[c] = nil }
                v.readings = nil
            case .everything: v = Memo.Values()
            }
        }
        if isKnownUniquelyReferenced(&memo) {
            memo.values.withLock { apply(&$0) }
        } else {
            var kept = memo.values.withLock { $0 }
            apply(&kept)
            memo = Memo(kept)
        }
    }

    /// The oracle's preparation of `user`'s transactions, made once per version of these facts; of its chains,
    /// only those changed since they were last prepared are prepared again.
    func prepared(_ user: String) -> Oracle.Prepared {
        if let p = memo.values.withLock({ $0.prepared[user] }) { return p }
        let linked = chains(of: user).sorted()
        var chains = memo.values.withLock { v in linked.map { v.chains[$0] } }
        let missing = Set(zip(linked, chains).compactMap { $1 == nil ? $0 : nil })
        if !missing.isEmpty {
            var byChain: [String: [JWSTransactionDecodedPayload]] = [:]
            for tx in transactions.values where missing.contains(tx.originalTransactionId) {
                byChain[tx.originalTransactionId, default: []].append(tx)
            }
            for (i, otid) in linked.enumerated() where chains[i] == nil {
                chains[i] = Oracle.Prepared.Chain(id: otid, transactions: byChain[otid] ?? [])
            }
        }
        let p = Oracle.Prepared(chains: chains.compactMap { $0 })
        memo.values.withLock { v in
            for c in chains where missing.contains(c!.id) { v.chains[c!.id] = c }
            v.prepared[user] = p
        }
        return p
    }

    /// Every reading of these facts (``Oracle/Reading/all(_:)``), made once per version of them.
    var readings: [Oracle.Reading] {
        if let r = memo.values.withLock({ $0.readings }) { return r }
        let r = Oracle.Reading.all(self)
        memo.values.withLock { $0.readings = r }
        return r
    }
}
