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

    static func install() {
        _ = count  // made before the handler can run
        guard !ChildProcesses.isIgnored(SIGINT) else { return }
        signal(SIGINT) { _ in
            Interrupt.count.pointee += 1
            if Interrupt.count.pointee > 1 {
                ChildProcesses.killAll()
                _exit(130)
            }
        }
    }
}
