import Foundation

/// Progress on standard error for runs longer than a moment.
final class Progress {
    let label: String
    var last = Date()
    var started = Date()
    let quiet: Bool
    init(_ label: String, quiet: Bool) {
        self.label = label
        self.quiet = quiet
    }
    func update(_ done: Int, _ total: Int) {
        guard !quiet, Date().timeIntervalSince(last) >= 2 else { return }
        last = Date()
        let rate = Double(done) / max(Date().timeIntervalSince(started), 0.001)
        FileHandle.standardError.write(Data("\(label): \(done)/\(total) cases, \(Int(rate))/s\n".utf8))
    }

    /// Measures from now (what came before, such as a corpus replay, is not cases).
    func restart() {
        started = Date()
        last = started
    }
}
