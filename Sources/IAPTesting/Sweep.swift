import Foundation

/// How much of the long sweeps (the oracle against the simulator's truth over many seeds, every policy, every mutant)
/// `swift test` runs, and whether it runs the tests marked `.long` (LongTest.swift). Quick by default, for a
/// developer's loop; `IAPCHECK_SWEEP=full` runs them all as CI does; `IAPCHECK_LONG=1` ten times the full count
/// (CONTRIBUTING.md, "How the tests are organised").
public enum Sweep: Sendable {
    case quick, full, long

    public static let current: Sweep = {
        let env = ProcessInfo.processInfo.environment
        if env["IAPCHECK_LONG"] != nil { return .long }
        return env["IAPCHECK_SWEEP"] == "full" ? .full : .quick
    }()

    /// `full` of a sweep's count at this setting: a thirty-second of it (at least one) quick, ten times it long.
    public static func count(_ full: Int) -> Int {
        switch current {
        case .quick: max(1, full / 32)
        case .full: full
        case .long: full * 10
        }
    }

    /// Every `k`-th of `items` quick (the first included), all of them otherwise.
    public static func sample<T>(_ items: [T], every k: Int) -> [T] {
        guard current == .quick, k > 1 else { return items }
        return items.enumerated().filter { $0.offset % k == 0 }.map(\.element)
    }
}
