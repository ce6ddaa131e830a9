import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The processes iapcheck started that must not outlive it: validators (`exec:`), backends it starts from a target
/// file or for a backend mutant, the bench's endpoint. Foundation starts each as the leader of its own process
/// group, so a terminal's Ctrl-C never reaches them, and a killed iapcheck would leave them running (holding their
/// ports, their files). `killAll` is what the signal handlers call before iapcheck exits on a signal.
public enum ChildProcesses {
    static let capacity = 256
    /// Slots of pids, 0 when free: written under `lock`, read without it by `killAll` in a signal handler (a slot
    /// read mid-update gives a pid about to be added or removed, either of which may be killed).
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<Int32> = {
        let p = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        p.initialize(repeating: 0, count: capacity)
        return p
    }()
    static let lock = NSLock()

    /// Remembers `pid` (the leader of its own process group) until `unregister`.
    public static func register(_ pid: Int32) {
        guard pid > 0 else { return }
        lock.lock()
        defer { lock.unlock() }
        for i in 0..<capacity where slots[i] == 0 {
            slots[i] = pid
            return
        }
    }

    public static func unregister(_ pid: Int32) {
        lock.lock()
        defer { lock.unlock() }
        for i in 0..<capacity where slots[i] == pid { slots[i] = 0 }
    }

    /// SIGKILL to every registered process and its group. Async-signal-safe: reads the slots, calls kill(2).
    public static func killAll() {
        for i in 0..<capacity {
            let pid = slots[i]
            guard pid > 0 else { continue }
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
    }

    /// Installs handlers for SIGTERM and SIGHUP, and for SIGINT until a command installs its own: they kill the
    /// registered processes, then end iapcheck by the same signal (its default action), as if no handler ran. The
    /// three are unblocked first: a parent may have started iapcheck with them blocked (a blocked mask is inherited;
    /// test runners do this), and a SIGTERM would then wait forever. Threads started later inherit the mask.
    public static func installSignalHandlers() {
        _ = slots  // made before any handler can run
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGTERM, SIGHUP, SIGINT] { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        for sig in [SIGTERM, SIGHUP, SIGINT] {
            signal(sig) { s in
                ChildProcesses.killAll()
                signal(s, SIG_DFL)
                raise(s)
            }
        }
    }
}
