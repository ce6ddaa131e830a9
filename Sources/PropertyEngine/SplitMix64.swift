/// The one seeded random number generator of iapcheck: SplitMix64, small, fast and identical on every platform.
///
/// Every random decision in the checking path goes through a generator of this type (usually through a
/// ``ChoiceSource``), so the same seed and version reproduce the same case byte for byte.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { self.state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A seed for the `index`-th case of a run, independent of how many choices earlier cases made.
    public static func derive(_ seed: UInt64, _ index: UInt64) -> UInt64 {
        var g = SplitMix64(seed: seed ^ (index &* 0xD1B5_4A32_D192_ED03))
        _ = g.next()
        return g.next()
    }
}
