import EntitlementService
import IAPConformance
import IAPModel
import IAPValidatorAPI

/// The glue between iapcheck and the service: iapcheck's `Validator` protocol on one side, the service's own API on
/// the other. Facts arrive decoded, as the backend hands them to the service once it has verified the JWS and checked
/// that they are for this app (bundle, environment): this unsigned run checks the entitlement logic only, and sends
/// no forged or foreign artifacts. Questions become calls of `entitlements(user:at:)`.
final class ServiceAdapter: DecodedDeliveryValidator {
    private let ignoresRevocation: Bool
    private var service = EntitlementService(entitlements: [:], products: [:])

    init(ignoresRevocation: Bool = false) { self.ignoresRevocation = ignoresRevocation }

    var name: String { ignoresRevocation ? "entitlement-service (ignores revocation)" : "entitlement-service" }

    /// What the service answers (active entitlements and their expiry) and where its facts come from (the app's
    /// transactions and App Store Server Notifications): iapcheck delivers and compares only these.
    var profile: ValidatorProfile {
        ValidatorProfile(answers: [.entitlementsActive, .entitlementsExpiresDate], channels: [.app, .notification])
    }

    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
        func kind(_ k: ProductKind) -> EntitlementService.ProductKind {
            switch k {
            case .autoRenewable: .autoRenewable
            case .nonConsumable: .nonConsumable
            case .consumable: .consumable
            case .nonRenewing: .nonRenewing
            }
        }
        // The service's configuration, from the catalog iapcheck generated this case with.
        service = EntitlementService(
            entitlements: Dictionary(
                config.catalog.entitlementList.map { ($0.id, $0.products) }, uniquingKeysWith: { a, _ in a }),
            products: Dictionary(
                config.catalog.products.map { ($0.id, kind($0.kind)) }, uniquingKeysWith: { a, _ in a }))
        service.ignoresRevocation = ignoresRevocation
    }

    /// The signed path: this test runs unsigned (`CheckOptions.signed = false`). Verification belongs to the real
    /// backend: run it under `iapcheck check --validator exec:…` or `http:…` to check that part.
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        .rejected(reason: "signed artifacts are verified elsewhere")
    }

    func deliver(decoded delivery: Delivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        switch delivery {
        case .appTransaction(let s):
            // `s.deviceTime` is what the user's device claims: untrusted, ignored.
            service.record(transaction: .init(s.transaction), forUser: s.userId)
        case .notification(let n):
            // The type and subtype are hints: the signed facts inside decide.
            if let t = n.data?.transactionInfo { service.record(transaction: .init(t)) }
            if let r = n.data?.renewalInfo { service.record(renewalInfo: .init(r)) }
        default:
            return .rejected(reason: "channel not taken")
        }
        return .accepted
    }

    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        // `state` and `ownership` are not declared in the profile, so not compared.
        let grants = service.entitlements(user: query.userId, at: query.at).map { id, expires in
            EntitlementGrant(entitlementId: id, active: true, state: .active, expiresDate: expires, ownership: nil)
        }
        return EntitlementAnswer(products: [], groups: [], consumables: [], entitlements: grants)
    }
}

extension EntitlementService.Transaction {
    init(_ t: JWSTransactionDecodedPayload) {
        self.init(
            transactionId: t.transactionId, originalTransactionId: t.originalTransactionId,
            webOrderLineItemId: t.webOrderLineItemId, productId: t.productId, purchaseDate: t.purchaseDate,
            expiresDate: t.expiresDate, revocationDate: t.revocationDate, signedDate: t.signedDate,
            appAccountToken: t.appAccountToken, isUpgraded: t.isUpgraded ?? false,
            transactionReason: t.transactionReason?.rawValue)
    }
}

extension EntitlementService.RenewalInfo {
    init(_ r: JWSRenewalInfoDecodedPayload) {
        self.init(
            originalTransactionId: r.originalTransactionId, isInBillingRetryPeriod: r.isInBillingRetryPeriod ?? false,
            gracePeriodExpiresDate: r.gracePeriodExpiresDate, signedDate: r.signedDate)
    }
}
