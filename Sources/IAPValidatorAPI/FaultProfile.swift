import Foundation

/// Faults iapcheck injects around a validator (`--faults kill,reset,webhook-5xx,slow-store`), for `check`,
/// `certify` and `load`. Every fault fires at deterministic points (every n-th delivery, notification or request),
/// so a failure under faults replays like any other.
public struct FaultProfile: Sendable, Hashable, CustomStringConvertible {
    /// SIGKILL the validator's process after every fifth acknowledged delivery and start it again without reset
    /// (`exec:` validators, and HTTP targets with a `start` command); adds the `durable-ack` property.
    public var kill = false
    /// Every n-th delivery over HTTP, the connection drops after the backend answered and before the harness read
    /// the answer; the harness sends the request again on a new connection. The backend sees it twice.
    public var resetEvery: Int?
    /// Every n-th notification, the mock App Store sees 503 for its first attempt although the backend processed
    /// it (a gateway in front of the webhook failing), so it retries on Apple's schedule.
    public var webhook5xxEvery: Int?
    /// The mock App Store answers every API and verifyReceipt call this many milliseconds late.
    public var storeDelayMillis: Int?

    public init() {}

    public static let names = ["kill", "reset", "webhook-5xx", "slow-store"]

    /// Parses a comma-separated list; nil and a message naming the unknown entry otherwise.
    public static func parse(_ text: String) -> Result<FaultProfile, ParseError> {
        var f = FaultProfile()
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            switch name {
            case "kill": f.kill = true
            case "reset": f.resetEvery = 4
            case "webhook-5xx": f.webhook5xxEvery = 3
            case "slow-store": f.storeDelayMillis = 200
            default:
                return .failure(
                    ParseError(message: "unknown fault \"\(name)\"; known: \(names.joined(separator: ", "))"))
            }
        }
        return .success(f)
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public var isEmpty: Bool { self == FaultProfile() }

    public var description: String {
        var parts: [String] = []
        if kill { parts.append("kill") }
        if let n = resetEvery { parts.append("reset (every \(n)th delivery)") }
        if let n = webhook5xxEvery { parts.append("webhook-5xx (every \(n)th notification)") }
        if let ms = storeDelayMillis { parts.append("slow-store (\(ms) ms)") }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }
}
