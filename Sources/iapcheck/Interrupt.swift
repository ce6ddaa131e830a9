import Foundation
import IAPProcess

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ctrl-C during a long run: the first one asks the run to stop and report what it has; a second one exits. Left
/// alone when SIGINT is ignored (a background job of a shell script).
enum Interrupt {
    /// The count, in memory of its own: the handler increments it without Swift's exclusivity checks (which are not
    /// safe in a signal handler), and a sig_atomic_t read elsewhere, as C allows.
    nonisolated(unsafe) static let count: UnsafeMutablePointer<sig_atomic_t> = {
        let p = UnsafeMutablePointer<sig_atomic_t>.allocate(capacity: 1)
        p.initialize(to: 0)
        return p
    }()
    static var requested: Bool { count.pointee > 0 }

    /// Said at once on the first Ctrl-C (the case or request under way may take a while against a slow backend, and
    /// a run that says nothing reads as hung), in bytes made before the handler can run: the handler may `write`
    /// them, where printing (which allocates and locks) is not safe.
    nonisolated(unsafe) static let notice: (UnsafeMutablePointer<UInt8>, Int) = {
        let text = Array(
            "\niapcheck: stopping after what is under way, then reporting what the run found (Ctrl-C again quits at once, without a report)\n"
                .utf8)
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: text.count)
        p.initialize(from: text, count: text.count)
        return (p, text.count)
    }()

    static func install() {
        _ = count  // made before the handler can run
        _ = notice
        guard !ChildProcesses.isIgnored(SIGINT) else { return }
        signal(SIGINT) { _ in
            Interrupt.count.pointee += 1
            if Interrupt.count.pointee > 1 {
                ChildProcesses.killAll()
                _exit(130)
            }
            _ = write(STDERR_FILENO, Interrupt.notice.0, Interrupt.notice.1)
        }
    }
}
