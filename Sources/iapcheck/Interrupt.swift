import Foundation
import IAPProcess

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ctrl-C during a long run: the first one asks the run to stop and report what it has; a second one exits.
enum Interrupt {
    // Safe: a sig_atomic_t written by the signal handler and only read elsewhere, as C allows.
    nonisolated(unsafe) static var count: sig_atomic_t = 0
    static var requested: Bool { count > 0 }

    static func install() {
        signal(SIGINT) { _ in
            Interrupt.count += 1
            if Interrupt.count > 1 {
                ChildProcesses.killAll()
                _exit(130)
            }
        }
    }
}
