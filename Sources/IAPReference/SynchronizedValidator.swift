import Foundation
import IAPModel
import IAPValidatorAPI

/// The reference validator made safe for concurrent clients the way a backend would with a database transaction:
/// every operation runs under one lock, so each delivery is applied whole.
///
/// Sendable: every entry point runs under `lock`, so the reference state is never touched by two threads.
open class SynchronizedReferenceValidator: ReferenceValidator, ConcurrentValidator, @unchecked Sendable {
    /// Held for each whole operation; a subclass that calls out of the critical section releases it (the race mutant).
    /// The one `NSLock` of the code base, on purpose: `Locked` (a `Mutex`) cannot be released and taken again inside
    /// its critical section, and releasing it there is the check-then-act race that `CheckThenActCredit` exists to
    /// have.
    package let lock = NSLock()
    override open var name: String { "reference (synchronized)" }

    override open func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        lock.lock()
        defer { lock.unlock() }
        try super.reset(config)
    }

    override open func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        lock.lock()
        defer { lock.unlock() }
        return try super.deliver(delivery, now: now)
    }

    override open func deliver(decoded delivery: Delivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        lock.lock()
        defer { lock.unlock() }
        return try super.deliver(decoded: delivery, now: now)
    }

    override open func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        lock.lock()
        defer { lock.unlock() }
        return try super.entitlements(query)
    }
}
