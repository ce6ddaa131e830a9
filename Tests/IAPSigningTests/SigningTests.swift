import Foundation
import IAPEncoding
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPTesting
import IAPVerification
import Testing

@Suite struct SigningTests {
    let pki = TestPKI.shared(seed: 1)
    static let t: Millis = 1_772_323_200_000  // 2026-03-01

    func transaction(signed: Millis = t) -> JWSTransactionDecodedPayload {
        Build.transaction("2000000000000001", product: "lifetime.unlock", purchased: signed, reason: nil)
    }

    func verifier() -> SignedDataVerifier { SignedDataVerifier(trustedRoots: pki.trustedRoots) }

    /// Get All Subscription Statuses says each status as of the instant asked for (the backend's clock), whatever
    /// instant the renewal info was signed at: a backend that takes the status and one that reads the expiry agree.
    @Test func statusesAreAsOfTheInstantAsked() throws {
        let catalog = Catalog.standard
        let product = try #require(catalog.products.first { $0.kind == .autoRenewable })
        let tx = catalog.probeTransaction(of: product, at: Self.t, user: "a1b2c3d4-0000-4000-8000-000000000001")
        let expiry = try #require(tx.expiresDate)
        var renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: tx.originalTransactionId, productId: product.id, autoRenewProductId: product.id,
            autoRenewStatus: .on, signedDate: Self.t, environment: catalog.environment)
        renewal.renewalDate = expiry
        let snapshot = APISnapshot(
            originalTransactionId: tx.originalTransactionId, transactions: [tx], renewalInfo: renewal)
        let renderer = ArtifactRenderer(pki: pki)
        func status(at t: Millis?) throws -> SubscriptionStatus? {
            guard
                case let .apiSnapshot(_, _, statuses) = renderer.apiResponses(
                    snapshot, sign: renderer.transaction, renderer.renewal, statusesAt: t)
            else { return nil }
            return statuses?.data.first?.lastTransactions.first?.status
        }
        #expect(try status(at: nil) == .active)  // as of the renewal info's signedDate
        #expect(try status(at: expiry - 1000) == .active)
        #expect(try status(at: expiry + 1000) != .active)
    }

    @Test func theChainLooksLikeApples() throws {
        let leaf = pki.leaves[0].issued.certificate
        #expect(leaf.extensions[oid: TestPKI.receiptSigningOID]?.critical == false)
        #expect(pki.intermediate.certificate.extensions[oid: TestPKI.wwdrIntermediateOID] != nil)
        #expect(leaf.issuer == pki.intermediate.certificate.subject)
        #expect(pki.intermediate.certificate.issuer == pki.root.certificate.subject)
        #expect(pki.root.pem.hasPrefix("-----BEGIN CERTIFICATE-----"))
    }

    @Test func keysAreDeterministicPerSeed() throws {
        let a = try TestPKI(
            seed: 9, validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1, leafCount: 1)
        let b = try TestPKI(
            seed: 9, validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1, leafCount: 1)
        #expect(a.leaves[0].key.publicKey.rawRepresentation == b.leaves[0].key.publicKey.rawRepresentation)
        #expect(a.root.certificate.publicKey == b.root.certificate.publicKey)
        #expect(a.root.certificate.publicKey != pki.root.certificate.publicKey)
    }

    @Test func aGenuineJWSVerifiesAndDecodes() throws {
        let jws = JWSSigner(pki: pki).sign(transaction(), signedDate: Self.t)
        let v = verifier()
        let decoded = try v.verify(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()
        #expect(decoded == transaction())
        _ = try v.verify(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()
        #expect(v.cacheHits == 1)
    }

    /// The chain verdict belongs to the certificates: a header that adds a member (as a tampered header does)
    /// reuses it, and the token still fails on its signature; other certificates are verified anew.
    @Test func chainVerdictsAreSharedByHeadersWithTheSameCertificates() throws {
        let v = verifier()
        let genuine = JWSSigner(pki: pki).sign(transaction(), signedDate: Self.t)
        _ = try v.verify(genuine, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()
        #expect(v.chainsVerified == 1)
        let tampered = ForgeryKit(pki: pki).jws(.tamperedHeader, transaction(), Self.t)
        let refused = v.verify(tampered, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
        guard case .failure(let f) = refused else { Issue.record("a tampered header verified"); return }
        #expect(f.reason == .signature)
        #expect(v.chainsVerified == 1)
        #expect(v.cacheHits == 0)
        let otherLeaf = JWSSigner(pki: pki).sign(
            transaction(signed: Self.t + 90 * CivilTime.msPerDay), signedDate: Self.t + 90 * CivilTime.msPerDay)
        _ = try v.verify(otherLeaf, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()
        #expect(v.chainsVerified == 2)
        let untrusted = ForgeryKit(pki: pki).jws(.untrustedRoot, transaction(), Self.t)
        #expect((try? v.verify(untrusted, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()) == nil)
        #expect(v.chainsVerified == 3)
    }

    /// A certificate counts at the token's signedDate. A genuine token whose leaf expired since it was signed is
    /// accepted, and one claiming a signedDate before its leaf became valid is refused, whatever the clock says
    /// when it arrives; a verifier that checks at the time of delivery gets both wrong.
    @Test func certificatesCountAtSignedDateNotAtDelivery() throws {
        let old = transaction(signed: Self.t)
        let genuine = JWSSigner(pki: pki).sign(old, signedDate: Self.t)
        let leaf = try #require(pki.leaf(at: Self.t).issued.certificate)
        let later = Millis(leaf.notValidAfter.timeIntervalSince1970 * 1000) + 10 * CivilTime.msPerDay
        #expect(Millis(leaf.notValidBefore.timeIntervalSince1970 * 1000) <= Self.t)
        let forged = ForgeryKit(pki: pki).render(
            .leafNotYetValid, .appTransaction(.init(userId: "u", transaction: old, deviceTime: nil)))
        guard case .appTransaction(_, let forgedJWS, _) = forged else { Issue.record("not an app transaction"); return }

        let reference = ReferenceValidator()
        try reference.reset(ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: pki.trustedRoots))
        #expect(
            try reference.deliver(.appTransaction(userId: "u", signedTransaction: genuine, deviceTime: nil), now: later)
                .isAccepted)
        #expect(
            try !reference.deliver(
                .appTransaction(userId: "u", signedTransaction: forgedJWS, deviceTime: nil), now: Self.t
            ).isAccepted)

        let atDelivery = try #require(Mutants.named("certificate-dates-at-delivery")).make()
        try atDelivery.reset(ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: pki.trustedRoots))
        #expect(
            try !atDelivery.deliver(
                .appTransaction(userId: "u", signedTransaction: genuine, deviceTime: nil), now: later
            ).isAccepted)
        #expect(
            try atDelivery.deliver(
                .appTransaction(userId: "u", signedTransaction: forgedJWS, deviceTime: nil), now: Self.t
            ).isAccepted)
    }

    @Test func anUntrustedVerifierRejectsTheChain() {
        let jws = JWSSigner(pki: pki).sign(transaction(), signedDate: Self.t)
        let other = try! TestPKI(
            seed: 77, validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1, leafCount: 1)
        let result = SignedDataVerifier(trustedRoots: other.trustedRoots).verify(
            jws, as: JWSTransactionDecodedPayload.self
        ) { $0.signedDate }
        #expect(throws: SignedDataVerifier.Failure.self) { try result.get() }
    }

    /// Every cryptographic or structural forgery fails verification on its own (identity classes are validly signed
    /// and are rejected by the app checks instead; a replayed UUID is caught by dedupe; legacy classes are no JWS).
    @Test(
        arguments: ForgeryClass.allCases.filter {
            !$0.isIdentityMismatch && $0 != .replayedNotificationUUID && $0 != .forgedNestedTransaction
                && !$0.isLegacyOnly
        })
    func everyCryptographicForgeryFailsVerification(_ forgery: ForgeryClass) {
        let jws = ForgeryKit(pki: pki).jws(forgery, transaction(), Self.t)
        let result = verifier().verify(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
        #expect(throws: SignedDataVerifier.Failure.self, "\(forgery.rawValue) verified") { try result.get() }
        // The precise step that refuses each class (the status alone lumps a bad signature with a bad header).
        let step: [ForgeryClass: SignedDataVerifier.Failure.Reason] = [
            .tamperedPayload: .signature, .tamperedHeader: .signature, .foreignKeySignature: .signature,
            .truncatedSegment: .signature,
            .reorderedChain: .chain, .untrustedRoot: .chain, .leafWithoutOID: .chain, .intermediateWithoutOID: .chain,
            .oidCritical: .chain, .intermediateNotCA: .chain, .leafExpired: .date, .leafNotYetValid: .date,
            .x5cNotBase64: .certificate,
        ]
        if case .failure(let f) = result { #expect(f.reason == step[forgery] ?? .format, "\(forgery.rawValue): \(f)") }
    }

    /// An oversized token is refused for its size alone: without a size limit it verifies and decodes to the tempting
    /// transaction, so a verifier that takes it has no limit (rather than a broken forgery). The padding leads the
    /// payload, and its encoding and digest state are made once per leaf: the tokens after the first one here are
    /// hashed from that state on.
    @Test func theOversizedForgeryIsGenuineButForItsSize() throws {
        // One verifier without the size limit reads every token below.
        var options = SignedDataVerifier.Options()
        options.maxTokenBytes = .max
        let verifier = SignedDataVerifier(trustedRoots: pki.trustedRoots, options: options)
        var tempting = transaction()
        for productId in ["lifetime.unlock", "a", "ab", "abc"] {  // one leaf: all but the first from the cached state
            tempting.productId = productId
            let jws = ForgeryKit(pki: pki).jws(.oversizedToken, tempting, Self.t)
            #expect(jws.utf8.count > ForgeryKit.oversizedBytes)
            let decoded = try verifier.verify(jws, as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()
            #expect(decoded == tempting)
            let payload = Base64URL.decode(String(jws.split(separator: ".")[1]))!
            let object = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
            #expect((object?["padding"] as? String)?.count == ForgeryKit.oversizedBytes)
        }
        // A renewal info, and a value with no members (`{}` becomes `{"padding":"…"}`, no comma).
        let renewal = Build.renewalInfo(of: Build.transaction("1000"), signed: Self.t)
        let renewalToken = ForgeryKit(pki: pki).jws(.oversizedToken, renewal, Self.t)
        #expect(
            try verifier.verify(renewalToken, as: JWSRenewalInfoDecodedPayload.self) { $0.signedDate }.get() == renewal)
        struct Empty: Codable {}
        let emptyToken = ForgeryKit(pki: pki).jws(.oversizedToken, Empty(), Self.t)
        #expect((try? verifier.verify(emptyToken, as: Empty.self) { _ in Self.t }.get()) != nil)
        let payload = Base64URL.decode(String(emptyToken.split(separator: ".")[1]))!
        let object = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        #expect(object?.count == 1 && (object?["padding"] as? String)?.count == ForgeryKit.oversizedBytes)
    }

    /// The chain is judged by swift-certificates' `Verifier`: each refusal names its cause without quoting whole
    /// certificates, and a chain that meets every rule is accepted whatever the signedDate inside its window.
    @Test func chainRefusalsNameTheirCause() throws {
        let kit = ForgeryKit(pki: pki)
        let cases: [(ForgeryClass, String)] = [
            (.reorderedChain, "leaf is not issued by the intermediate"),
            (.untrustedRoot, "not issued by a trusted root"),
            (.oidCritical, "critical extension"), (.intermediateNotCA, "intermediate is not marked as a CA"),
            (.leafWithoutOID, "Receipt Signing OID"),
        ]
        for (forgery, words) in cases {
            let result = verifier().verify(
                kit.jws(forgery, transaction(), Self.t), as: JWSTransactionDecodedPayload.self
            ) { $0.signedDate }
            guard case .failure(let f) = result else { Issue.record("\(forgery.rawValue) verified"); continue }
            #expect(f.message.contains(words) && f.message.count < 300, "\(forgery.rawValue): \(f.message)")
        }
    }

    @Test func base64urlRoundTrips() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(($0 * 37 + n) & 0xFF) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            // The same text whether the bytes are contiguous or not, and as Foundation's base64 without padding.
            #expect(Base64URL.encode(bytes.lazy.map { $0 }) == Base64URL.encode(Data(bytes)))
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == foundation)
        }
        #expect(Base64URL.decode("ab*c") == nil)
        #expect(Base64URL.decode("a") == nil)
        // A character outside the alphabet in the last, partial group, or a padding character, is refused too.
        #expect(Base64URL.decode("abcdab*") == nil)
        #expect(Base64URL.decode("abcda*") == nil)
        #expect(Base64URL.decode("abcd=") == nil)
        #expect(Base64URL.decode("abcdefg") == [0x69, 0xB7, 0x1D, 0x79, 0xF8])
    }
}

@Suite struct APIBodyTests {
    let pki = TestPKI.shared(seed: 1)
    static let t0: Millis = 1_772_323_200_000  // 2026-03-01

    func tx(_ i: Int, expires: Millis) -> JWSTransactionDecodedPayload {
        Build.transaction(
            "\(1000 + i)", chain: "1000", purchased: Self.t0 + Millis(i) * 1000, expires: Self.t0 + expires,
            signed: Self.t0 + 50_000, reason: i == 0 ? .purchase : .renewal)
    }

    @Test func historyIsPagedByTwentyWithRevisionsAndStatusesFollowA4() throws {
        let txs = (0..<45).map { tx($0, expires: Millis($0) * 1000 + 1000) }
        var renewal = JWSRenewalInfoDecodedPayload(
            originalTransactionId: "1000", productId: "pro.monthly", autoRenewProductId: "pro.monthly",
            autoRenewStatus: .on, signedDate: Self.t0 + 50_000, environment: .production)
        renewal.isInBillingRetryPeriod = true
        renewal.gracePeriodExpiresDate = Self.t0 + 60_000
        let r = ArtifactRenderer(pki: pki, appAppleId: 1_234_567_890)
        guard
            case let .apiSnapshot(otid, pages, statuses) = r.render(
                .apiSnapshot(APISnapshot(originalTransactionId: "1000", transactions: txs, renewalInfo: renewal)))
        else {
            Issue.record("not a snapshot")
            return
        }
        #expect(otid == "1000")
        #expect(pages.map(\.signedTransactions.count) == [20, 20, 5])
        #expect(pages.map(\.hasMore) == [true, true, false])
        #expect(Set(pages.map(\.revision)).count == 3)
        let item = try #require(statuses?.data.first?.lastTransactions.first)
        #expect(item.status == .billingGracePeriod)  // latest expired at 45 s, grace until 60 s, asked at 50 s
        let v = SignedDataVerifier(trustedRoots: pki.trustedRoots)
        let latest = try v.verify(item.signedTransactionInfo, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
            .get()
        #expect(latest.transactionId == "1044")
    }

    @Test func notificationHistoryKeepsAtMostSixAttemptsAndPages() {
        let n = ResponseBodyV2DecodedPayload(
            notificationType: .test, subtype: nil, notificationUUID: "u", signedDate: 1, data: nil)
        let attempts = (0..<8).map { SendAttemptItem(attemptDate: Millis($0), sendAttemptResult: "TIMED_OUT") }
        let page = ArtifactRenderer(pki: pki).notificationHistory(
            Array(repeating: (n, attempts), count: 25), pageSize: 20)
        #expect(page.hasMore && page.paginationToken != nil)
        #expect(page.notificationHistory.count == 20)
        #expect(page.notificationHistory[0].sendAttempts.count == 6)
    }
}

@Suite struct LegacyReceiptTests {
    static let t0: Millis = 1_772_323_200_000  // 2026-03-01

    @Test func theResponseUsesStringsAndMarksUpgradesWithCancellationDate() throws {
        func tx(_ id: String, _ product: String, _ p: Millis, _ e: Millis, upgraded: Bool = false)
            -> JWSTransactionDecodedPayload
        {
            var t = Build.transaction(
                id, chain: "1", product: product, purchased: Self.t0 + p, expires: Self.t0 + e, signed: Self.t0 + 100,
                reason: nil)
            t.isUpgraded = upgraded ? true : nil
            return t
        }
        let facts = LegacyReceiptFacts(
            userId: "u", bundleId: "com.example.iapcheck", environment: .production, requestDate: Self.t0 + 100,
            chains: [
                APISnapshot(
                    originalTransactionId: "1",
                    transactions: [tx("1", "basic.monthly", 0, 50, upgraded: true), tx("2", "pro.monthly", 10, 60)],
                    renewalInfo: nil)
            ])
        let body = LegacyReceiptRenderer.body(facts)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(json["status"] as? Int == 0)
        let entries = try #require(json["latest_receipt_info"] as? [[String: Any]])
        let upgraded = try #require(entries.first { $0["transaction_id"] as? String == "1" })
        #expect(upgraded["is_upgraded"] as? String == "true")
        #expect(upgraded["cancellation_date_ms"] as? String == String(Self.t0 + 10))
        #expect(upgraded["quantity"] as? String == "1")
        #expect((upgraded["purchase_date"] as? String)?.hasSuffix("Etc/GMT") == true)
        #expect((json["receipt"] as? [String: Any])?["request_date_ms"] as? String == String(Self.t0 + 100))
    }

    static func transaction(_ id: String, _ product: String, type: ProductType, expires: Millis?)
        -> JWSTransactionDecodedPayload
    {
        JWSTransactionDecodedPayload(
            transactionId: id, originalTransactionId: id, bundleId: "com.example.iapcheck", productId: product,
            subscriptionGroupIdentifier: type == .autoRenewable ? "21000001" : nil, purchaseDate: t0,
            expiresDate: expires, type: type, signedDate: t0, environment: .production, transactionReason: nil)
    }

    /// Apple's arrays: latest_receipt_info holds every transaction of a receipt with a subscription, in_app the
    /// receipt's own (outdated when the app sent an old receipt), pending_renewal_info one per subscription chain;
    /// a receipt without a subscription has in_app alone.
    @Test func theTwoArraysAreFilledAsApplesAre() throws {
        let sub = Self.transaction("1", "pro.monthly", type: .autoRenewable, expires: Self.t0 + 1000)
        var renewed = Self.transaction("3", "pro.monthly", type: .autoRenewable, expires: Self.t0 + 2000)
        renewed.originalTransactionId = "1"
        let lifetime = Self.transaction("2", "lifetime", type: .nonConsumable, expires: nil)
        var facts = LegacyReceiptFacts(
            userId: "u", bundleId: "com.example.iapcheck", environment: .production, requestDate: Self.t0 + 1500,
            chains: [
                APISnapshot(
                    originalTransactionId: "1", transactions: [sub, renewed],
                    renewalInfo: JWSRenewalInfoDecodedPayload(
                        originalTransactionId: "1", productId: "pro.monthly", autoRenewProductId: "pro.monthly",
                        autoRenewStatus: .on, signedDate: Self.t0 + 1500, environment: .production)),
                APISnapshot(originalTransactionId: "2", transactions: [lifetime], renewalInfo: nil),
            ])
        facts.inApp = [
            APISnapshot(originalTransactionId: "1", transactions: [sub], renewalInfo: nil),
            APISnapshot(originalTransactionId: "2", transactions: [lifetime], renewalInfo: nil),
        ]
        facts.receiptCreationDate = Self.t0 + 10
        let r = LegacyReceiptRenderer.response(facts, shuffleSeed: 1)
        #expect(Set(r.latest_receipt_info?.map(\.transaction_id) ?? []) == ["1", "2", "3"])
        #expect(Set(r.receipt?.in_app.map(\.transaction_id) ?? []) == ["1", "2"])  // made before the renewal
        #expect(r.receipt?.receipt_creation_date_ms == String(Self.t0 + 10))
        #expect(r.pending_renewal_info?.map(\.original_transaction_id) == ["1"])
        // Without a subscription: in_app only.
        let plain = LegacyReceiptRenderer.response(
            LegacyReceiptFacts(
                userId: "u", bundleId: "com.example.iapcheck", environment: .production, requestDate: Self.t0,
                chains: [APISnapshot(originalTransactionId: "2", transactions: [lifetime], renewalInfo: nil)]))
        #expect(plain.latest_receipt_info == nil && plain.pending_renewal_info == nil)
        #expect(plain.receipt?.in_app.map(\.transaction_id) == ["2"])
    }
}

@Suite struct OCSPOptionTests {
    @Test func theOCSPURLIsCarriedOnlyWhenAsked() throws {
        let plain = TestPKI.shared(seed: 1)
        #expect(try plain.leaves[0].issued.certificate.extensions.authorityInformationAccess == nil)
        let online = try TestPKI(
            seed: 1, validFrom: plain.validFrom, validUntil: plain.validUntil, leafCount: 1,
            ocspURL: "http://127.0.0.1:8081/ocsp")
        let aia = try #require(try online.leaves[0].issued.certificate.extensions.authorityInformationAccess)
        #expect(
            aia.contains {
                $0.method == .ocspServer && $0.location == .uniformResourceIdentifier("http://127.0.0.1:8081/ocsp")
            })
        #expect(try online.intermediate.certificate.extensions.authorityInformationAccess != nil)
        #expect(try online.root.certificate.extensions.authorityInformationAccess == nil)
    }
}
