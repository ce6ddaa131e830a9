import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import Testing

/// The explanation under a failure names the field each mutant misreads (docs/check.md#reading-an-explanation): the
/// developer sees what the oracle relied on without decoding a JWS.
@Suite struct ExplanationTests {
    /// Mutant → the word its explanation must contain: the field (or artifact part) the mistake misreads (`a|b`: either).
    static let misread: [String: String] = [
        "ignore-revocation": "revocationDate +",
        "expiry-from-duration": "expiresDate",
        "array-order-latest": "latest by purchaseDate",
        "latest-by-max-expires": "latest by purchaseDate",
        "device-clock": "deviceTime",
        "no-grace": "gracePeriodExpiresDate +",
        "retry-as-active": "isInBillingRetryPeriod true",
        "static-grace": "expiresDate",
        "hardcoded-grace-length": "gracePeriodExpiresDate +",
        "consumable-double-credit": "transactionId …",
        "no-uuid-dedupe": "notificationUUID",
        "arrival-order-wins": "signedDate",
        "notification-type-as-state": "REFUND",
        "family-rejected": "inAppOwnershipType FAMILY_SHARED",
        "family-as-owner": "inAppOwnershipType FAMILY_SHARED",
        "ignore-revoke": "revocationDate +",
        "ignore-isupgraded": "isUpgraded",
        "downgrade-immediate": "autoRenewProductId",
        "upgrade-deferred": "transactionReason PURCHASE",
        "crossgrade-deferred": "transactionReason PURCHASE",
        "cancel-is-expiry": "autoRenewStatus",
        "refund-irreversible": "REFUND_REVERSED",
        "refund-retroactive": "revocationDate +",
        "old-period-refund-kills-current": "revocationDate +",
        "intro-per-product": "offerType",
        "intro-trial-flag-only": "offerType",
        "intro-from-offertype-any": "offerType",
        "env-mixup-accept": "environment",
        "bundle-unchecked": "bundleId|appAppleId",
        "wait-for-expired": "expiresDate",
        "incomplete-renewal-info-rejected": "gracePeriodExpiresDate absent|expirationIntent absent",
        "extension-ignored": "RENEWAL_EXTENDED",
        "price-pending-revokes": "priceIncreaseStatus",
        "nonrenewing-lifetime": "no expiresDate",
        "boundary-inclusive": "expiresDate",
        "data-required": "no data",
        "unknown-type-rejected": "notificationType",
        "consumables-only-from-notifications": "app-transaction",
        "grace-assumed-after-trial": "gracePeriodExpiresDate absent",
        "appaccounttoken-required": "no appAccountToken",
        "offer-redeemed-dropped": "OFFER_REDEEMED",
        "one-time-charge-dropped": "ONE_TIME_CHARGE",
        "recent-window": "transactions in all",
        "signed-date-watermark": "signedDate",
        "history-first-page": "pages",
        "history-one-chain": "originalTransactionId",
        "transaction-required": "no signedTransactionInfo",
        "duplicate-rejected": "notificationUUID delivered before",
        "consumption-request-revokes": "CONSUMPTION_REQUEST",
        "period-per-transaction-id": "originalTransactionId",
        "skip-signature": "signature",
        "skip-chain": "x5c|certificate",
        "trust-embedded-root": "root",
        "skip-oid-check": "OID",
        "ignore-certificate-dates": "validity",
        "certificate-dates-at-delivery": "signedDate",
        "no-size-limit": "tokenSizeLimit",
        "api-answers-unverified": "signature",
        "nested-jws-unverified": "signedTransactionInfo",
        "upgrade-as-refund": "isUpgraded",
        "first-pending-renewal-for-all": "pending_renewal_info",
        "legacy-in-app-only": "in_app was made",
        "legacy-status-unchecked": "status",
        "legacy-first-entry-latest": "latest by purchaseDate",
        "check-then-act-credit": "transactionId …",
        "unlinked-notifications-dropped": "appAccountToken",
        "month-overflow": "the catalog's duration",
        "past-from-current-state": "in hindsight",
    ]

    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Corpus").path

    /// Every mutant has an entry (a new one gets its field), and for every one with a saved counterexample the
    /// explanation of its failure names that field.
    @Test func theExplanationNamesTheFieldEachMutantMisreads() throws {
        let inProcess = Mutants.all.map(\.name).filter { !$0.hasPrefix("backend-") }
        #expect(
            Set(inProcess).subtracting(Self.misread.keys).isEmpty,
            "no entry: \(Set(inProcess).subtracting(Self.misread.keys).sorted())")
        var named: [String] = [], missed: [String] = []
        var seen: Set<String> = []
        for file in Corpus.files(in: Self.corpus) {
            let saved = try Corpus.load(path: file)
            guard saved.foundWith.hasPrefix("mutant:") else { continue }
            let name = String(saved.foundWith.dropFirst(7))
            guard let field = Self.misread[name], let m = Mutants.named(name), seen.insert(name).inserted else {
                continue
            }
            // A race mutant fails only when the race is lost: replay until it does.
            var found: Discrepancy?
            for _ in 0..<50 where found == nil {
                if case .discrepancy(let d) = CaseRunner.run(saved.testCase, against: m.make()) { found = d }
            }
            guard let d = found else { continue }
            let text = (Explanation.lines(d, in: saved.testCase)).joined(separator: "\n")
            if field.split(separator: "|").contains(where: { text.contains($0) }) {
                named.append(name)
            } else {
                missed.append("\(name) (\(field)):\n\(text)")
            }
        }
        #expect(named.count + missed.count >= 60, "only \(named.count + missed.count) mutants have a counterexample")
        // Every mutant's explanation names what it misreads (issue 50): none may be missed.
        #expect(missed.isEmpty, "missed: \(missed.joined(separator: "\n\n"))")
        print(
            "explanation names the misread field for \(named.count) of \(named.count + missed.count) mutants; missed: \(missed.map { $0.prefix(while: { $0 != " " }) })"
        )
    }

    /// `--explain`: per delivery, the fields that changed from the previous artifact of the chain, so a grace
    /// period shows as the renewal info's fields turning, and a forged artifact says what was forged.
    @Test func explainListsWhatEachDeliveryChanged() throws {
        let file = try #require(
            Corpus.files(in: Self.corpus).first { (try? Corpus.load(path: $0))?.foundWith == "mutant:no-grace" })
        let saved = try Corpus.load(path: file)
        guard case .discrepancy(let d) = CaseRunner.run(saved.testCase, against: Mutants.named("no-grace")!.make())
        else { Issue.record("no-grace passes its counterexample"); return }
        let lines = Explanation.deliveries(saved.testCase, upTo: d.step)
        #expect(lines.contains { $0.contains("(the first of chain") && $0.contains("expiresDate") })
        #expect(lines.contains { $0.contains("renewal info") && $0.contains("gracePeriodExpiresDate +") })
        #expect(
            lines.contains { $0.contains("isInBillingRetryPeriod false → true") }, "\(lines.joined(separator: "\n"))")
        #expect(lines.last?.contains("the question") == true)
    }
}
