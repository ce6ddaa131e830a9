import IAPModel
import IAPSimulator

extension IDNamespace {
    /// The case with every id in this namespace.
    public func apply(_ c: GeneratedCase) -> GeneratedCase {
        var out = c
        out.persons = c.persons.map { p in
            var q = p
            q.accountId = uuid(p.accountId)
            return q
        }
        out.steps = c.steps.map { step in
            switch step {
            case .deliver(let d):
                var e = d
                e.delivery = apply(d.delivery)
                return .deliver(e)
            case .query(let q):
                var r = q
                r.query.userId = uuid(q.query.userId)
                return .query(r)
            }
        }
        return out
    }

    /// The ids a backend without a reset route got for case `c` in this namespace, as a report line: each person's
    /// and the first transactions' (each keeps the digits a timeline shows), so its logs can be searched.
    public func idsLine(_ c: GeneratedCase) -> String {
        var transactions: [String] = []
        for case .deliver(let d) in c.steps {
            let ids: [String] =
                switch d.delivery {
                case .appTransaction(let a): [a.transaction.transactionId]
                case .notification(let n): n.data?.transactionInfo.map { [$0.transactionId] } ?? []
                case .apiSnapshot(let s): s.transactions.map(\.transactionId)
                case .legacyReceipt: []
                }
            for id in ids where !transactions.contains(id) { transactions.append(id) }
        }
        let users = c.persons.map { "\($0.name) = \(uuid($0.accountId))" }
        let shown = transactions.prefix(4).map { "…\($0.suffix(4)) = \(transactionId($0))" }
        return "  ids the backend got in the run shown (no reset route: each run has its own): "
            + (users + shown).joined(separator: ", ") + (transactions.count > 4 ? ", …" : "")
    }
}
