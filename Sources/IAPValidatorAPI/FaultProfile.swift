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

/// Where each fault can act: the checks every command makes before a run, in one place.
extension FaultProfile {
    /// Faults that act in the mock App Store (an HTTP target's `store` section).
    public var needsStore: Bool { webhook5xxEvery != nil || storeDelayMillis != nil }

    /// Faults that act on HTTP connections or the mock App Store, so only on `http:` targets.
    public var needsHTTPTarget: Bool { resetEvery != nil || needsStore }

    /// Why this profile cannot run on `v`, or nil: `kill` restarts the validator's process, so it needs one that
    /// runs as a process and can be restarted (``RestartableValidator``).
    public func problem(with v: any Validator) -> String? {
        kill && !(v is any RestartableValidator)
            ? "--faults kill needs a validator that runs as a process: exec:, or an http: target with a \"start\" command"
            : nil
    }

    /// Why this profile cannot run on a validator that is not an `http:` target, or nil.
    public var problemOutsideHTTP: String? {
        needsHTTPTarget
            ? "faults reset, webhook-5xx and slow-store need an http: target (they act on HTTP connections and the mock App Store)"
            : nil
    }

    /// Why this profile cannot run on the `http:` target `path`, which has no mock App Store, or nil.
    public func problemWithoutStore(target path: String) -> String? {
        needsStore
            ? "faults webhook-5xx and slow-store act in the mock App Store: \(path) has no \"store\" section" : nil
    }
}
