import IAPModel
import IAPSimulator

extension Explanation {
    /// What the validator was given before a step: genuine artifacts only (a forged one counts for nothing).
    struct Facts {
        struct Known {
            var tx: JWSTransactionDecodedPayload
            /// How many times a version of this transaction arrived, and on which channels.
            var deliveries: Int
            var channels: Set<DeliveryChannel>
        }
        /// By transactionId: the version signed last.
        var byId: [String: Known] = [:]
        /// By originalTransactionId: the renewal info signed last.
        var renewals: [String: JWSRenewalInfoDecodedPayload] = [:]
        /// Notifications as (chain, product, type/subtype), in delivery order.
        var notes: [(chain: String, product: String?, kind: String)] = []
        /// Deliveries per notificationUUID.
        var uuidCount: [String: Int] = [:]
        /// transactionId → the user an app submission linked it to.
        var submittedBy: [String: String] = [:]
        /// The user an app submission or a receipt linked each chain to, and appAccountToken per chain.
        var chainUser: [String: String] = [:]
        /// Forged artifacts delivered (they count for nothing): class and the chain they name, if any.
        var forged: [(forgery: ForgeryClass, chain: String?, what: String)] = []
        /// The most pages a history answer about each chain took.
        var historyPages: [String: Int] = [:]
        /// verifyReceipt answers: when Apple answered, and when the receipt the app sent was made (if earlier).
        var receipts: [(user: String, requestDate: Millis, creation: Millis?)] = []

        init(_ c: GeneratedCase, before step: Int) {
            let names = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
            for s in c.steps.prefix(max(0, step)) {
                guard case .deliver(let d) = s else { continue }
                if let f = d.forgery {
                    forged.append((f, Self.chain(of: d.delivery), Timeline.describe(d, names: names)))
                } else {
                    add(d.delivery)
                }
            }
        }

        mutating func add(_ d: Delivery) {
            switch d {
            case .appTransaction(let a):
                take(a.transaction, via: .app)
                chainUser[a.transaction.originalTransactionId] = a.userId
            case .notification(let n):
                uuidCount[n.notificationUUID, default: 0] += 1
                let tx = n.data?.transactionInfo, r = n.data?.renewalInfo
                if let tx { take(tx, via: .notification) }
                if let r { renew(r) }
                if let chain = tx?.originalTransactionId ?? r?.originalTransactionId {
                    let kind = n.notificationType.rawValue + (n.subtype.map { "/" + $0.rawValue } ?? "")
                    notes.append((chain, tx?.productId ?? r?.productId, kind))
                }
            case .apiSnapshot(let s):
                let pages = HistoryResponse.pages(forTransactions: s.transactions.count)
                for chain in Set(s.transactions.map(\.originalTransactionId)) {
                    historyPages[chain] = max(historyPages[chain] ?? 0, pages)
                }
                for t in s.transactions { take(t, via: .api) }
                for r in s.renewalInfos { renew(r) }
            case .legacyReceipt(let l):
                receipts.append((l.userId, l.requestDate, l.receiptCreationDate))
                for chain in l.chains {
                    for t in chain.transactions {
                        take(t, via: .legacy)
                        chainUser[t.originalTransactionId] = l.userId
                    }
                    for r in chain.renewalInfos { renew(r) }
                }
            }
        }

        static func chain(of d: Delivery) -> String? {
            switch d {
            case .appTransaction(let a): a.transaction.originalTransactionId
            case .notification(let n):
                n.data?.transactionInfo?.originalTransactionId ?? n.data?.renewalInfo?.originalTransactionId
            case .apiSnapshot(let s): s.originalTransactionId
            case .legacyReceipt: nil
            }
        }

        /// Notification kinds about the user's other chains (what a validator may wrongly apply to this one).
        func notifications(otherThan chain: String, user: String) -> [String] {
            var kinds: [String] = []
            for n in notes where n.chain != chain && (chainUser[n.chain] == user || chainUser[n.chain] == nil) {
                let about = "\(n.kind) about \(n.product ?? "another chain")"
                if !kinds.contains(about) { kinds.append(about) }
            }
            return kinds
        }

        mutating func take(_ t: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
            var k = byId[t.transactionId] ?? Known(tx: t, deliveries: 0, channels: [])
            if t.signedDate >= k.tx.signedDate { k.tx = t }
            k.deliveries += 1
            k.channels.insert(channel)
            byId[t.transactionId] = k
        }

        mutating func renew(_ r: JWSRenewalInfoDecodedPayload) {
            if let old = renewals[r.originalTransactionId], old.signedDate > r.signedDate { return }
            renewals[r.originalTransactionId] = r
        }

        /// The user's transactions of a product, by purchaseDate: those whose chain an app submission or receipt
        /// linked to the user, or whose appAccountToken is the user (family shares carry the member's).
        func transactions(of product: String, user: String) -> [Known] {
            byId.values.filter { k in
                k.tx.productId == product
                    && (chainUser[k.tx.originalTransactionId] == user || k.tx.appAccountToken == user
                        || (chainUser[k.tx.originalTransactionId] == nil && k.tx.appAccountToken == nil))
            }.sorted { ($0.tx.purchaseDate, $0.tx.transactionId) < ($1.tx.purchaseDate, $1.tx.transactionId) }
        }

        func chain(_ otid: String) -> [Known] {
            byId.values.filter { $0.tx.originalTransactionId == otid }.sorted {
                ($0.tx.purchaseDate, $0.tx.transactionId) < ($1.tx.purchaseDate, $1.tx.transactionId)
            }
        }

        /// Notification kinds about a chain or a product, each once with a count when repeated.
        func notifications(about chain: String, product: String) -> [String] {
            var counts: [(String, Int)] = []
            for n in notes where n.chain == chain || n.product == product {
                if let i = counts.firstIndex(where: { $0.0 == n.kind }) {
                    counts[i].1 += 1
                } else {
                    counts.append((n.kind, 1))
                }
            }
            return counts.map { $0.1 > 1 ? "\($0.0) ×\($0.1) (notificationUUIDs as delivered)" : $0.0 }
        }

        /// A transaction's deciding fields, in Apple's names.
        func describe(_ k: Known, rel: (Millis) -> String) -> String {
            let t = k.tx
            var f = ["transactionId …\(t.transactionId.suffix(4))", "purchaseDate \(rel(t.purchaseDate))"]
            if let e = t.expiresDate { f.append("expiresDate \(rel(e))") }
            f.append(t.revocationDate.map { "revocationDate \(rel($0))" } ?? "not revoked (no revocationDate)")
            if let r = t.revocationReason { f.append("revocationReason \(r.rawValue)") }
            f.append("inAppOwnershipType \(t.inAppOwnershipType.rawValue)")
            if let r = t.transactionReason { f.append("transactionReason \(r.rawValue)") }
            if let o = t.offerType { f.append("offerType \(o.rawValue)") }
            if t.isUpgraded == true { f.append("isUpgraded true") }
            if let q = t.quantity, q != 1 { f.append("quantity \(q)") }
            f.append("signedDate \(rel(t.signedDate))")
            f.append(t.appAccountToken == nil ? "no appAccountToken" : "appAccountToken set")
            if t.originalTransactionId != t.transactionId {
                f.append("originalTransactionId …\(t.originalTransactionId.suffix(4))")
            }
            let via = k.channels.map(\.protocolName).sorted().joined(separator: "+")
            f.append(k.deliveries > 1 ? "transactionId delivered \(k.deliveries) times (\(via))" : "via \(via)")
            return f.joined(separator: ", ")
        }
    }
}
