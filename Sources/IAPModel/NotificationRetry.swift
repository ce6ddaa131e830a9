/// Apple's retry schedule for App Store Server Notifications V2 in production: when a server does not answer an HTTP
/// 2xx in time, Apple sends the same notification again 1, 12, 24, 48 and 72 hours after the previous attempt
/// (docs/semantics.md#delivery-and-retries). Sandbox does not retry. The delivery planner (when a generated history's
/// notifications may arrive) and the mock App Store (when its webhook sender posts again) both read it from here.
public enum NotificationRetry {
    /// Hours from each attempt to the next retry.
    public static let delaysHours: [Int64] = [1, 12, 24, 48, 72]

    /// Hours from the first attempt to each attempt: 0, 1, 13, 37, 85, 157.
    public static let offsetsHours: [Millis] = delaysHours.reduce(into: [0]) { $0.append($0.last! + $1) }
}
