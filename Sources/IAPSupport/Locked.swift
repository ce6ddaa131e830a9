import Synchronization

#if IAPCHECK_TSAN
    import CThreadSanitizer
#endif

/// iapcheck's one lock primitive: a value that threads share, behind a `Synchronization.Mutex`. A class, so closures
/// and threads can hold it (a `Mutex` itself cannot be copied or captured); `Sendable` because the mutex is the only
/// way to reach the value.
public final class Locked<Value>: Sendable {
    // Inlinable, so that a caller in another module gets `withLock` specialized to its value and result rather
    // than the generic entry point (the oracle takes this lock on every question it answers).
    @usableFromInline let mutex: Mutex<Value>

    @inlinable public init(_ value: sending Value) { mutex = Mutex(value) }

    /// Runs `body` with the value, the lock held.
    @inlinable public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result)
        throws(E)
        -> sending Result
    {
        #if IAPCHECK_TSAN
            // ThreadSanitizer cannot see the Mutex's futex: say what it orders (CThreadSanitizer.h).
            let address = Unmanaged.passUnretained(self).toOpaque()
            return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
                __tsan_acquire(address)
                defer { __tsan_release(address) }
                return try body(&value)
            }
        #else
            try mutex.withLock(body)
        #endif
    }
}

extension Locked where Value: Sendable {
    /// A copy of the value, taken under the lock.
    public var value: Value { withLock { $0 } }
}

extension Locked where Value == Int {
    /// Adds `n` (a counter shared by threads).
    public func add(_ n: Int) { withLock { $0 += n } }
}
