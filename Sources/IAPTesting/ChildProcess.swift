import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Process {
    /// Kills a process a test started (SIGKILL) and waits for it. Not `terminate()`: a child of the test process can
    /// start with SIGTERM blocked (the mask of the thread that spawned it), and waiting on it then never returns.
    public func killAndWait() {
        if isRunning { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
    }
}
