import IAPModel
import IAPSimulator

/// Renders a case as a readable timeline: one line per store event and per delivery, instants relative to the
/// first purchase, then the question that failed with expected and observed answers.
public enum Timeline {
    /// `race`: a parallel-delivery discrepancy's race, marked where it began, with the question asked after it.
    public static func render(
        _ c: GeneratedCase, failingStep: Int?, race: Discrepancy.Race? = nil, indent: String = "  "
    ) -> String {
        var out = header(c, indent: indent)
        out.append(
            "\(indent)store history (Apple time, relative to the first purchase at \(CivilTime.iso8601(c.origin))):")
        for e in c.events { out.append("\(indent)  \(relative(e.time, c)) \(e.summary)") }
        out.append("\(indent)what the validator saw and was asked:")
        out += steps(c, failingStep: failingStep, race: race, indent: indent)
        return out.joined(separator: "\n")
    }

    /// An instant relative to the case's first purchase, padded to a column.
    static func relative(_ t: Millis, _ c: GeneratedCase) -> String {
        let s = CivilTime.relative(t - c.origin)
        return s.padding(toLength: max(s.count, 18), withPad: " ", startingAt: 0)
    }

    /// The app, its grace setting and people; the products the history names, with what makes a product change up,
    /// down or across (the catalog may have been drawn for this case); the entitlements they unlock.
    static func header(_ c: GeneratedCase, indent: String) -> [String] {
        var out: [String] = []
        let grace =
            c.config.catalog.gracePeriod.map { "grace \($0.days) d (\($0.eligibility.rawValue))" } ?? "grace off"
        out.append(
            "\(indent)app: \(c.config.catalog.bundleId) \(c.config.catalog.environment), \(grace); people: "
                + c.persons.map { $0.name + ($0.familyId != nil ? " (family)" : "") }.joined(separator: ", "))
        let cat = c.config.catalog
        let words = Set(
            c.events.flatMap { e in
                e.summary.split { !($0.isLetter || $0.isNumber || ".-_".contains($0)) }.map {
                    String($0.hasSuffix(".") ? $0.dropLast() : $0[...])
                }
            })
        let named = cat.products.filter { words.contains($0.id) }
        if !named.isEmpty {
            out.append(
                "\(indent)products: "
                    + named.map { p in
                        let group = p.groupId.map { g in cat.groups.first { $0.id == g }?.name ?? g }
                        let shape = [
                            group.map { "group \($0)" }, p.level.map { "level \($0)" }, p.period.map(\.description),
                            p.familyShareable ? "family" : nil,
                        ].compactMap { $0 }
                        return p.id + " (" + ([p.kind.rawValue] + shape).joined(separator: ", ") + ")"
                    }.joined(separator: "; "))
        }
        // The entitlements those products unlock, for a validator that answers in entitlements.
        let namedIds = Set(named.map(\.id))
        let unlocked = cat.entitlementList.filter { $0.products.contains(where: namedIds.contains) }
        if !unlocked.isEmpty {
            out.append(
                "\(indent)entitlements: "
                    + unlocked.map { "\($0.id) (\($0.products.joined(separator: ", ")))" }.joined(separator: "; "))
        }
        return out
    }

    /// What the validator saw and was asked, up to the failing step: deliveries (and the lost notifications among
    /// them, in time order: Apple sent them, the validator never got them), kills, and the question that failed.
    static func steps(_ c: GeneratedCase, failingStep: Int?, race: Discrepancy.Race? = nil, indent: String)
        -> [String]
    {
        var out: [String] = []
        let name = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
        let last = failingStep ?? (c.steps.count - 1)
        var deliveries = 0
        var lost = (c.lost ?? []).sorted { $0.signedDate < $1.signedDate }[...]
        func showLost(before t: Millis) {
            while let l = lost.first, l.signedDate <= t {
                let who = c.persons.indices.contains(l.person) ? " for " + c.persons[l.person].name : ""
                out.append(
                    "\(indent)  \(relative(l.signedDate, c)) ✕ lost: notification \(l.kind)\(who) (never delivered)")
                lost = lost.dropFirst()
            }
        }
        for (i, step) in c.steps.enumerated() where i <= last {
            switch step {
            case .deliver(let d):
                showLost(before: d.arrival)
                if i == race?.firstStep {
                    out.append(
                        "\(indent)  \(relative(d.arrival, c)) ⇉ from here on, two concurrent clients sent every delivery below, both at once"
                    )
                }
                out.append("\(indent)  \(relative(d.arrival, c)) \(describe(d, names: name))")
                deliveries += 1
                if c.property == .durableAck && deliveries % 5 == 0 {
                    out.append(
                        "\(indent)  \(relative(d.arrival, c)) ✕ validator killed (SIGKILL) after acknowledging, restarted without reset"
                    )
                }
            case .query(let q):
                showLost(before: q.appleTime)
                if i == last, failingStep != nil, race == nil { out.append(ask(q, c, names: name, indent: indent)) }
            }
        }
        if let q = race?.question {
            showLost(before: q.appleTime)
            out.append(
                ask(q, c, names: name, indent: indent) + " (after the race; the case's own questions were not asked)")
        }
        return out
    }

    /// The question that failed, as a timeline line.
    static func ask(_ q: PlannedQuery, _ c: GeneratedCase, names: [String: String], indent: String) -> String {
        let who = names[q.query.userId] ?? q.query.userId
        var line =
            "\(indent)  \(relative(q.appleTime, c)) ask: what may \(who) use at \(CivilTime.relative(q.query.at - c.origin))?\(q.isHindsight ? " (in hindsight)" : "")"
        if let d = q.query.deviceTime, d != q.query.at {
            line += " (device says \(CivilTime.relative(d - c.origin)))"
        }
        return line
    }

    /// One delivery as a timeline line: channel, kind and the transaction it carries.
    public static func describe(_ d: PlannedDelivery, names: [String: String]) -> String {
        let tag = d.label.isFirstSending ? "" : " [\(d.label)]"
        switch d.delivery {
        case .appTransaction(let s):
            let t = s.transaction
            return
                "app: \(names[s.userId] ?? s.userId) submits \(t.productId) …\(t.transactionId.suffix(4))\(t.inAppOwnershipType == .familyShared ? " (family)" : "")\(tag)"
        case .notification(let n):
            let kind = n.notificationType.rawValue + (n.subtype.map { "/" + $0.rawValue } ?? "")
            var product = ""
            if let t = n.data?.transactionInfo {
                product = " \(t.productId) …\(t.transactionId.suffix(4))"
            } else if let s = n.summary {
                let done: Int64 = s.succeededCount ?? 0, failed: Int64 = s.failedCount ?? 0
                product = " summary: \(s.productId ?? "?"), \(done) extended, \(failed) failed"
            } else if let e = n.externalPurchaseToken {
                product = " token " + (e.externalPurchaseId ?? "?")
            }
            return "notification \(kind)\(product)\(tag)"
        case .apiSnapshot(let s):
            let chains = Set(s.transactions.map(\.originalTransactionId)).count
            let pages = HistoryResponse.pages(forTransactions: s.transactions.count)
            return
                "API: history asked with …\(s.originalTransactionId.suffix(4)) (\(s.transactions.count) transactions of \(chains) chain\(chains == 1 ? "" : "s"), \(pages) page\(pages == 1 ? "" : "s"))\(tag)"
        case .legacyReceipt(let l):
            let n = l.chains.map(\.transactions.count).reduce(0, +)
            return
                "legacy: \(names[l.userId] ?? l.userId)'s receipt via verifyReceipt (\(l.chains.count) chains, \(n) transactions)\(tag)"
        }
    }
}
