import Foundation
import IAPModel
import IAPValidatorAPI

/// An HTTP target whose backend iapcheck started itself (`start` in the target file): it can be killed and started
/// again without reset (fault profile `kill`, property `durable-ack`).
public final class ManagedHTTPValidator: HTTPValidator, RestartableValidator {
    public let backend: ManagedBackend

    init(
        target: Target, name: String, timeout: TimeInterval, store: (any AppStoreBridge)?, faults: FaultProfile,
        backend: ManagedBackend
    ) {
        self.backend = backend
        super.init(target: target, name: name, timeout: timeout, store: store, faults: faults)
    }

    override func setClock(_ now: Millis) throws(ValidatorFailure) {
        guard let clock = backend.clock else { return try super.setClock(now) }
        try clock.set(now)
    }

    /// The same backend and its clock file (both sides of a race set each artifact's instant, the same on both).
    override func sibling() -> HTTPValidator {
        ManagedHTTPValidator(
            target: target, name: name, timeout: timeout, store: store, faults: FaultProfile(), backend: backend)
    }

    public func killAndRestart() throws(ValidatorFailure) {
        client.note("✕ backend killed (fault profile), restarting without reset")
        client.close()
        try backend.killAndRestart()
    }
}
