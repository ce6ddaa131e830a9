/// The attacks of the forgery kit (docs/verifiers.md#forgery-classes). Each forged artifact must be rejected and change no answer
/// (property `forgery-rejected`), but for two classes: a replayed notification UUID may be acknowledged as a duplicate
/// if it changes nothing (``mayBeAcknowledged``), and an oversized token of genuine content may be accepted unless the
/// app declares a size limit (``isHardeningOnly``). The names appear in timelines and in the `forgeries` section of `check --json`.
public enum ForgeryClass: String, Codable, Hashable, Sendable, CaseIterable {
    case tamperedPayload = "tampered-payload"
    case tamperedHeader = "tampered-header"
    case foreignKeySignature = "foreign-key-signature"
    case algNone = "alg-none"
    case algHS256 = "alg-hs256-public-key"
    case missingX5c = "missing-x5c"
    case twoCertificateChain = "two-certificate-chain"
    case fourCertificateChain = "four-certificate-chain"
    case reorderedChain = "reordered-chain"
    case untrustedRoot = "untrusted-root"
    case leafWithoutOID = "leaf-without-oid"
    case intermediateWithoutOID = "intermediate-without-oid"
    case oidCritical = "oid-critical"
    case leafExpired = "leaf-expired-at-signed-date"
    case leafNotYetValid = "leaf-not-yet-valid-at-signed-date"
    case intermediateNotCA = "intermediate-not-ca"
    case wrongBundleId = "wrong-bundle-id"
    case wrongAppAppleId = "wrong-app-apple-id"
    case wrongEnvironment = "wrong-environment"
    case xcodeEnvironment = "xcode-environment"
    case truncatedSegment = "truncated-segment"
    case nonBase64Segment = "non-base64-segment"
    case x5cNotBase64 = "x5c-not-base64"
    case oversizedToken = "oversized-token"
    case replayedNotificationUUID = "replayed-notification-uuid"
    /// A validly signed notification whose nested `signedTransactionInfo` is forged: Apple's libraries do not verify
    /// nested JWS for you (docs/verifiers.md#the-public-api).
    case forgedNestedTransaction = "forged-nested-transaction"
    /// A `verifyReceipt` answer whose `status` is not 0 (21002, 21003, 21010 or a retryable 211xx) yet carries a
    /// receipt: nothing in it counts (docs/semantics.md#legacy-verifyreceipt).
    case legacyErrorStatus = "legacy-error-status"
    /// A `verifyReceipt` answer with a receipt and no `status` at all: a reader whose status defaults to 0 (Go's
    /// zero value, `body.get("status", 0)`) takes it for a valid one.
    case legacyMissingStatus = "legacy-missing-status"
    /// A `verifyReceipt` answer cut off halfway: not a JSON document.
    case legacyTruncatedBody = "legacy-truncated-body"
    /// An HTML error page where the `verifyReceipt` answer should be (served with HTTP 503, as an outage would).
    case legacyNonJSONBody = "legacy-non-json-body"

    /// Classes that only make sense for a notification (`appAppleId` and the UUID live there).
    public var notificationOnly: Bool {
        self == .wrongAppAppleId || self == .replayedNotificationUUID || self == .forgedNestedTransaction
    }

    /// The channels a forged artifact of this class can travel on. Signed artifacts (app transactions,
    /// notifications, API answers) take every cryptographic and identity forgery; the notification-only classes
    /// stay there. A legacy `verifyReceipt` response is unsigned JSON (its trust is the TLS connection to Apple), so
    /// only the app it names can be wrong — not its environment: a sandbox receipt answered by the sandbox endpoint
    /// after a 21007 is Apple's genuine answer, and Apple tells production servers to accept it (App Review).
    public var channels: [DeliveryChannel] {
        if notificationOnly { return [.notification] }
        if isLegacyOnly { return [.legacy] }
        if self == .wrongBundleId { return DeliveryChannel.allCases }
        return [.app, .notification, .api]
    }

    /// Classes that only make sense for a `verifyReceipt` answer (its status, its JSON).
    public var isLegacyOnly: Bool {
        switch self {
        case .legacyErrorStatus, .legacyMissingStatus, .legacyTruncatedBody, .legacyNonJSONBody: true
        default: false
        }
    }

    /// Whether the class is a forgery for an app in `environment`. Apple's verifiers compare `appAppleId` only in
    /// Production (an app in development may have none), so another `appAppleId` is no forgery elsewhere.
    public func applies(in environment: Environment) -> Bool {
        self != .wrongAppAppleId || environment == .production
    }

    /// A replay of a known notification UUID may be acknowledged as a duplicate instead of rejected; what matters is
    /// that it changes nothing.
    public var mayBeAcknowledged: Bool { self == .replayedNotificationUUID }

    /// Not a forgery by Apple's rules: a validly signed token of genuine content, only larger than a hardening cap
    /// would allow. Apple documents no size limit and its libraries set none, so whether to refuse it is the
    /// application's choice (policy `tokenSizeLimit`, docs/semantics.md#q19-token-size): without the policy either
    /// verdict is right, and an accepted one teaches its genuine facts; with it, a token over the limit must be
    /// refused and one within it accepted.
    public var isHardeningOnly: Bool { self == .oversizedToken }

    /// Made only with keys of Apple's own chain: signed with the genuine leaf's key in an `x5c` chain of another
    /// shape (two or four certificates, out of order: a verifier that builds its own path to a trusted root accepts
    /// it), or a leaf whose Apple OID a certificate authority of the chain marked critical. Apple's libraries refuse
    /// them; nobody without those keys makes one, so accepting one is a rule of Apple's not kept rather than a way in
    /// (docs/verifiers.md#forgery-classes).
    public var isMadeOnlyWithApplesKeys: Bool {
        self == .twoCertificateChain || self == .fourCertificateChain || self == .reorderedChain
            || self == .oidCritical
    }

    /// Classes whose decoded content is genuine except for the app identity (bundle, app id, environment): the
    /// rest are cryptographic or structural and carry tempting content (revocations removed, expiry far away), but
    /// the hardening-only class, whose content is genuine.
    public var isIdentityMismatch: Bool {
        self == .wrongBundleId || self == .wrongAppAppleId || self == .wrongEnvironment || self == .xcodeEnvironment
    }
}
