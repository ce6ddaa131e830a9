import Foundation
import IAPConformance
import IAPSupport

/// Progress on standard error for runs longer than a moment.
final class Progress {
    var label: String
    /// Said after the counts (`next entitlement-agreement`).
    var detail: String?
    var pacing = ProgressPacing(terminalSeconds: 2)
    var started = Date()
    var remaining = RemainingTime()
    let quiet: Bool
    /// A failure was shrunk: the time left counts cases only.
    var shrank = false
    init(_ label: String, quiet: Bool) {
        self.label = label
        self.quiet = quiet
    }
    /// When a shrink began that no case has followed yet.
    var pausedAt: Date?

    func update(_ done: Int, _ total: Int) {
        guard !quiet else { return }
        let now = Date()
        if let pausedAt {
            // The time left is of cases: the shrink just done is left out of their pace.
            remaining.leaveOut(now.timeIntervalSince(pausedAt))
            self.pausedAt = nil
        }
        remaining.record(done, now: now)
        guard pacing.due(done, of: total, now: now) else { return }
        let seconds = max(now.timeIntervalSince(started), 0.001)
        var line = "\(label): \(done)/\(total) cases, \(TextReport.rate(Double(done), seconds: seconds))"
        if let left = remaining.seconds(done, of: total, now: now) {
            line += ", about \(Self.duration(left)) left\(shrank ? " besides shrinking" : "")"
        }
        if let detail { line += " (\(detail))" }
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }

    /// `45 s`, `3 min`, `1 h 20 min`.
    static func duration(_ seconds: Double) -> String {
        if seconds < 90 { return "\(Int(seconds.rounded())) s" }
        if seconds < 5400 { return "\(Int((seconds / 60).rounded())) min" }
        let minutes = Int((seconds / 60).rounded())
        return "\(minutes / 60) h \(minutes % 60) min"
    }

    /// Measures from now (what came before, such as a corpus replay, is not cases).
    func restart() {
        started = Date()
        pacing.restart(now: started)
        remaining.restart(now: started)
    }
}
