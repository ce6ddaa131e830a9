import Crypto
import Foundation
import IAPEncoding
import IAPModel
import IAPSupport

/// Produces forged artifacts, one class at a time (``ForgeryClass``). The decoded content handed in is already
/// what the attacker wants accepted (a revocation removed, an expiry pushed years out, another app's identity);
/// the kit turns every JWS of the delivery into the class's flavour of wrong.
public struct ForgeryKit: Sendable {
    public let pki: TestPKI
    /// Tokens larger than this are refused by the reference validator; the oversized class goes well past it.
    public static let oversizedBytes = 300_000

    public init(pki: TestPKI) { self.pki = pki }

    /// The oversized class's payload up to the value's members, base64url-encoded: `{"padding":"` and `oversizedBytes`
    /// "A"s (both multiples of three bytes, so the encoding of what follows joins it). Made once; every header's
    /// signing prefix shares this array.
    private static let paddingOpening: [UInt8] = {
        let opening = Array("{\"padding\":\"".utf8)
        precondition(opening.count % 3 == 0 && oversizedBytes % 3 == 0, "the padding must encode on its own")
        return Array(Base64URL.encode(opening + [UInt8](repeating: UInt8(ascii: "A"), count: oversizedBytes)).utf8)
    }()

    /// A key nobody's certificate holds (made once: a new key per forgery cost more than the forgery's signature).
    static let foreignKey = P256.Signing.PrivateKey()
    /// Xcode's StoreKit-testing key stands in for its own self-signed one.
    static let xcodeKey = P256.Signing.PrivateKey()

    /// The decoded content of a forged delivery of class `f`, built from a genuine notification: the tempting
    /// transaction (`tempting`) arrives by the app channel, except for the classes that only exist for a
    /// notification; identity classes swap in another bundle, app or environment. A replay keeps the UUID.
    public static func delivery(
        _ f: ForgeryClass, tempting: JWSTransactionDecodedPayload, notification: ResponseBodyV2DecodedPayload,
        userId: String
    ) -> Delivery {
        // An oversized token carries the genuine purchase: its only fault is its size (ForgeryClass.isHardeningOnly).
        var content = f.isHardeningOnly ? notification.data?.transactionInfo ?? tempting : tempting
        // A replay is Apple's own notification again, about the same transaction (ForgeryClass.content): its ids.
        if f.mayBeAcknowledged, let genuine = notification.data?.transactionInfo {
            (content.transactionId, content.webOrderLineItemId) = (genuine.transactionId, genuine.webOrderLineItemId)
        }
        var n = notification
        n.data?.transactionInfo = content
        if f != .replayedNotificationUUID { n.notificationUUID = "f00d" + n.notificationUUID.dropFirst(4) }
        if f.isLegacyOnly {
            // The tempting transaction in a verifyReceipt answer about this user, wrong in the class's way.
            let view = LegacyReceiptFacts.legacyView(content, requestDate: content.signedDate)
            return .legacyReceipt(
                LegacyReceiptFacts(
                    userId: userId, bundleId: content.bundleId, environment: content.environment,
                    requestDate: content.signedDate,
                    chains: [
                        APISnapshot(
                            originalTransactionId: content.originalTransactionId, transactions: [view], renewalInfos: []
                        )
                    ]))
        }
        switch f {
        case .wrongAppAppleId:
            n.data?.appAppleId = 999_999_999
            return .notification(n)
        case .replayedNotificationUUID, .forgedNestedTransaction:
            return .notification(n)
        default:
            let x = f.withIdentity(content)
            return .appTransaction(AppTransactionSubmission(userId: userId, transaction: x, deviceTime: nil))
        }
    }

    /// The forgery's genuine twin: an artifact on the class's channel, correctly signed for the app, that any correct
    /// validator accepts — the probe's own genuine facts again (`genuine`: the refunded transaction as Apple signs
    /// it after the refund; `notification`: the refund notification, sent again as Apple retries it). A validator
    /// that refuses the twin too has not shown it rejects the forgery for what is forged. Nil for a hardening-only
    /// class: its content is already genuine (its twin is that content at an ordinary size).
    public static func genuineTwin(
        _ f: ForgeryClass, genuine: JWSTransactionDecodedPayload, notification: ResponseBodyV2DecodedPayload,
        userId: String
    ) -> Delivery? {
        if f.isHardeningOnly { return nil }
        // A legacy answer with status 0 listing the transaction as it stands; the class's fault lives in the body.
        if f.isLegacyOnly { return delivery(f, tempting: genuine, notification: notification, userId: userId) }
        if f.notificationOnly { return .notification(notification) }
        return .appTransaction(AppTransactionSubmission(userId: userId, transaction: genuine, deviceTime: nil))
    }

    /// The `verifyReceipt` answer of a legacy class: a non-zero `status` (one of 21002, 21003, 21010, 21199 by the
    /// request date) or none, the first half of the answer, or an outage's HTML page; any other class's answer is
    /// the receipt as rendered (its content carries the class).
    static func legacyBody(_ f: ForgeryClass, _ l: LegacyReceiptFacts) -> String {
        let seed = UInt64(truncatingIfNeeded: l.requestDate)
        switch f {
        case .legacyErrorStatus:
            var r = LegacyReceiptRenderer.response(l, shuffleSeed: seed)
            r.status = [21002, 21003, 21010, 21199][Int(seed % 4)]
            return LegacyReceiptRenderer.body(r)
        case .legacyMissingStatus:
            let body = LegacyReceiptRenderer.body(l, shuffleSeed: seed)
            guard var o = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else {
                return body
            }
            o["status"] = nil
            let data = try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])
            return data.map { String(decoding: $0, as: UTF8.self) } ?? body
        case .legacyTruncatedBody:
            let body = Array(LegacyReceiptRenderer.body(l, shuffleSeed: seed).utf8)
            return String(decoding: body.prefix(body.count / 2), as: UTF8.self)
        case .legacyNonJSONBody:
            return legacyOutagePage
        default:
            return LegacyReceiptRenderer.body(l, shuffleSeed: seed)
        }
    }

    /// What a proxy in front of `verifyReceipt` answers during an outage.
    public static let legacyOutagePage =
        "<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1></body></html>"

    /// How far a `leaf-not-yet-valid-at-signed-date` forgery backdates its `signedDate`s: its leaf becomes valid an
    /// hour after the claimed signing, so it is valid when the forgery arrives and not at the instant it claims.
    public static let backdating: Millis = CivilTime.msPerDay

    public func render(_ forgery: ForgeryClass, _ d: Delivery) -> SignedDelivery {
        let d = forgery == .leafNotYetValid ? Self.backdated(d) : d
        switch d {
        case .appTransaction(let s):
            return .appTransaction(
                userId: s.userId, signedTransaction: jws(forgery, s.transaction, s.transaction.signedDate),
                deviceTime: s.deviceTime)
        case .notification(let n) where forgery == .forgedNestedTransaction:
            // The envelope is genuine and validly signed; only the nested transaction is forged.
            var wire = ArtifactRenderer(pki: pki).wire(n)
            wire.data?.signedTransactionInfo = n.data?.transactionInfo.map {
                jws(.foreignKeySignature, $0, $0.signedDate)
            }
            return .notification(signedPayload: JWSSigner(pki: pki).sign(wire, signedDate: n.signedDate))
        case .notification(let n):
            let nested = ResponseBodyV2SignedPayload(
                notificationType: n.notificationType, subtype: n.subtype, notificationUUID: n.notificationUUID,
                version: n.version, signedDate: n.signedDate,
                data: n.data.map { data in
                    .init(
                        appAppleId: data.appAppleId, bundleId: data.bundleId, environment: data.environment,
                        signedTransactionInfo: data.transactionInfo.map { jws(forgery, $0, $0.signedDate) },
                        signedRenewalInfo: data.renewalInfo.map { jws(forgery, $0, $0.signedDate) }, status: data.status
                    )
                },
                summary: n.summary, externalPurchaseToken: n.externalPurchaseToken)
            return .notification(signedPayload: jws(forgery, nested, n.signedDate))
        case .legacyReceipt(let l):
            // Not signed: the class is in the answer's status or its bytes (or, wrong bundle, in its content).
            return .legacyReceipt(userId: l.userId, responseBody: Self.legacyBody(forgery, l))
        case .apiSnapshot(let s):
            return ArtifactRenderer(pki: pki).apiResponses(
                s, sign: { jws(forgery, $0, $0.signedDate) }, { jws(forgery, $0, $0.signedDate) })
        }
    }

    /// One forged JWS of `value`.
    // long by design: one case per forgery class, the table of how each is signed, reads best whole.
    public func jws<T: Encodable>(_ forgery: ForgeryClass, _ value: T, _ signedDate: Millis) -> String {
        let genuine = pki.leaf(at: signedDate)
        let payload = JWSSigner.payload(value)
        // Tokens under a leaf's own header start from its prefix's digest state (the header is hashed once per leaf).
        let genuinePrefix = genuine.es256Prefix
        func signed(by leaf: TestPKI.Leaf, chain: [String]? = nil) -> String {
            guard let chain else { return JWSSigner.es256(leaf.es256Prefix, payload, key: leaf.key) }
            return JWSSigner.es256(JWSSigner.header(alg: "ES256", x5c: chain), payload, key: leaf.key)
        }
        /// The three segments of a compact JWS, split on its two dots (bytes, not Characters: tokens are kilobytes).
        func segments(_ token: String) -> (Substring, Substring, Substring) {
            let u = token.utf8
            let d0 = u.firstIndex(of: UInt8(ascii: "."))!, d1 = u.lastIndex(of: UInt8(ascii: "."))!
            return (token[..<d0], token[token.index(after: d0)..<d1], token[token.index(after: d1)...])
        }
        let broken = pki.broken
        switch forgery {
        case .tamperedPayload:
            // Signed over an innocuous payload, then the payload segment swapped for the tempting one.
            let decoy = JWSSigner.es256(genuinePrefix, Base64URL.encode(Array("{}".utf8)), key: genuine.key)
            let (header, _, signature) = segments(decoy)
            return "\(header).\(payload).\(signature)"
        case .tamperedHeader:
            let (_, body, signature) = segments(JWSSigner.es256(genuinePrefix, payload, key: genuine.key))
            return
                "\(JWSSigner.header(alg: "ES256", x5c: genuine.chain, extra: ",\"kid\":\"attacker\"")).\(body).\(signature)"
        case .foreignKeySignature:
            return JWSSigner.es256(genuinePrefix, payload, key: Self.foreignKey)
        case .algNone:
            return JWSSigner.header(alg: "none", x5c: genuine.chain) + "." + payload + "."
        case .algHS256:
            // The classic key-confusion attack: HMAC keyed with the (public) leaf key.
            let header = JWSSigner.header(alg: "HS256", x5c: genuine.chain)
            let key = SymmetricKey(data: genuine.key.publicKey.derRepresentation)
            let mac = HMAC<SHA256>.authenticationCode(for: Data((header + "." + payload).utf8), using: key)
            return header + "." + payload + "." + Base64URL.encode(Array(mac))
        case .missingX5c:
            return JWSSigner.es256(JWSSigner.header(alg: "ES256", x5c: nil), payload, key: genuine.key)
        case .twoCertificateChain:
            return signed(by: genuine, chain: Array(genuine.chain.prefix(2)))
        case .fourCertificateChain:
            return signed(by: genuine, chain: genuine.chain + [genuine.chain[2]])
        case .reorderedChain:
            return signed(by: genuine, chain: [genuine.chain[1], genuine.chain[0], genuine.chain[2]])
        case .untrustedRoot: return signed(by: broken.untrusted)
        case .leafWithoutOID: return signed(by: broken.leafWithoutOID)
        case .intermediateWithoutOID: return signed(by: broken.intermediateWithoutOID)
        case .oidCritical: return signed(by: broken.leafOIDCritical)
        case .leafExpired: return signed(by: broken.leafExpired)
        case .leafNotYetValid:
            // Valid from an hour after the claimed signedDate on: a verifier that checks the chain at the time of
            // delivery (or against its wall clock) accepts it; at signedDate, as Apple's rule says, it is not valid.
            return signed(
                by: pki.leaf(
                    validFrom: TestPKI.date(signedDate &+ CivilTime.msPerHour),
                    until: TestPKI.date(signedDate &+ 2 * 365 * CivilTime.msPerDay)))
        case .intermediateNotCA: return signed(by: broken.intermediateNotCA)
        case .legacyErrorStatus, .legacyMissingStatus, .legacyTruncatedBody, .legacyNonJSONBody:
            // Classes of a verifyReceipt answer travel on no JWS; asked for one, a token nobody's certificate signs.
            return JWSSigner.es256(genuinePrefix, payload, key: Self.foreignKey)
        case .wrongBundleId, .wrongAppAppleId, .wrongEnvironment, .replayedNotificationUUID, .forgedNestedTransaction:
            // Validly signed: the content itself is what is wrong (or already seen).
            return signed(by: genuine)
        case .xcodeEnvironment:
            // What Xcode's StoreKit testing produces: its own self-signed key, one certificate.
            return JWSSigner.es256(
                JWSSigner.header(alg: "ES256", x5c: [genuine.chain[0]], extra: ",\"kid\":\"Apple_Xcode_Key\""), payload,
                key: Self.xcodeKey)
        case .truncatedSegment:
            let good = signed(by: genuine)
            return String(decoding: good.utf8.prefix(good.utf8.count - 20), as: UTF8.self)
        case .nonBase64Segment:
            let (header, body, signature) = segments(signed(by: genuine))
            return "\(header).\(body.prefix(10))*!\(body.dropFirst(12)).\(signature)"
        case .x5cNotBase64:
            return signed(by: genuine, chain: ["not*base64", genuine.chain[1], genuine.chain[2]])
        case .oversizedToken:
            // `{"padding":"` and `oversizedBytes` "A"s, then the value's members. The padding leads, so every oversized
            // token under one header begins with the same 400 kB, hashed once per header (hashed for each token, the
            // oversized tokens were over a quarter of all bytes a check hashed).
            var rest = Array("\"".utf8)
            let json = JWSSigner.json(value)
            if json.count > 2 { rest.append(UInt8(ascii: ",")) }
            rest += json.dropFirst()
            return JWSSigner.es256(Self.oversizedPrefix(genuine.es256Header), Base64URL.encode(rest), key: genuine.key)
        }
    }

    /// `header.` and the oversized class's encoded padding (one array for all), with the digest state after them, by
    /// header: some 7 kB an entry (the header as key and in the prefix).
    private static let oversizedPrefixes = Locked<[String: JWSSigner.SigningPrefix]>([:])

    static func oversizedPrefix(_ header: String) -> JWSSigner.SigningPrefix {
        if let known = oversizedPrefixes.withLock({ $0[header] }) { return known }
        let prefix = JWSSigner.SigningPrefix([Array((header + ".").utf8), paddingOpening])
        oversizedPrefixes.withLock {
            if $0.count >= 4096 { $0.removeAll() }  // a corpus's dates may reach any number of leaves: bounded memory
            $0[header] = prefix
        }
        return prefix
    }

    /// The delivery with every `signedDate` moved back by ``backdating``.
    static func backdated(_ d: Delivery) -> Delivery {
        func tx(_ t: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
            var t = t; t.signedDate = t.signedDate &- backdating; return t
        }
        func rn(_ r: JWSRenewalInfoDecodedPayload) -> JWSRenewalInfoDecodedPayload {
            var r = r; r.signedDate = r.signedDate &- backdating; return r
        }
        switch d {
        case .appTransaction(var s):
            s.transaction = tx(s.transaction)
            return .appTransaction(s)
        case .notification(var n):
            n.signedDate = n.signedDate &- backdating
            if var data = n.data {
                data.transactionInfo = data.transactionInfo.map(tx)
                data.renewalInfo = data.renewalInfo.map(rn)
                n.data = data
            }
            return .notification(n)
        case .apiSnapshot(var s):
            s.transactions = s.transactions.map(tx)
            s.renewalInfos = s.renewalInfos.map(rn)
            return .apiSnapshot(s)
        case .legacyReceipt:
            return d
        }
    }
}
