import Foundation
import IAPModel
import IAPReference
import IAPValidatorAPI

/// The race mutant: consumable credits are deduplicated with check-then-act, and the act happens outside the
/// critical section ("ask the ledger service, then record"), so two concurrent deliveries of one purchase both
/// credit it.
///
/// Sendable as its superclass is, except for the deliberate race this mutant exists to have.
final class CheckThenActCredit: SynchronizedReferenceValidator, @unchecked Sendable {
    override var name: String { "mutant:check-then-act-credit" }
    var ledger: [JWSTransactionDecodedPayload] = []

    override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        try super.reset(config)
        lock.lock()
        ledger = []
        lock.unlock()
    }

    override func creditConsumable(_ tx: JWSTransactionDecodedPayload, via channel: DeliveryChannel) {
        if let i = ledger.firstIndex(where: { $0.transactionId == tx.transactionId }) {  // check, under the lock
            if tx.signedDate > ledger[i].signedDate { ledger[i] = tx }  // a newer version (a refund) replaces it
            return
        }
        lock.unlock()
        // The window: a call to another service. Wide enough that two concurrent deliveries of one purchase meet
        // in it on every run, so the shrunk counterexample (and `mutants --json`) is the same from run to run.
        usleep(2_000)
        lock.lock()
        ledger.append(tx)  // act, on a stale check: its one mistake
    }

    override func consumableBalance(userId: String, at t: Millis) -> [String: Int] {
        var out: [String: Int] = [:]
        for tx in ledger where tx.purchaseDate <= t && user(ofChain: tx.originalTransactionId) == userId {
            let units = max(tx.quantity ?? 1, 0)
            guard config.policy.consumableClawback && isRevoked(tx, at: t) else {
                out[tx.productId] = Self.saturating(out[tx.productId, default: 0], units)
                continue
            }
            let share = min(max(tx.revocationPercentage ?? 100_000, 0), 100_000)
            let back =
                config.policy.consumableRefundShare == .all
                ? units : 100_000.dividingFullWidth(units.multipliedFullWidth(by: share)).quotient
            out[tx.productId] = Self.saturating(out[tx.productId, default: 0], units - back)
        }
        return out
    }
}
