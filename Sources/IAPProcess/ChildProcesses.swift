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
    /// Room for every validator process `check --jobs` or a load profile's workers (at most 1024) start, and more.
    static let capacity = 4096
    /// Slots of pids, 0 when free: written under `lock`, read without it by `killAll` in a signal handler (a slot
    /// read mid-update gives a pid about to be added or removed, either of which may be killed).
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<Int32> = {
        let p = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        p.initialize(repeating: 0, count: capacity)
        return p
    }()
    static let lock = NSLock()

    nonisolated(unsafe) static var warnedFull = false

    /// Remembers `pid` (the leader of its own process group) until `unregister`.
    public static func register(_ pid: Int32) {
        guard pid > 0 else { return }
        lock.lock()
        defer { lock.unlock() }
        for i in 0..<capacity where slots[i] == 0 {
            slots[i] = pid
            return
        }
        if !warnedFull {
            warnedFull = true
            try? FileHandle.standardError.write(
                contentsOf:
                    Data(
                        "iapcheck: more than \(capacity) processes at once: those beyond are not stopped if iapcheck is killed\n"
                            .utf8))
        }
    }

    /// Starts `process` and keeps its pid while it runs: it is unregistered as soon as it has exited and been reaped
    /// (its pid may be reused from then on), not only when its owner stops it. Takes the termination handler.
    public static func run(_ process: Process) throws {
        process.terminationHandler = { unregister($0.processIdentifier) }
        try process.run()
        let pid = process.processIdentifier
        register(pid)
        // Exited before it was registered: the handler may have run already.
        if !process.isRunning { unregister(pid) }
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

    /// Installs handlers for SIGTERM, SIGHUP and SIGPIPE, and for SIGINT until a command installs its own: they kill
    /// the registered processes, then end iapcheck by the same signal (its default action), as if no handler ran.
    /// SIGPIPE is how `iapcheck check … | head` ends: without the handler, the backends iapcheck started outlive it
    /// and hold their ports against the next run. The four are unblocked first: a parent may have started iapcheck
    /// with them blocked (a blocked mask is inherited; test runners do this), and a SIGTERM would then wait forever.
    /// Threads started later inherit the mask.
    public static func installSignalHandlers() {
        _ = slots  // made before any handler can run
        let signals = [SIGTERM, SIGHUP, SIGINT, SIGPIPE]
        var set = sigset_t()
        sigemptyset(&set)
        for sig in signals { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        // A signal the parent set to be ignored stays ignored (`nohup`, a background job's SIGINT).
        for sig in signals where !isIgnored(sig) {
            signal(sig) { s in
                ChildProcesses.killAll()
                signal(s, SIG_DFL)
                raise(s)
            }
        }
    }

    /// The signals a crash of iapcheck itself ends in (a Swift trap is SIGILL on x86-64, SIGTRAP on arm64).
    static let crashSignals = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT]
    /// The actions that were there before ``installCrashHandlers()`` (the Swift runtime's backtracer's, or the
    /// default), one per signal number, read by the handler.
    nonisolated(unsafe) static let previousActions: UnsafeMutablePointer<sigaction> = {
        let p = UnsafeMutablePointer<sigaction>.allocate(capacity: 64)
        p.initialize(repeating: sigaction(), count: 64)
        return p
    }()

    /// A crash of iapcheck kills the registered processes too, then goes on as it would have: the action that was
    /// there before (the runtime's backtrace, then the end of the process) runs as the signal is raised again.
    /// On the alternate signal stack where one is set up (the runtime's backtracer sets one), so that a stack
    /// overflow still reaches the backtrace. Linux only (glibc's `sigaction` layout).
    public static func installCrashHandlers() {
        #if canImport(Glibc)
            _ = slots
            _ = previousActions
            for sig in crashSignals {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = { s in
                    ChildProcesses.killAll()
                    sigaction(s, ChildProcesses.previousActions + Int(s), nil)
                    raise(s)  // delivered when the handler returns, to the action restored above
                }
                sigemptyset(&action.sa_mask)
                action.sa_flags = SA_ONSTACK
                sigaction(sig, &action, previousActions + Int(sig))
            }
        #endif
    }

    /// Whether `sig` is ignored now (as `nohup` leaves SIGHUP, and a shell a background job's SIGINT).
    public static func isIgnored(_ sig: Int32) -> Bool {
        let previous = signal(sig, SIG_IGN)
        signal(sig, previous)
        return unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
