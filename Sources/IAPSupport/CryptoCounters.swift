import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many ES256 signatures iapcheck made and checked, for `bench check`'s crypto-limit ratio (the share of a
/// check's time that is unavoidable cryptography). Relaxed atomic counts: nothing waits on them.
public enum CryptoCounters {
    public static let signatures = Atomic<Int>(0)
    public static let verifications = Atomic<Int>(0)
    /// Bytes of signing input (`header.payload`) hashed by the signatures and the verifications: SHA-256 of a
    /// notification, which nests two tokens, costs several times that of a transaction. A signature whose token
    /// starts with a shared prefix counts only the bytes after it; the prefix is counted once, when it is hashed.
    public static let signedBytes = Atomic<Int>(0)
    public static let verifiedBytes = Atomic<Int>(0)
    /// Certificate signatures checked by the chains verifiers accepted (two a chain: the leaf's and the
    /// intermediate's; P-384 in the test PKI, as in Apple's), and certificates the test PKI signed (a signing leaf
    /// for each 30-day slot a run reaches).
    public static let chainSignatureChecks = Atomic<Int>(0)
    public static let certificateSignatures = Atomic<Int>(0)
    /// With `timing` on (`bench check` sets it), the nanoseconds the ES256 signatures and verifications took where
    /// they ran, among the rest of a check: beside their tight-loop cost, this says how much slower the same
    /// cryptography runs when the rest of a case has had the caches.
    public static let timing = Atomic<Bool>(false)
    public static let signNanoseconds = Atomic<Int>(0)
    public static let verifyNanoseconds = Atomic<Int>(0)

    public static func reset() {
        signatures.store(0, ordering: .relaxed)
        verifications.store(0, ordering: .relaxed)
        signedBytes.store(0, ordering: .relaxed)
        verifiedBytes.store(0, ordering: .relaxed)
        chainSignatureChecks.store(0, ordering: .relaxed)
        certificateSignatures.store(0, ordering: .relaxed)
        signNanoseconds.store(0, ordering: .relaxed)
        verifyNanoseconds.store(0, ordering: .relaxed)
    }

    /// A monotonic clock in nanoseconds when `timing` is on, else 0 (no clock read on an ordinary run).
    @inline(__always) public static func start() -> Int {
        guard timing.load(ordering: .relaxed) else { return 0 }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }

    /// Adds the nanoseconds since `start` (from ``start()``) to `total`, when timing.
    @inline(__always) public static func stop(_ start: Int, into total: borrowing Atomic<Int>) {
        guard start != 0 else { return }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        total.add(ts.tv_sec * 1_000_000_000 + ts.tv_nsec - start, ordering: .relaxed)
    }
}
