import IAPModel

/// A simulated person: an Apple Account with an app account in the app under test.
public struct Person: Codable, Hashable, Sendable {
    public var index: Int
    /// Short name for timelines: `u1`, `u2`, …
    public var name: String
    /// The app account id; the app sets it as `appAccountToken` on purchases made in the app.
    public var accountId: String
    /// Family Sharing group, if any (all family members of a case share one group).
    public var familyId: Int?

    public init(index: Int, familyId: Int?) {
        self.index = index
        self.name = "u\(index + 1)"
        let hex = String(index + 1, radix: 16)
        self.accountId = "a1b2c3d4-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.count) + hex
        self.familyId = familyId
    }
}
