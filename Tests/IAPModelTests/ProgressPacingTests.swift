import Foundation
import IAPSupport
import Testing

/// Progress lines in a CI log: at most one every 10 s, or one per tenth of the run; on a terminal as often as asked.
@Suite struct ProgressPacingTests {
    /// A 2,000-case run at one case per 50 ms (100 s), asked after every case.
    func lines(toTerminal: Bool) -> Int {
        let start = Date(timeIntervalSince1970: 0)
        var pacing = ProgressPacing(terminalSeconds: 1, toTerminal: toTerminal)
        pacing.restart(now: start)
        return (1...2000).filter { pacing.due($0, of: 2000, now: start.addingTimeInterval(Double($0) * 0.05)) }.count
    }

    @Test func withoutATerminalALineEveryTenthOfTheRunAtMost() {
        let n = lines(toTerminal: false)
        #expect(n >= 9 && n <= 11, "\(n) lines")
    }

    @Test func onATerminalTheLineKeepsItsPace() {
        #expect(lines(toTerminal: true) >= 99)
    }
}
