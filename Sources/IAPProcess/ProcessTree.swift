import Foundation

/// What Linux says about the processes iapcheck started (from /proc): whether one has exited, and its
/// descendants, so that a validator's or backend's children can be killed with it.
public enum ProcessTree {
    /// Whether `pid` has terminated (a zombie or already reaped). Foundation's `isRunning` stays true until the
    /// child's pipes are closed by everyone, which a grandchild can delay indefinitely.
    public static func hasExited(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state == "Z" || state == "X"
    }

    /// Descendant pids from /proc (Linux); empty elsewhere.
    public static func descendants(of pid: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var parent: [Int32: Int32] = [:]
        for e in entries {
            guard let p = Int32(e), let stat = try? String(contentsOfFile: "/proc/\(e)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let pp = Int32(fields[1]) { parent[p] = pp }
        }
        var out: [Int32] = []
        var frontier = [pid]
        while let next = frontier.popLast() {
            for (child, pp) in parent where pp == next {
                out.append(child)
                frontier.append(child)
            }
        }
        return out
    }
}
