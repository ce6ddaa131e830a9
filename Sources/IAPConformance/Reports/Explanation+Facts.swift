import IAPModel
import IAPSimulator

extension Explanation {
    /// What the validator was given before a step about one person: genuine artifacts only (a forged one counts for
    /// nothing), each delivery taken as the person it was made for (a family member's share is theirs).
    package struct Facts {
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
        /// By originalTransactionId: how many renewal infos of the chain arrived, and on which channels.
        var renewalDeliveries: [String: (count: Int, channels: Set<DeliveryChannel>)] = [:]
        /// Notifications as (chain, product, type/subtype, notificationUUID), in delivery order.
        var notes: [(chain: String, product: String?, kind: String, uuid: String)] = []
        /// Chains with a delivery for another person (their notifications are not this person's).
        var othersChains: Set<String> = []
        /// Deliveries per notificationUUID.
        var uuidCount: [String: Int] = [:]
        /// Forged artifacts delivered (they count for nothing): class and the chain they name, if any.
        var forged: [(forgery: ForgeryClass, chain: String?, what: String)] = []
        /// The most pages a history answer about each chain took.
        var historyPages: [String: Int] = [:]
        /// verifyReceipt answers: when Apple answered, and when the receipt the app sent was made (if earlier).
        var receipts: [(requestDate: Millis, creation: Millis?)] = []

        /// No facts yet (``add(_:)`` gives them).
        package init() {}

        package init(_ c: GeneratedCase, before step: Int, person: Int?) {
            let names = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
            for s in c.steps.prefix(max(0, step)) {
                guard case .deliver(let d) = s else { continue }
                if let person, d.person != person {
                    if d.forgery == nil, let chain = Self.chain(of: d.delivery) { othersChains.insert(chain) }
                    continue
                }
                if let f = d.forgery {
                    forged.append((f, Self.chain(of: d.delivery), Timeline.describe(d, names: names)))
                } else {
                    add(d.delivery)
                }
            }
        }

        package mutating func add(_ d: Delivery) {
            switch d {
            case .appTransaction(let a):
                take(a.transaction, via: .app)
            case .notification(let n):
                uuidCount[n.notificationUUID, default: 0] += 1
                let tx = n.data?.transactionInfo, r = n.data?.renewalInfo
                if let tx { take(tx, via: .notification) }
                if let r { renew(r, via: .notification) }
                if let chain = tx?.originalTransactionId ?? r?.originalTransactionId {
                    let kind = n.notificationType.rawValue + (n.subtype.map { "/" + $0.rawValue } ?? "")
                    notes.append((chain, tx?.productId ?? r?.productId, kind, n.notificationUUID))
                }
            case .apiSnapshot(let s):
                let pages = HistoryResponse.pages(forTransactions: s.transactions.count)
                for chain in Set(s.transactions.map(\.originalTransactionId)) {
                    historyPages[chain] = max(historyPages[chain] ?? 0, pages)
                }
                for t in s.transactions { take(t, via: .api) }
                for r in s.renewalInfos { renew(r, via: .api) }
            case .legacyReceipt(let l):
                receipts.append((l.requestDate, l.receiptCreationDate))
                for chain in l.chains {
                    for t in chain.transactions {
                        take(t, via: .legacy)
                    }
                    for r in chain.renewalInfos { renew(r, via: .legacy) }
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

        /// Notification kinds about the person's other chains (what a validator may wrongly apply to this one).
        func notifications(otherThan chain: String) -> [String] {
            var kinds: [String] = []
            for n in notes where n.chain != chain && !othersChains.contains(n.chain) {
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

        package mutating func renew(_ r: JWSRenewalInfoDecodedPayload, via channel: DeliveryChannel) {
            renewalDeliveries[r.originalTransactionId, default: (0, [])].count += 1
            renewalDeliveries[r.originalTransactionId, default: (0, [])].channels.insert(channel)
            renew(r)
        }

        /// `, via notification+api-snapshot` (or `, 3 renewal infos via …`): which channels carried a chain's
        /// renewal infos, as a transaction's line says.
        func renewalChannels(_ chain: String) -> String {
            guard let d = renewalDeliveries[chain] else { return "" }
            let via = d.channels.map(\.protocolName).sorted().joined(separator: "+")
            return d.count > 1 ? ", \(d.count) renewal infos delivered (\(via))" : ", via \(via)"
        }

        package mutating func renew(_ r: JWSRenewalInfoDecodedPayload) {
            if let old = renewals[r.originalTransactionId], old.signedDate > r.signedDate { return }
            renewals[r.originalTransactionId] = r
        }

        /// The person's transactions of a product, by purchaseDate.
        func transactions(of product: String) -> [Known] {
            byId.values.filter { $0.tx.productId == product }.sorted {
                ($0.tx.purchaseDate, $0.tx.transactionId) < ($1.tx.purchaseDate, $1.tx.transactionId)
            }
        }

        func chain(_ otid: String) -> [Known] {
            byId.values.filter { $0.tx.originalTransactionId == otid }.sorted {
                ($0.tx.purchaseDate, $0.tx.transactionId) < ($1.tx.purchaseDate, $1.tx.transactionId)
            }
        }

        /// Notification kinds about a chain, in order, each once: `×2` for two notifications of the kind, and how
        /// often one notificationUUID came again (a retry or a duplicate).
        func notifications(about chain: String) -> [String] {
            var kinds: [(kind: String, uuids: [String], deliveries: Int)] = []
            for n in notes where n.chain == chain {
                if let i = kinds.firstIndex(where: { $0.kind == n.kind }) {
                    if !kinds[i].uuids.contains(n.uuid) { kinds[i].uuids.append(n.uuid) }
                    kinds[i].deliveries += 1
                } else {
                    kinds.append((n.kind, [n.uuid], 1))
                }
            }
            return kinds.map { k in
                let many = k.uuids.count > 1 ? " ×\(k.uuids.count)" : ""
                let again = k.deliveries - k.uuids.count
                return k.kind + many + (again > 0 ? " (a notificationUUID delivered again \(again)×)" : "")
            }
        }

        /// A transaction's deciding fields, in Apple's names.
        func describe(_ k: Known, rel: (Millis) -> String) -> String {
            let t = k.tx
            var f = ["transactionId …\(t.transactionId.suffix(4))", "purchaseDate \(rel(t.purchaseDate))"]
            if let e = t.expiresDate { f.append("expiresDate \(rel(e))") }
            f.append(t.revocationDate.map { "revocationDate \(rel($0))" } ?? "not revoked (no revocationDate)")
            if t.revocationDate != nil {
                // What a refund took: its reason, and for a prorated one its share (every field, absent ones too).
                f.append("revocationReason \(t.revocationReason.map { String($0.rawValue) } ?? "absent")")
                f.append("revocationType \(t.revocationType.map { String(describing: $0.rawValue) } ?? "absent")")
                f.append("revocationPercentage \(t.revocationPercentage.map { String($0) } ?? "absent")")
            }
            f.append("inAppOwnershipType \(t.inAppOwnershipType.rawValue)")
            f.append("transactionReason \(t.transactionReason.map { String($0.rawValue) } ?? "absent")")
            f.append("offerType \(t.offerType.map { String($0.rawValue) } ?? "absent")")
            if let o = t.offerIdentifier { f.append("offerIdentifier \(o)") }
            f.append("isUpgraded \(t.isUpgraded.map(String.init) ?? "absent")")
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
