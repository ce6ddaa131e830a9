import Testing

extension Trait where Self == ConditionTrait {
    /// A test whose cost is its point (hundreds of signed cases end to end, a backend or a program started and checked,
    /// a gate over every case, a shrink to the end): `IAPCHECK_SWEEP=full swift test` runs it, as CI does, and so does
    /// `IAPCHECK_LONG=1`; a plain `swift test`, a developer's quick loop, skips it and says so (CONTRIBUTING.md, "How
    /// the tests are organised"). On a suite, it marks every test of the suite.
    public static var long: Self {
        .enabled(if: Sweep.current != .quick, "long: runs with IAPCHECK_SWEEP=full, as in CI")
    }
}
