import Synchronization

/// How many ES256 signatures iapcheck made and checked, for `bench check`'s crypto-limit ratio (the share of a
/// check's time that is unavoidable cryptography). Relaxed atomic counts: nothing waits on them.
public enum CryptoCounters {
    public static let signatures = Atomic<Int>(0)
    public static let verifications = Atomic<Int>(0)
    /// Bytes of signing input (`header.payload`) hashed by the signatures and the verifications: SHA-256 of a
    /// notification, which nests two tokens, costs several times that of a transaction.
    public static let signedBytes = Atomic<Int>(0)
    public static let verifiedBytes = Atomic<Int>(0)
    /// Certificate signatures checked by the chains verifiers accepted (two a chain: the leaf's and the
    /// intermediate's; P-384 in the test PKI, as in Apple's), and certificates the test PKI signed (a signing leaf
    /// for each 30-day slot a run reaches).
    public static let chainSignatureChecks = Atomic<Int>(0)
    public static let certificateSignatures = Atomic<Int>(0)

    public static func reset() {
        signatures.store(0, ordering: .relaxed)
        verifications.store(0, ordering: .relaxed)
        signedBytes.store(0, ordering: .relaxed)
        verifiedBytes.store(0, ordering: .relaxed)
        chainSignatureChecks.store(0, ordering: .relaxed)
        certificateSignatures.store(0, ordering: .relaxed)
    }
}
