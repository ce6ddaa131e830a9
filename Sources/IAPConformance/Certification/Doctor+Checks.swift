import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// The doctor's purchase: one product bought in the app by one user at 2026-03-01, as each channel carries it.
package struct DoctorScenario {
    var product: CatalogProduct
    var user: String
    var transaction: JWSTransactionDecodedPayload
    var renewalInfo: JWSRenewalInfoDecodedPayload?
    var notification: ResponseBodyV2DecodedPayload
    var catalog: Catalog
    /// What the answer names the purchase by: the product, or the first entitlement it unlocks.
    var subject: String
    /// 2026-03-01T09:41:27.350Z: an instant with milliseconds, so that a backend keeping dates to the second shows
    /// it on the doctor's one purchase (on a whole second, the cut date equals the true one).
    package static let start: Millis = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay + 34_887_350

    /// An auto-renewable subscription if the catalog has one (that unlocks an entitlement, when the validator
    /// answers in entitlements), so the clock can be checked on its expiry; else a non-renewing subscription (it
    /// expires too), else a non-consumable (the clock is then checked on the purchase alone); else any product.
    init?(catalog: Catalog, profile: ValidatorProfile, isolation: CaseIsolation) {
        let entitled = Set((catalog.entitlements ?? []).flatMap(\.products))
        let usable = catalog.products.filter { !profile.answersEntitlements || entitled.contains($0.id) }
        guard
            let product = [ProductKind.autoRenewable, .nonRenewing, .nonConsumable].lazy.compactMap({ kind in
                usable.first { $0.kind == kind }
            }).first ?? usable.first ?? catalog.probeProduct
        else { return nil }
        self.product = product
        self.catalog = catalog
        let t = Self.start
        var user = "a1b2c3d4-0000-4000-8000-000000000001"
        var tx = catalog.probeTransaction(of: product, at: t, user: user)
        var renewal =
            product.kind == .autoRenewable
            ? JWSRenewalInfoDecodedPayload(
                originalTransactionId: tx.originalTransactionId, productId: product.id, autoRenewProductId: product.id,
                autoRenewStatus: .on, signedDate: t, environment: catalog.environment) : nil
        renewal?.renewalDate = tx.expiresDate
        var n = ResponseBodyV2DecodedPayload(
            notificationType: product.kind == .autoRenewable ? .subscribed : .oneTimeCharge,
            subtype: product.kind == .autoRenewable ? .initialBuy : nil,
            notificationUUID: "5e1f0000-0000-4000-9000-000000000001", signedDate: t,
            data: NotificationData(
                appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                transactionInfo: tx, renewalInfo: renewal, status: product.kind == .autoRenewable ? .active : nil))
        if isolation == .namespace {
            let ns = IDNamespace.next()
            user = ns.uuid(user)
            tx = ns.apply(tx)
            renewal = renewal.map(ns.apply)
            n = ns.apply(n)
        }
        self.user = user
        transaction = tx
        renewalInfo = renewal
        notification = n
        subject =
            profile.answersEntitlements
            ? (catalog.entitlements ?? []).first { $0.products.contains(product.id) }?.id ?? product.id : product.id
    }

    var expiry: Millis? { transaction.expiresDate }

    func delivery(on channel: DeliveryChannel) -> Delivery {
        let snapshot = APISnapshot(
            originalTransactionId: transaction.originalTransactionId, transactions: [transaction],
            renewalInfos: renewalInfo.map { [$0] } ?? [])
        switch channel {
        case .app:
            return .appTransaction(
                AppTransactionSubmission(userId: user, transaction: transaction, deviceTime: Self.start))
        case .notification: return .notification(notification)
        case .api: return .apiSnapshot(snapshot)
        case .legacy:
            return .legacyReceipt(
                LegacyReceiptFacts(
                    userId: user, bundleId: catalog.bundleId, environment: catalog.environment,
                    requestDate: Self.start + 2000, chains: [snapshot]))
        }
    }
}

extension DoctorSession {
    var renderer: ArtifactRenderer {
        ArtifactRenderer(pki: TestPKI.harness, appAppleId: doctor.catalog.appAppleId)
    }

    static func operation(_ c: DeliveryChannel) -> String {
        switch c {
        case .app: "appTransaction"
        case .notification: "notification"
        case .api: "apiSnapshot"
        case .legacy: "legacyReceipt"
        }
    }

    /// One genuine artifact on every declared channel: each must be accepted. False when none was.
    mutating func deliverGenuine(_ s: DoctorScenario, profile: ValidatorProfile, knowledge: inout Knowledge) -> Bool {
        var accepted = 0
        for (k, channel) in profile.channels.enumerated() {
            let d = s.delivery(on: channel)
            let op = Self.operation(channel)
            let name = channel.protocolName
            do {
                let rendered = renderer.render(d)
                let verdict = try timed(op) { (v: any Validator) throws(ValidatorFailure) in
                    try v.deliver(rendered, now: DoctorScenario.start + Millis(1000 * (k + 1)))
                }
                switch verdict {
                case .accepted:
                    _ = knowledge.learn(d)
                    accepted += 1
                    genuineAccepted.insert(channel)
                    add(name, .ok, "a genuine \(Self.describe(d)) of \(s.product.id) was accepted")
                case .rejected(let reason):
                    if case let (request, status?)? = doctor.hints.lastExchange(), status == 404 || status == 405 {
                        add(
                            name, .misconfigured, "\(request) answered \(status): no such route",
                            fix: "check \(doctor.hints.whereIs(op) ?? "the route's method and path")")
                    } else if Self.judgesCertificateDates(reason) {
                        // Not a setting: a bug of the verifier that check shows case by case, so no reason to stop.
                        add(
                            name, .finding,
                            "a genuine \(Self.describe(d)) of \(s.product.id) was refused for a certificate's dates: \(reason)",
                            fix:
                                "check the chain at the payload's signedDate (\(CivilTime.iso8601(DoctorScenario.start))), as Apple's libraries do with online checks off, never at the server's own clock: iapcheck's test leaves, like Apple's, expire while the tokens they signed stay genuine (docs/verifiers.md#certificate-dates)"
                        )
                    } else {
                        let c = s.catalog
                        add(
                            name, .misconfigured,
                            "a genuine \(Self.describe(d)) of \(s.product.id) was refused: \(reason)",
                            fix: Self.refusalFix(reason)
                                ?? "the backend must accept this app's artifacts: configure it for bundle id \(c.bundleId), environment \(c.environment.rawValue), App Store id \(c.appAppleId), trusting iapcheck's root certificate (iapcheck pki export DIR writes root.der and root.pem) with online (OCSP) checks off; or give iapcheck the --catalog, --bundle-id, --environment and --app-apple-id the backend is configured for"
                        )
                    }
                }
            } catch {
                failed(name, error, during: op)
            }
        }
        return accepted > 0
    }

    /// The fix for a refusal whose reason names its cause, where that cause is not a setting of the app: a
    /// revocation check that cannot be answered (iapcheck's certificates name no OCSP responder), or an ES256
    /// signature read as DER where a JWS carries the 64 bytes r‖s (RFC 7518 3.4).
    static func refusalFix(_ reason: String) -> String? {
        let r = reason.lowercased()
        if ["revocation", "ocsp", "crl"].contains(where: { r.contains($0) }) {
            return
                "turn online revocation checks off for iapcheck's certificates, which name no OCSP responder (Java: PKIXParameters.setRevocationEnabled(false); Apple's libraries: online checks off): nothing could answer for them"
        }
        let words = Set(r.split { !$0.isLetter && !$0.isNumber })
        if r.contains("signature"), !words.isDisjoint(with: ["encoding", "der", "asn1", "asn", "format", "length"]) {
            return
                "an ES256 signature in a JWS is 64 bytes, r then s, not DER (RFC 7518 3.4): convert it before verifying (Java: \"SHA256withECDSAinP1363Format\"; OpenSSL: ECDSA_SIG from r and s)"
        }
        return nil
    }

    /// A refusal that names a certificate's validity: the chain judged at the wrong instant, not a wrong setting.
    static func judgesCertificateDates(_ reason: String) -> Bool {
        let r = reason.lowercased()
        let certificate = ["certificate", "cert ", "chain", "x509", "x.509", "leaf", "intermediate"].contains {
            r.contains($0)
        }
        let dates = [
            "expired", "not yet valid", "notafter", "notbefore", "not valid after", "not valid before", "validity",
        ]
        return certificate && dates.contains { r.contains($0) }
    }

    static func describe(_ d: Delivery) -> String {
        switch d {
        case .appTransaction: "signed transaction from the app"
        case .notification(let n):
            "notification \(n.notificationType.rawValue)\(n.subtype.map { "/" + $0.rawValue } ?? "")"
        case .apiSnapshot: "App Store Server API answer"
        case .legacyReceipt: "verifyReceipt answer"
        }
    }

    /// A transaction signed with a key outside the trusted chain (or a notification nesting one): must be refused.
    mutating func deliverForged(_ s: DoctorScenario, profile: ValidatorProfile) {
        // What `check` sends on each channel: a forgery on every declared channel, and the oversized token it always
        // sends. A refusal status the target file does not map (413 for a large body) would stop `check` mid-run.
        var probes: [(ForgeryClass, DeliveryChannel)] = []
        if profile.accepts(.app) { probes += [(.foreignKeySignature, .app), (.oversizedToken, .app)] }
        if profile.accepts(.notification) {
            probes += [(.forgedNestedTransaction, .notification), (.oversizedToken, .notification)]
        }
        if profile.accepts(.legacy) { probes.append((.legacyErrorStatus, .legacy)) }
        if probes.isEmpty { add("forgery", .skipped, "no app, notification or receipt channel to send one on") }
        for (forgery, channel) in probes { probe(forgery, on: channel, s) }
    }

    /// Sends one forged artifact of `forgery`'s class on `channel` and reads the verdict.
    mutating func probe(_ forgery: ForgeryClass, on channel: DeliveryChannel, _ s: DoctorScenario) {
        var d = ForgeryKit.delivery(
            forgery, tempting: ForgeryClass.tempting(s.transaction), notification: s.notification, userId: s.user)
        if channel == .notification, d.channel != .notification {
            // The class's artifact inside a notification, as check sends it there (an oversized signedPayload).
            var n = s.notification
            n.notificationUUID = "f00d" + n.notificationUUID.dropFirst(4)
            d = .notification(n)
        }
        let op = Self.operation(d.channel)
        let name = "forgery \(forgery.rawValue)" + (forgery == .oversizedToken ? " (\(op))" : "")
        do {
            let rendered = ForgeryKit(pki: TestPKI.harness).render(forgery, d)
            let verdict = try timed(op) { (v: any Validator) throws(ValidatorFailure) in
                try v.deliver(rendered, now: DoctorScenario.start + 10_000)
            }
            switch (verdict, forgery.isHardeningOnly) {
            case (.rejected(let reason), _) where !genuineAccepted.contains(d.channel):
                // Everything on the channel is refused (a wrong App Store id, say): no credit for the forgery.
                add(
                    name, .skipped,
                    "refused on \(op) (\(reason)), as the genuine \(Self.describe(d)) above was: that says nothing of the forgery until the genuine one is accepted"
                )
            case (.rejected(let reason), _): add(name, .ok, "refused on \(op): \(reason)")
            case (_, true) where doctor.policy.tokenSizeLimit == nil:
                add(
                    name, .ok,
                    "accepted on \(op): a genuine token over any usual size, allowed without a tokenSizeLimit")
            case _ where doctor.validator.verifiesLater(d.channel):
                // Not judged here: whether the worker drops it shows only in later answers, which check compares.
                add(
                    name, .skipped,
                    "received on \(op), whose acceptance says only that it was received (the route verifies later, or posts ids without the token): not judged here; check judges it by its effect on the answers"
                )
            default:
                add(name, .finding, "accepted on \(op): check will report it (forgery-rejected)")
            }
        } catch {
            failed(name, error, during: op, blocking: false)
        }
    }

    /// Whether the day-one answer's expiry is the oracle's in another unit (a mapping that reads seconds as
    /// milliseconds): a configuration problem, reported before the clock is judged on such dates.
    mutating func formatIsWrong(_ observed: EntitlementAnswer, _ s: DoctorScenario, knowledge: Knowledge) -> Bool {
        let judgement = Oracle.judge(knowledge, user: s.user, at: DoctorScenario.start + CivilTime.msPerDay)
        guard let scale = Self.dateScale(observed, judgement.answer) else { return false }
        add(
            "answer", .misconfigured,
            "the expiry reads \(scale): it expires \(Self.expiries(observed)), the purchase it answers for \(Self.expiries(judgement.answer))",
            fix:
                "the date's \"format\" in the target file's answer mapping is not the backend's (epoch-ms, epoch-s or iso8601)"
        )
        return true
    }

    static func expiries(_ a: EntitlementAnswer) -> String {
        let dates = (a.entitlements.compactMap(\.expiresDate) + a.products.compactMap(\.expiresDate)).map(
            CivilTime.iso8601)
        return dates.isEmpty ? "never" : Set(dates).sorted().joined(separator: ", ")
    }

    /// The answer a day into the purchase; nil (with the checklist line) when it cannot be read.
    mutating func askDayOne(_ s: DoctorScenario) -> EntitlementAnswer? {
        let at = DoctorScenario.start + CivilTime.msPerDay
        api?.serve(v, at: at, clock: at)
        do {
            return try timed("entitlements") { (v: any Validator) throws(ValidatorFailure) in
                try v.entitlements(EntitlementQuery(userId: s.user, at: at, deviceTime: at))
            }
        } catch {
            failed("answer", error, during: "entitlements")
            return nil
        }
    }

    /// A day into the purchase, the answer must be the oracle's, read through the mapping as the check reads it.
    mutating func judgeAnswer(
        _ observed: EntitlementAnswer, _ s: DoctorScenario, knowledge: Knowledge, profile: ValidatorProfile
    ) {
        let at = DoctorScenario.start + CivilTime.msPerDay
        let judgement = Oracle.judge(knowledge, user: s.user, at: at)
        let (diffs, lines) = CaseRunner.differences(observed, from: judgement, profile: profile)
        if diffs.isEmpty {
            add(
                "answer", .ok,
                "as expected at \(CivilTime.iso8601(at)): \(CaseRunner.summary(observed, profile: profile))")
            return
        }
        let text = lines.joined(separator: "; ")
        if !observed.expiriesCutToSeconds(comparedTo: judgement.answer).isEmpty, profile.datePrecision < 1000 {
            add(
                "answer", .misconfigured, text,
                fix:
                    "the backend keeps dates to the second: declare \"precision\": \"s\" on the date in the target file's answer mapping"
            )
        } else {
            add("answer", .finding, text + " (check will report it with a shrunk history)")
        }
    }

    /// "1000 times too large" or "1000 times too small" when an expiry is the expected one in the other unit.
    static func dateScale(_ observed: EntitlementAnswer, _ expected: EntitlementAnswer) -> String? {
        let pairs =
            observed.entitlements.compactMap { o in
                expected.entitlements.first { $0.entitlementId == o.entitlementId }.map {
                    (o.expiresDate, $0.expiresDate)
                }
            }
            + observed.products.compactMap { o in
                expected.products.first { $0.productId == o.productId }.map { (o.expiresDate, $0.expiresDate) }
            }
        for case let (o?, e?) in pairs where e != 0 {
            let r = Double(o) / Double(e)
            if r > 500 && r < 2000 { return "1000 times too large" }
            if r > 0.0005 && r < 0.002 { return "1000 times too small" }
        }
        return nil
    }
}
