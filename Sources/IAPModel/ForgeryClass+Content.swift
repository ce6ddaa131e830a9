/// What a forged artifact says: the one place that decides the content of every forgery, for the delivery planner
/// (forgeries inside generated histories), the forgery kit (one forgery per class from a genuine notification),
/// certification's forgery probes and `pki export`'s sample forgeries.
extension ForgeryClass {
    /// How much further a forgery pushes an expiry or renewal date: three years, far beyond any honest history.
    public static let temptingExtension: Millis = 3 * 365 * CivilTime.msPerDay

    /// The transaction an attacker would want accepted: a purchase the store never made (a transaction id of its
    /// own, ``forgedTransactionId(_:)``), in the same chain, with no revocation and an expiry years away. With the
    /// genuine transaction's id, a backend that keeps the first copy of each transaction would store nothing of it,
    /// so one that applies forgeries unverified (a webhook that verifies later, judged by what it changes) would
    /// show nothing; a new id is credited, granted or extended wherever such a backend would.
    /// `newPurchase` false keeps the genuine id: a replayed notification is Apple's own again, about the same
    /// transaction.
    public static func tempting(_ tx: JWSTransactionDecodedPayload, newPurchase: Bool = true)
        -> JWSTransactionDecodedPayload
    {
        var t = newPurchase ? Self.ownPurchase(tx) : tx
        t.revocationDate = nil
        t.revocationReason = nil
        t.revocationType = nil
        t.expiresDate = t.expiresDate.map { $0 + temptingExtension }
        return t
    }

    /// `tx` as a purchase of its own: another transaction id and billing-period id (`webOrderLineItemId`), bought
    /// and signed a second later. A backend that applies it unverified keeps it as new under the usual keys (a
    /// first copy per transaction id, per billing period, or per chain and purchase date) or takes it as the newest
    /// signed version.
    public static func ownPurchase(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        var t = tx
        t.transactionId = forgedTransactionId(tx.transactionId)
        t.webOrderLineItemId = tx.webOrderLineItemId.map(forgedTransactionId)
        t.purchaseDate = tx.purchaseDate + 1000
        t.signedDate = tx.signedDate + 1000
        return t
    }

    /// The id of a forged copy of transaction `id`: 50,505 above it. A case numbers its transactions from
    /// 2000000000000001 up and never reaches 50,000 of them, so the id is no genuine transaction's, and it keeps the
    /// shape of a case's ids (ids of their own per run shift it as they shift the genuine ones). Its last four
    /// digits, which timelines show, differ from the genuine id's (with 50,000 both read `…0006`).
    public static func forgedTransactionId(_ id: String) -> String {
        guard let n = Int64(id), n < Int64.max - 50_505 else { return id + "0" }
        return String(n + 50_505)
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
    /// Either way a transaction of its own (but for a replay, Apple's notification again): another app's or
    /// environment's purchase has its own id, and a backend that took it would show it beside the genuine one.
    public func content(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        if isHardeningOnly { return tx }
        guard isIdentityMismatch else { return Self.tempting(tx, newPurchase: !mayBeAcknowledged) }
        return Self.ownPurchase(withIdentity(tx))
    }

    /// The content of a forged renewal info of this class: the identity the class is about (a renewal info names no
    /// bundle), or tempting content.
    public func content(_ r: JWSRenewalInfoDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        var t = r
        if isHardeningOnly { return r }
        switch self {
        case .wrongEnvironment: t.environment = r.environment.counterpart
        case .xcodeEnvironment: t.environment = r.environment.xcodeForgery
        // A renewal info names no app; in a forged-nested-transaction notification it is Apple's own, validly
        // signed: a worker that verifies each nested token and applies the one that verifies is right to apply it.
        case .wrongBundleId, .wrongAppAppleId, .forgedNestedTransaction: break
        default: t = Self.tempting(r)
        }
        return t
    }
}
