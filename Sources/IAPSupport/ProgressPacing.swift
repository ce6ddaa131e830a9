import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How often a progress line may print. On a terminal, every `terminalSeconds`, as a person watches it; without one
/// (a CI log, a file) at most one line every 10 s, or when another tenth of the run is done, so a long run's log
/// stays readable (a 2,000-case run printed more than 1,900 lines before).
public struct ProgressPacing: Sendable {
    public static let toTerminal = isatty(STDERR_FILENO) == 1
    public let terminalSeconds: Double
    public let toTerminal: Bool
    var last = Date()
    var lastTenth = 0

    public init(terminalSeconds: Double, toTerminal: Bool = Self.toTerminal) {
        self.terminalSeconds = terminalSeconds
        self.toTerminal = toTerminal
    }

    /// Whether to print now, `done` of `total` into the run; counts the line as printed when it says yes.
    public mutating func due(_ done: Int, of total: Int, now: Date = Date()) -> Bool {
        let since = now.timeIntervalSince(last)
        let tenth = total > 0 ? done * 10 / total : 0
        let yes = toTerminal ? since >= terminalSeconds : since >= 10 || (tenth > lastTenth && since >= 1)
        if yes {
            last = now
            lastTenth = tenth
        }
        return yes
    }

    public mutating func restart(now: Date = Date()) {
        last = now
        lastTenth = 0
    }
}
