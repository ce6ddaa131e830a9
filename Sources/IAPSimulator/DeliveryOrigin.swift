import IAPModel

/// How the harness came to send a planned delivery: the first sending over its channel, one of Apple's ways of
/// sending a fact again (retries, duplicates, reconciliation through the API), a forgery, or an unusual value.
/// Timelines show it; corpus files store it as its text (`app`, `retry+13h`, `api-reconcile (notification DID_RENEW
/// lost)`, a forgery class's name, …), which reads back to the same origin.
public enum DeliveryOrigin: Hashable, Sendable, Codable, CustomStringConvertible {
    /// A purchase submitted by the app when it was made, or when the app next opened.
    case app
    /// The same app transaction submitted again (a retry of the app's upload).
    case appResubmit
    /// A legacy receipt the app sent (a `verifyReceipt` answer).
    case legacyReceipt
    /// A notification on its first attempt.
    case notification
    /// A notification first received on Apple's retry after `hours` (``NotificationRetry/offsetsHours``).
    case retry(hours: Millis)
    /// A notification received again after it was answered.
    case duplicate
    /// The backend asked the App Store Server API about a chain; `lost` names the notification that never arrived.
    case apiReconcile(lost: String?)
    /// A forged artifact of this class.
    case forged(ForgeryClass)
    /// A genuine notification with a value this version of Apple's schema does not know (`unknown-type`,
    /// `unknown-subtype`, `unknown-enum-value`, `test-notification`).
    case unusual(String)
    /// A label this version does not know (a corpus file written by another version).
    case other(String)

    /// Origins whose artifact a validator must take as it arrives (first sendings, not repeats or forgeries).
    public var isFirstSending: Bool { self == .app || self == .notification || self == .legacyReceipt }

    public var description: String {
        switch self {
        case .app: "app"
        case .appResubmit: "app-resubmit"
        case .legacyReceipt: "legacy-receipt"
        case .notification: "notification"
        case .retry(let hours): "retry+\(hours)h"
        case .duplicate: "duplicate"
        case .apiReconcile(let lost?): "api-reconcile (notification \(lost) lost)"
        case .apiReconcile(nil): "api-reconcile"
        case .forged(let f): f.rawValue
        case .unusual(let s), .other(let s): s
        }
    }

    static let unusualKinds: Set<String> = [
        "unknown-type", "unknown-subtype", "unknown-enum-value", "test-notification",
    ]

    public init(_ text: String) {
        switch text {
        case "app": self = .app
        case "app-resubmit": self = .appResubmit
        case "legacy-receipt": self = .legacyReceipt
        case "notification": self = .notification
        case "duplicate": self = .duplicate
        case "api-reconcile": self = .apiReconcile(lost: nil)
        default:
            if text.hasPrefix("retry+"), text.hasSuffix("h"), let h = Millis(text.dropFirst(6).dropLast()) {
                self = .retry(hours: h)
            } else if text.hasPrefix("api-reconcile (notification "), text.hasSuffix(" lost)") {
                self = .apiReconcile(lost: String(text.dropFirst(28).dropLast(6)))
            } else if let f = ForgeryClass(rawValue: text) {
                self = .forged(f)
            } else if Self.unusualKinds.contains(text) {
                self = .unusual(text)
            } else {
                self = .other(text)
            }
        }
    }

    public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
