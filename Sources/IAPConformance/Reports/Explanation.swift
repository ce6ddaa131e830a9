import IAPModel
import IAPSimulator

/// The facts behind an expectation (docs/check.md#reading-an-explanation): for each product, group or entitlement that
/// differs, the signed fields the oracle's answer rests on — the transactions of the product the validator had by
/// the question, the renewal info of their chain, the notifications about it — and for a wrong verdict, what was
/// forged or why the artifact was genuine. Instants are relative to the case's first purchase, as in the timeline.
public enum Explanation {
    /// Lines under a discrepancy: one block per differing subject (at most three), or the verdict's artifact.
    public static func lines(_ d: Discrepancy, in c: GeneratedCase) -> [String] {
        // After a race, everything was delivered before the question.
        let before = d.race == nil ? d.step : c.steps.count
        var known = Facts(c, before: before, person: d.question(in: c)?.person)
        // What the backend fetched from the API of its own accord, the oracle learned too (channel api).
        let served = (d.servedByAPI?.entries ?? []).filter { $0.step <= before }
        for entry in served { known.add(.apiSnapshot(entry.facts)) }
        switch d.kind {
        case .verdict:
            guard c.steps.indices.contains(d.step), case .deliver(let delivery) = c.steps[d.step] else { return [] }
            return verdict(delivery, expected: d.expected, known: known, origin: c.origin)
        case .answer:
            guard let q = d.question(in: c) else { return [] }
            var out: [String] = []
            if !served.isEmpty {
                out.append(
                    "  the backend asked Apple's API at \(served.count) step\(served.count == 1 ? "" : "s") before the question: what it was served counts below (channel api), as the oracle learned it too"
                )
            }
            var seen: Set<String> = [], explained: Set<String> = []
            for key in d.differenceKeys ?? [] {
                guard let slash = key.lastIndex(of: "/") else { continue }
                let subject = String(key[..<slash])
                guard seen.insert(subject).inserted, seen.count <= 3 else { continue }
                out += subjectFacts(
                    subject, field: String(key[key.index(after: slash)...]), query: q, known, c, explained: &explained)
            }
            return out
        }
    }

    /// The facts about one subject (`product pro.monthly`, `group Pro`, `consumable coins.100`, `entitlement pro`).
    static func subjectFacts(
        _ subject: String, field: String, query q: PlannedQuery, _ known: Facts, _ c: GeneratedCase,
        explained: inout Set<String>
    ) -> [String] {
        let catalog = c.config.catalog
        let parts = subject.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return [] }
        let products: [String]
        switch parts[0] {
        case "group": products = catalog.products.filter { $0.groupId == parts[1] }.map(\.id)
        case "entitlement":
            products = catalog.entitlementList.first { $0.id == parts[1] }?.products ?? []
        default: products = [parts[1]]
        }
        let rel = { (t: Millis) in CivilTime.relative(t - c.origin) }
        let when =
            q.isHindsight
            ? "about \(rel(q.query.at)), asked in hindsight at \(rel(q.appleTime)) with the facts known then"
            : "asked at \(rel(q.query.at))"
        var out = ["  why the oracle expects this (\(subject), \(field), \(when)):"]
        if let device = q.query.deviceTime, device != q.query.at, explained.isEmpty {
            out.append(
                "    - the question's deviceTime says \(rel(device)), Apple's time is \(rel(q.query.at)): a device's clock decides nothing"
            )
        }
        var any = false
        for id in products {
            let lines = productFacts(id, at: q.query.at, known, catalog: catalog, rel: rel)
            if !lines.isEmpty { any = true }
            if lines.isEmpty || explained.insert(id).inserted {
                out += lines
            } else {
                out.append("    - \(id): as above")
            }
        }
        if !any {
            let later = products.flatMap { known.transactions(of: $0) }.filter {
                $0.tx.purchaseDate > q.query.at
            }
            out.append(
                later.isEmpty
                    ? "    - no transaction of \(products.joined(separator: ", ")) reached the validator for this user"
                    : later.map {
                        "    - \($0.tx.productId) purchased after the question: " + known.describe($0, rel: rel)
                    }
                    .joined(separator: "\n"))
        }
        let chains = Set(products.flatMap { known.transactions(of: $0) }.map(\.tx.originalTransactionId))
        let others = chains.count == 1 ? known.notifications(otherThan: chains.first!) : []
        if !others.isEmpty { out.append("    - the user's other chains got: " + others.joined(separator: ", ")) }
        for f in known.forged where f.chain.map(chains.contains) ?? true {
            out.append("    - ignored, forged (\(f.forgery.rawValue)): \(f.what): \(forgedPart(f.forgery))")
        }
        for r in known.receipts {
            out.append(
                "    - verifyReceipt answered at \(rel(r.requestDate)): latest_receipt_info and pending_renewal_info are as of then"
                    + (r.creation.map { "; the receipt's own in_app was made at \(rel($0)), before what came since" }
                        ?? ""))
        }
        return out
    }

    /// A product's transactions (the latest by purchaseDate in full), its chain's renewal info and notifications.
    package static func productFacts(
        _ id: String, at t: Millis, _ known: Facts, catalog: Catalog, rel: (Millis) -> String
    ) -> [String] {
        let txs = known.transactions(of: id).filter { $0.tx.purchaseDate <= t }
        guard let latest = txs.last else { return [] }
        let kind = catalog.product(id)?.kind
        var out: [String] = []
        if kind == .consumable {
            for x in txs.suffix(6) { out.append("    - \(id) " + known.describe(x, rel: rel)) }
            if txs.count > 6 { out.append("    - and \(txs.count - 6) earlier transactions of \(id)") }
            let all = known.byId.values.filter {
                $0.tx.purchaseDate <= t
            }
            if all.count > txs.count {
                out.append(
                    "    - the user's transactions in all, every product: \(all.count) (every one counts, however old)")
            }
        } else {
            // The grant the expected value rests on first, when the latest purchase is not it (a family share bought
            // later while the user's own chain is in grace).
            if kind == .autoRenewable, let (decider, grace) = decidingGrant(txs, at: t, known),
                decider.tx.originalTransactionId != latest.tx.originalTransactionId
            {
                let chain = decider.tx.originalTransactionId
                let why = grace ? "in its grace period, the grant that ends last" : "the grant that ends last"
                out.append(
                    "    - \(id) held through chain …\(chain.suffix(4)), \(why): " + known.describe(decider, rel: rel))
                if let r = known.renewals[chain] {
                    out.append(
                        "      renewal info of chain …\(chain.suffix(4)): " + describe(r, rel: rel)
                            + known.renewalChannels(chain))
                }
            }
            let earlier = txs.count > 1 ? " (\(txs.count - 1) earlier)" : ""
            out.append("    - \(id) latest by purchaseDate\(earlier): " + known.describe(latest, rel: rel))
            // The user's own purchase beside a family share: what ownership rests on.
            if kind != .autoRenewable, latest.tx.inAppOwnershipType == .familyShared,
                let own = txs.last(where: {
                    $0.tx.inAppOwnershipType == .purchased && ($0.tx.revocationDate.map { $0 > t } ?? true)
                })
            {
                out.append("    - \(id) also bought by the user: " + known.describe(own, rel: rel))
            }
            if kind == .nonRenewing, latest.tx.expiresDate == nil, let p = catalog.product(id)?.period {
                out.append("      no expiresDate: the catalog's duration \(p) from purchaseDate ends it")
            }
        }
        let chain = latest.tx.originalTransactionId
        // A restore or a second device: the same purchase under another id, whose refund ends it too
        // (docs/answers.md#one-purchase-several-transactionids).
        for x in known.chain(chain)
        where x.tx.transactionId != latest.tx.transactionId && x.tx.purchaseDate == latest.tx.purchaseDate {
            out.append(
                "    - the same purchase under another id (a restore or another device): " + known.describe(x, rel: rel)
            )
        }
        for x in known.chain(chain)
        where x.tx.transactionId != latest.tx.transactionId && x.tx.revocationDate != nil
            && x.tx.purchaseDate < latest.tx.purchaseDate
        {
            out.append("    - refunded earlier in the chain: \(x.tx.productId) " + known.describe(x, rel: rel))
        }
        for x in known.chain(chain) where x.tx.productId != id && x.tx.purchaseDate > latest.tx.purchaseDate {
            if x.tx.purchaseDate <= t {
                out.append("    - then in the same chain: \(x.tx.productId) " + known.describe(x, rel: rel))
            }
        }
        if let r = known.renewals[chain] {
            out.append(
                "    - renewal info of chain …\(chain.suffix(4)): " + describe(r, rel: rel)
                    + known.renewalChannels(chain))
        }
        if let pages = known.historyPages[chain], pages > 1 {
            out.append("    - the API's transaction history of this chain came in \(pages) pages (hasMore, revision)")
        }
        let about = known.notifications(about: chain)
        if !about.isEmpty { out.append("    - notifications about it: " + about.joined(separator: ", ")) }
        return out
    }

    /// The subscription grant that holds a product at `t` and ends last (docs/answers.md#products-products): per
    /// chain, its latest transaction purchased by `t` and not revoked by then, ending at its `expiresDate` or, once
    /// that has passed in billing retry, at the renewal info's `gracePeriodExpiresDate`. Ties go to the user's own.
    static func decidingGrant(_ txs: [Facts.Known], at t: Millis, _ known: Facts) -> (Facts.Known, grace: Bool)? {
        var latestOfChain: [String: Facts.Known] = [:]
        for x in txs where x.tx.purchaseDate <= t { latestOfChain[x.tx.originalTransactionId] = x }
        var best: (x: Facts.Known, end: Millis, grace: Bool)?
        for (chain, x) in latestOfChain {
            if let r = x.tx.revocationDate, r <= t { continue }
            guard var end = x.tx.expiresDate else { continue }
            var grace = false
            if end <= t, let r = known.renewals[chain], r.isInBillingRetryPeriod == true,
                let g = r.gracePeriodExpiresDate, g > t
            {
                end = g
                grace = true
            }
            guard end > t else { continue }
            let own = x.tx.inAppOwnershipType == .purchased
            if let b = best, b.end > end || (b.end == end && (b.x.tx.inAppOwnershipType == .purchased || !own)) {
                continue
            }
            best = (x, end, grace)
        }
        return best.map { ($0.x, $0.grace) }
    }

    static func describe(_ r: JWSRenewalInfoDecodedPayload, rel: (Millis) -> String) -> String {
        var f = ["signedDate \(rel(r.signedDate))"]
        f.append("autoRenewStatus \(r.autoRenewStatus.map { String($0.rawValue) } ?? "absent")")
        if let p = r.autoRenewProductId, p != r.productId { f.append("autoRenewProductId \(p)") }
        f.append("isInBillingRetryPeriod \(r.isInBillingRetryPeriod.map(String.init) ?? "absent")")
        f.append("gracePeriodExpiresDate \(r.gracePeriodExpiresDate.map(rel) ?? "absent")")
        // Every field a rule reads, absent ones said so: a reader checks the one the bug misread.
        f.append("expirationIntent \(r.expirationIntent.map { String($0.rawValue) } ?? "absent")")
        f.append("priceIncreaseStatus \(r.priceIncreaseStatus.map { String($0.rawValue) } ?? "absent")")
        f.append("renewalDate \(r.renewalDate.map(rel) ?? "absent")")
        f.append("offerType \(r.offerType.map { String($0.rawValue) } ?? "absent")")
        if let o = r.offerIdentifier { f.append("offerIdentifier \(o)") }
        return f.joined(separator: ", ")
    }

    /// A wrong verdict: what the forged artifact changed; why a genuine artifact must be refused all the same (another
    /// app's or environment's, over the app's declared size limit: the reason `expected` gives); or why the refused
    /// one was genuine.
    package static func verdict(_ d: PlannedDelivery, expected: String, known: Facts, origin: Millis) -> [String] {
        let rel = { (t: Millis) in CivilTime.relative(t - origin) }
        if let f = d.forgery {
            let shape =
                !f.isMadeOnlyWithApplesKeys
                ? ""
                : f == .oidCritical
                    ? "; Apple's libraries, as RFC 5280 asks, refuse a certificate with a critical extension they do not handle. Only a certificate authority of Apple's chain issues one, so accepting it breaks that rule rather than letting in a forgery made without Apple's keys"
                    : "; Apple's libraries refuse any chain but leaf, intermediate, root. It is signed with the genuine leaf's key, so accepting it breaks Apple's rule rather than letting in a forgery made without that key"
            return ["  why it must be refused: \(f.rawValue): \(forgedPart(f))\(shape)"]
        }
        let refused = "rejected ("
        var out =
            expected.hasPrefix(refused)
            ? ["  why it must be refused: \(expected.dropFirst(refused.count).dropLast()), although validly signed"]
            : [
                "  why it must be accepted: a genuine artifact, signed by the test PKI (certificates valid at its signedDate)"
            ]
        out += genuine(d.delivery, known: known, rel: rel).map { "    - " + $0 }
        return out
    }

    /// What a genuine artifact says, with the fields verifiers most often trip on.
    static func genuine(_ d: Delivery, known: Facts, rel: (Millis) -> String) -> [String] {
        switch d {
        case .appTransaction(let a):
            return [
                "app transaction: "
                    + known.describe(.init(tx: a.transaction, deliveries: 1, channels: [.app]), rel: rel)
            ]
        case .notification(let n):
            var out = [
                "notification: notificationType \(n.notificationType.rawValue)\(n.subtype.map { ", subtype " + $0.rawValue } ?? ""), notificationUUID …\(n.notificationUUID.suffix(4)), signedDate \(rel(n.signedDate))"
                    + (known.uuidCount[n.notificationUUID, default: 0] > 0
                        ? ", a retry of a notificationUUID delivered before" : "")
            ]
            if let data = n.data {
                out.append(
                    "data: bundleId \(data.bundleId ?? "absent"), appAppleId \(data.appAppleId.map(String.init) ?? "absent"), environment \(data.environment.rawValue), "
                        + (data.transactionInfo == nil ? "no signedTransactionInfo" : "signedTransactionInfo present")
                        + (data.renewalInfo == nil ? ", no signedRenewalInfo" : ""))
                if let t = data.transactionInfo {
                    out.append(
                        "transaction: "
                            + known.describe(.init(tx: t, deliveries: 1, channels: [.notification]), rel: rel))
                }
                if let r = data.renewalInfo {
                    out.append(
                        "renewal info: " + describe(r, rel: rel)
                            + (r.expirationIntent == nil && n.notificationType == .expired
                                ? ", expirationIntent absent" : ""))
                }
            } else {
                out.append(
                    "no data (\(n.summary != nil ? "a summary" : n.externalPurchaseToken != nil ? "an externalPurchaseToken" : "nothing") instead)"
                )
            }
            return out
        case .apiSnapshot(let s):
            return [
                "API history asked with originalTransactionId …\(s.originalTransactionId.suffix(4)): \(s.transactions.count) transactions"
            ]
        case .legacyReceipt(let l):
            return ["verifyReceipt status 0 for bundleId \(l.bundleId), environment \(l.environment.rawValue)"]
        }
    }

    /// What a forgery class changes in a genuine artifact (docs/verifiers.md#forgery-classes).
    static func forgedPart(_ f: ForgeryClass) -> String {
        switch f {
        case .tamperedPayload: "the payload changed after signing: the JWS signature does not match it"
        case .tamperedHeader: "the header changed after signing: the JWS signature does not match it"
        case .foreignKeySignature: "the signature made with a key that is not the x5c leaf's"
        case .algNone: "header alg none: no signature at all"
        case .algHS256: "header alg HS256 keyed with the leaf's public key"
        case .missingX5c: "no x5c certificate chain in the header"
        case .twoCertificateChain: "an x5c chain of two certificates (Apple's has three)"
        case .fourCertificateChain: "an x5c chain of four certificates"
        case .reorderedChain: "the x5c certificates out of order"
        case .untrustedRoot: "an x5c chain ending at a root it carries itself, not a trusted root"
        case .leafWithoutOID:
            "a leaf certificate without Apple's receipt-signing OID 1.2.840.113635.100.6.11.1, which sets the App Store's signing leaf apart from every other certificate Apple's chain issues"
        case .intermediateWithoutOID:
            "an intermediate certificate without Apple's WWDR OID 1.2.840.113635.100.6.2.1, which sets Apple's WWDR intermediate apart from any other a root issues"
        case .oidCritical: "Apple's OID marked critical, an extension no verifier handles"
        case .leafExpired: "a leaf certificate whose validity (notAfter) ended before the payload's signedDate"
        case .leafNotYetValid: "a leaf certificate whose validity (notBefore) starts after the payload's signedDate"
        case .intermediateNotCA: "an intermediate certificate without basicConstraints CA"
        case .wrongBundleId: "the bundleId of another app"
        case .wrongAppAppleId: "the appAppleId of another app"
        case .wrongEnvironment:
            "the environment of the other store (Sandbox for Production or back); only legacy verifyReceipt's 21007 sends a production backend to the sandbox, and then on purpose"
        case .xcodeEnvironment: "environment Xcode: signed by Xcode's local store, not Apple"
        case .truncatedSegment: "a JWS segment cut short"
        case .nonBase64Segment: "a JWS segment that is not base64url"
        case .x5cNotBase64: "an x5c certificate that is not base64"
        case .oversizedToken: "a token larger than the policy's tokenSizeLimit"
        case .replayedNotificationUUID: "the notificationUUID of an earlier notification, with other content"
        case .forgedNestedTransaction:
            "a genuine envelope whose nested signedTransactionInfo is signed by another key: the envelope's signature covers the nested JWS as a string, so it must be verified on its own (Apple's libraries leave that to a second call)"
        case .legacyErrorStatus: "a verifyReceipt answer whose status is not 0, yet with a receipt"
        case .legacyMissingStatus: "a verifyReceipt answer without status"
        case .legacyTruncatedBody: "a verifyReceipt answer cut off halfway"
        case .legacyNonJSONBody: "an HTML error page instead of a verifyReceipt answer"
        }
    }
}
