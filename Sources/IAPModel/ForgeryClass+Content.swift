/// What a forged artifact says: the one place that decides the content of every forgery, for the delivery planner
/// (forgeries inside generated histories), the forgery kit (one forgery per class from a genuine notification),
/// certification's forgery probes and `pki export`'s sample forgeries.
extension ForgeryClass {
    /// How much further a forgery pushes an expiry or renewal date: three years, far beyond any honest history.
    public static let temptingExtension: Millis = 3 * 365 * CivilTime.msPerDay

    /// The transaction an attacker would want accepted: no revocation, and an expiry years away.
    public static func tempting(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        var t = tx
        t.revocationDate = nil
        t.revocationReason = nil
        t.revocationType = nil
        t.expiresDate = t.expiresDate.map { $0 + temptingExtension }
        return t
    }

    /// The renewal info an attacker would want accepted: no billing trouble, and a renewal date years ahead (a forged
    /// extension).
    public static func tempting(_ r: JWSRenewalInfoDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        var t = r
        t.isInBillingRetryPeriod = false
        t.gracePeriodExpiresDate = nil
        t.renewalDate = t.renewalDate.map { $0 + temptingExtension }
        return t
    }

    /// `tx` as this identity class forges it: another app's bundle, the other environment, or Xcode's. Other classes
    /// (and `wrongAppAppleId`, which lives in the notification) leave it as it is.
    public func withIdentity(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        var t = tx
        switch self {
        case .wrongBundleId: t.bundleId = "com.example.other-app"
        case .wrongEnvironment: t.environment = tx.environment.counterpart
        case .xcodeEnvironment: t.environment = tx.environment.xcodeForgery
        default: break
        }
        return t
    }

    /// The content of a forged transaction of this class: the identity the class is about, or tempting content.
    public func content(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        if isHardeningOnly { return tx }
        return isIdentityMismatch ? withIdentity(tx) : Self.tempting(tx)
    }

    /// The content of a forged renewal info of this class: the identity the class is about (a renewal info names no
    /// bundle), or tempting content.
    public func content(_ r: JWSRenewalInfoDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        var t = r
        if isHardeningOnly { return r }
        switch self {
        case .wrongEnvironment: t.environment = r.environment.counterpart
        case .xcodeEnvironment: t.environment = r.environment.xcodeForgery
        case .wrongBundleId, .wrongAppAppleId: break
        default: t = Self.tempting(r)
        }
        return t
    }
}
