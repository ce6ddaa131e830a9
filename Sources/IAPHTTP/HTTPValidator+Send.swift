import Foundation
import IAPModel
import IAPValidatorAPI

/// A request as iapcheck sends it to a backend: what `send --dry-run` writes and `--format curl` prints.
public struct SentRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Data?
}

extension HTTPValidator {
    /// Before a send's deliveries (docs/send.md): the backend reset once per state file when `resets` (it has the
    /// route), else only the mock App Store told the app's bundle; then the store serves the customer's chains as
    /// Apple would answer now (`snapshots`), for a backend that asks on its own.
    public func prepareForSend(_ config: ValidatorConfig, resets: Bool, snapshots: [SignedDelivery])
        throws(ValidatorFailure)
    {
        if resets { try reset(config) } else { store?.reset(config) }
        for case let .apiSnapshot(otid, history, statuses) in snapshots {
            store?.publish(originalTransactionId: otid, history: history, statuses: statuses)
        }
    }
}

extension HTTPValidator.Route {
    /// A status the route counts as accepted (the answer of a dry run).
    var acceptedStatus: Int { (200..<600).first { accepted.contains($0) } ?? 200 }
}
