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
}
