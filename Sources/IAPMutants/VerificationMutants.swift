import Foundation
import IAPEncoding
import IAPModel
import IAPReference
import IAPSupport
import IAPVerification

// Mistakes in verifying what Apple signed (signature, chain, dates, nested JWS, API answers) and in reading
// legacy receipts.

/// A mistake in JWS verification, expressed as one loosened switch of ``SignedDataVerifier/Options``.
final class VerifierMutant: ReferenceValidator {
    let mutantName: String
    let loosen: @Sendable (inout SignedDataVerifier.Options) -> Void
    init(_ name: String, _ loosen: @escaping @Sendable (inout SignedDataVerifier.Options) -> Void) {
        self.mutantName = name
        self.loosen = loosen
    }
    override var name: String { "mutant:\(mutantName)" }
    override func verifierOptions(_ base: SignedDataVerifier.Options) -> SignedDataVerifier.Options {
        var o = base
        loosen(&o)
        return o
    }
}

/// Checks the chain's validity at its own clock when the artifact arrives: an artifact whose leaf expired since it
/// was signed is refused, a leaf that became valid after the claimed signing is taken.
final class CertificateDatesAtDelivery: ReferenceValidator {
    override var name: String { "mutant:certificate-dates-at-delivery" }
    /// The clock of the delivery being verified (set before each one; the validator is called one at a time).
    let clock = Locked<Millis>(0)
    override func verifierOptions(_ base: SignedDataVerifier.Options) -> SignedDataVerifier.Options {
        var o = base
        let clock = clock
        o.validityInstant = { _ in clock.value }
        return o
    }
    override func willVerify(now: Millis) { clock.withLock { $0 = now } }
}

/// The payload of a compact JWS, decoded without any verification (what the mistakes below do).
func unverifiedPayload<T: Decodable>(_ jws: String, as: T.Type) -> T? {
    let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let bytes = Base64URL.decode(parts[1]) else { return nil }
    return try? JSONDecoder().decode(T.self, from: Data(bytes))
}

final class NestedUnverified: ReferenceValidator {
    override var name: String { "mutant:nested-jws-unverified" }
    override func verifyNestedTransaction(_ jws: String) -> Result<
        JWSTransactionDecodedPayload, SignedDataVerifier.Failure
    > {
        unverifiedPayload(jws, as: JWSTransactionDecodedPayload.self).map { .success($0) } ?? verifyTransaction(jws)
    }
}

/// Decodes the JWS of API answers without verifying them; app submissions and notifications are still verified.
final class APIAnswersUnverified: ReferenceValidator {
    override var name: String { "mutant:api-answers-unverified" }
    private var inAPIAnswer = false
    override func ingestAPIResponses(
        originalTransactionId otid: String, history: [HistoryResponse], statuses: StatusResponse?
    ) -> DeliveryVerdict {
        inAPIAnswer = true
        defer { inAPIAnswer = false }
        return super.ingestAPIResponses(originalTransactionId: otid, history: history, statuses: statuses)
    }
    override func verifyTransaction(_ jws: String) -> Result<JWSTransactionDecodedPayload, SignedDataVerifier.Failure> {
        if inAPIAnswer, let tx = unverifiedPayload(jws, as: JWSTransactionDecodedPayload.self) { return .success(tx) }
        return super.verifyTransaction(jws)
    }
    override func verifyRenewal(_ jws: String) -> Result<JWSRenewalInfoDecodedPayload, SignedDataVerifier.Failure> {
        if inAPIAnswer, let r = unverifiedPayload(jws, as: JWSRenewalInfoDecodedPayload.self) { return .success(r) }
        return super.verifyRenewal(jws)
    }
}

final class UpgradeAsRefund: ReferenceValidator {
    override var name: String { "mutant:upgrade-as-refund" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        let verdict = super.ingestLegacyReceipt(userId: userId, body: body)
        guard verdict.isAccepted, let r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8))
        else { return verdict }
        for e in r.latest_receipt_info ?? [] where e.is_upgraded == "true" {
            guard let c = e.cancellation_date_ms.flatMap({ Millis($0) }), var chain = chains[e.original_transaction_id]
            else { continue }
            for (id, var tx) in chain.transactions where tx.revocationDate == nil {
                tx.revocationDate = c
                chain.transactions[id] = tx
            }
            chains[e.original_transaction_id] = chain
        }
        return verdict
    }
}

/// Reads the receipt's own `in_app` and never `latest_receipt_info`: a receipt the app made before renewals, refunds
/// or grace since shows none of them there.
final class LegacyInAppOnly: ReferenceValidator {
    override var name: String { "mutant:legacy-in-app-only" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        guard var r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)),
            let stripped = { () -> Data? in
                r.latest_receipt_info = nil
                return try? JSONEncoder().encode(r)
            }()
        else { return super.ingestLegacyReceipt(userId: userId, body: body) }
        return super.ingestLegacyReceipt(userId: userId, body: String(decoding: stripped, as: UTF8.self))
    }
}

final class LegacyFirstEntryLatest: PinnedLatestMutant {
    override var name: String { "mutant:legacy-first-entry-latest" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        let verdict = super.ingestLegacyReceipt(userId: userId, body: body)
        if verdict.isAccepted, let r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)) {
            var seen: Set<String> = []
            for e in r.latest_receipt_info ?? [] where seen.insert(e.original_transaction_id).inserted {
                pinned[e.original_transaction_id] = e.transaction_id
            }
        }
        return verdict
    }
}

/// Keeps no record of notification UUIDs: a replay with a newer signedDate overwrites what it knew.
final class NoUUIDDedupe: ReferenceValidator {
    override var name: String { "mutant:no-uuid-dedupe" }
    override var dedupesNotifications: Bool { false }
}

/// Reads `pending_renewal_info[0]` as the renewal state of every subscription of a receipt: with two subscriptions,
/// the grace or billing retry of one is applied to the other (the array has one entry per chain, in no order).
final class FirstPendingRenewalForAll: ReferenceValidator {
    override var name: String { "mutant:first-pending-renewal-for-all" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        guard var r = try? JSONDecoder().decode(LegacyReceiptResponse.self, from: Data(body.utf8)),
            let first = r.pending_renewal_info?.first, (r.pending_renewal_info?.count ?? 0) > 1
        else { return super.ingestLegacyReceipt(userId: userId, body: body) }
        r.pending_renewal_info = r.pending_renewal_info?.map { p in
            var q = p
            q.is_in_billing_retry_period = first.is_in_billing_retry_period
            q.grace_period_expires_date = first.grace_period_expires_date
            q.grace_period_expires_date_ms = first.grace_period_expires_date_ms
            q.expiration_intent = first.expiration_intent
            q.auto_renew_status = first.auto_renew_status
            return q
        }
        let body = (try? JSONEncoder().encode(r)).map { String(decoding: $0, as: UTF8.self) } ?? body
        return super.ingestLegacyReceipt(userId: userId, body: body)
    }
}

/// Reads a `verifyReceipt` answer's receipt whatever its `status` says, an absent status counting as 0 (Go's zero
/// value, `body.get("status", 0)`): an error answer that carries a receipt is taken as valid.
final class LegacyStatusUnchecked: ReferenceValidator {
    override var name: String { "mutant:legacy-status-unchecked" }
    override func ingestLegacyReceipt(userId: String, body: String) -> DeliveryVerdict {
        guard var o = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], o["receipt"] != nil,
            let valid = { () -> Data? in
                o["status"] = 0
                return try? JSONSerialization.data(withJSONObject: o)
            }()
        else { return super.ingestLegacyReceipt(userId: userId, body: body) }
        return super.ingestLegacyReceipt(userId: userId, body: String(decoding: valid, as: UTF8.self))
    }
}
