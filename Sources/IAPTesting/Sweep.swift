import Foundation

/// How much of the long sweeps (the oracle against the simulator's truth over many seeds, every policy, every mutant)
/// `swift test` runs, and whether it runs the tests marked `.long` (LongTest.swift). Quick by default, for a
/// developer's loop; `IAPCHECK_SWEEP=full` runs them all as CI does; `IAPCHECK_LONG=1` ten times the full count
/// (CONTRIBUTING.md, "How the tests are organised").
public enum Sweep: Sendable {
    case quick, full, long

    public static let current: Sweep = level(ProcessInfo.processInfo.environment)

    /// The level of the sweeps that `iapcheck-sweeps` runs whole (Sources/IAPSweeps): `current`, except quick when
    /// `IAPCHECK_SWEEPS_BY_PROGRAM=1` says that program runs them elsewhere, as CI does from its release build.
    public static let programmed: Sweep = level(ProcessInfo.processInfo.environment, programmed: true)

    static func level(_ env: [String: String], programmed: Bool = false) -> Sweep {
        if programmed && env["IAPCHECK_SWEEPS_BY_PROGRAM"] == "1" { return .quick }
        if env["IAPCHECK_LONG"] != nil { return .long }
        return env["IAPCHECK_SWEEP"] == "full" ? .full : .quick
    }

    /// `full` of a sweep's count at this level: a thirty-second of it (at least one) quick, ten times it long.
    public func count(_ full: Int) -> Int {
        switch self {
        case .quick: max(1, full / 32)
        case .full: full
        case .long: full * 10
        }
    }

    /// Every `k`-th of `items` quick (the first included), all of them otherwise.
    public func sample<T>(_ items: [T], every k: Int) -> [T] {
        guard self == .quick, k > 1 else { return items }
        return items.enumerated().filter { $0.offset % k == 0 }.map(\.element)
    }

    /// `count` at the current level.
    public static func count(_ full: Int) -> Int { current.count(full) }

    /// `sample` at the current level.
    public static func sample<T>(_ items: [T], every k: Int) -> [T] { current.sample(items, every: k) }
}
