import Foundation
import IAPModel
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

extension CertificationSuite {
    /// Each forgery class on its own: a genuine purchase is delivered, then the forged artifact; it must be rejected
    /// (a replayed notification UUID may be acknowledged) and must not change the user's answer. A rejection counts
    /// only when the class's genuine twin — an artifact on the same channel, correctly signed for the app, that any
    /// correct validator accepts (``ForgeryKit/genuineTwin(_:genuine:notification:userId:)``) — was accepted in a probe
    /// of its own: a validator that refuses genuine artifacts has not shown it rejects what
    /// is forged, and the result says it refused the genuine twin.
    /// Classes the probe would send on a channel the validator does not take (its profile) are not probed.
    public static func probeForgeries(_ v: any Validator, catalog: Catalog, policy: Policy) -> [ForgeryResult] {
        try? v.prepare()  // a subprocess's profile is known once it said hello
        let catalog = v.profile.answersEntitlements ? catalog.withEntitlements() : catalog
        guard let probe = ForgeryProbe(v, catalog: catalog, policy: policy) else {
            return ForgeryClass.allCases.map {
                ForgeryResult(name: $0.rawValue, rejected: false, reason: "not probed: the catalog has no product")
            }
        }
        return ForgeryClass.allCases.filter {
            $0.applies(in: catalog.environment) && v.profile.accepts(probeChannel($0))
        }.map { probe.result(of: $0) }
    }
}

/// The probe of one validator's forgery rejection: the genuine purchase and refund every probe starts from, and how a
/// class's forged artifact and its genuine twin are made and judged.
struct ForgeryProbe {
    let v: any Validator
    let profile: ValidatorProfile
    let policy: Policy
    let config: ValidatorConfig
    let renderer: ArtifactRenderer
    let kit: ForgeryKit
    let t: Millis = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay
    let user = "a1b2c3d4-0000-4000-8000-000000000001"
    /// The purchase refunded, its refund notification, and the tempting transaction a forgery would slip in.
    let tx: JWSTransactionDecodedPayload
    let notification: ResponseBodyV2DecodedPayload
    let tempting: JWSTransactionDecodedPayload

    /// Nil when the catalog has no product to buy.
    init?(_ v: any Validator, catalog: Catalog, policy: Policy) {
        guard let product = catalog.probeProduct else { return nil }
        let pki = TestPKI.harness
        self.v = v
        profile = v.profile
        self.policy = policy
        var config = ValidatorConfig(catalog: catalog, policy: policy)
        config.trustedRoots = pki.trustedRoots
        self.config = config
        renderer = ArtifactRenderer(pki: pki, appAppleId: catalog.appAppleId)
        kit = ForgeryKit(pki: pki)
        var tx = catalog.probeTransaction(of: product, at: t, user: user)
        tx.revocationDate = t + 1000
        tx.revocationReason = .refundedDueToIssue
        tx.signedDate = t + 1000
        self.tx = tx
        notification = ResponseBodyV2DecodedPayload(
            notificationType: .refund, subtype: nil, notificationUUID: "5e1f0000-0000-4000-9000-000000000001",
            signedDate: t + 1000,
            data: NotificationData(
                appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                transactionInfo: tx, renewalInfo: nil,
                status: product.kind == .autoRenewable ? .revoked : nil))
        var tempting = ForgeryClass.tempting(tx)
        tempting.signedDate = t + 2000
        self.tempting = tempting
    }

    /// One probe's world: a genuine purchase and its refund under ids of the probe's own (a validator that keeps its
    /// state meets every probe under a fresh namespace, docs/http-target.md).
    struct World {
        var user: String
        var tx: JWSTransactionDecodedPayload
        var notification: ResponseBodyV2DecodedPayload
        var tempting: JWSTransactionDecodedPayload
        var genuine: JWSTransactionDecodedPayload
    }

    func world(_ ns: IDNamespace?) -> World {
        var w = World(
            user: ns.map { $0.uuid(user) } ?? user, tx: ns.map { $0.apply(tx) } ?? tx,
            notification: ns.map { $0.apply(notification) } ?? notification,
            tempting: ns.map { $0.apply(tempting) } ?? tempting, genuine: tx)
        w.genuine = w.tx
        w.genuine.revocationDate = nil
        w.genuine.revocationReason = nil
        w.genuine.signedDate = t
        return w
    }

    /// The validator reset, the genuine purchase and its refund delivered on the channels it takes. A backend that
    /// asks the API of its own accord finds there what Apple would know: the purchase, its refund and, in the probe of
    /// class `twin`, that twin's content, never a forgery's (docs/mock-app-store.md#a-backend-that-asks-on-its-own).
    func setUp(twin: ForgeryClass? = nil) throws(ValidatorFailure) -> (World, APIService?) {
        let w = world(v.isolation == .namespace ? IDNamespace.next() : nil)
        try v.reset(config)
        let genuine: [Delivery] = [
            .appTransaction(AppTransactionSubmission(userId: w.user, transaction: w.genuine, deviceTime: nil)),
            .notification(w.notification),
        ]
        let api = APIService(config: config, genuine + (twin.map { [twinContent($0, w)] } ?? []), for: v)
        if profile.accepts(.app) {
            api?.serve(v, at: t)
            _ = try v.deliver(renderer.render(genuine[0]), now: t)
        }
        if profile.accepts(.notification) {
            api?.serve(v, at: t + 1000)
            _ = try v.deliver(renderer.render(genuine[1]), now: t + 1000)
        }
        api?.serve(v, at: t + 2000)
        return (w, api)
    }

    /// What the probe sends for class `f` (before the kit forges it). An oversized token carries the genuine purchase
    /// as the validator already has it (the app's version, or the notification it was sent).
    func content(_ f: ForgeryClass, _ w: World) -> Delivery {
        f.isHardeningOnly && profile.accepts(.app)
            ? Delivery.appTransaction(AppTransactionSubmission(userId: w.user, transaction: w.genuine, deviceTime: nil))
            : ForgeryKit.delivery(f, tempting: w.tempting, notification: w.notification, userId: w.user)
    }

    /// The twin's verdict: nil when accepted, else why it was refused. An oversized token's twin is its own content
    /// at its ordinary size.
    func twinRefusal(_ f: ForgeryClass) throws(ValidatorFailure) -> String? {
        let (w, api) = try setUp(twin: f)
        defer { api?.serve(nil, on: v) }
        if case .rejected(let why) = try v.deliver(twin(f, w), now: t + 2000) { return why }
        return nil
    }

    func twin(_ f: ForgeryClass, _ w: World) -> SignedDelivery { renderer.render(twinContent(f, w)) }

    func twinContent(_ f: ForgeryClass, _ w: World) -> Delivery {
        ForgeryKit.genuineTwin(f, genuine: w.tx, notification: w.notification, userId: w.user) ?? content(f, w)
    }

    /// A limit the app declares below the size of a genuine token (docs/policies.md) makes a correct validator refuse
    /// the twin too: such a class cannot be probed under this policy.
    func overLimit(_ f: ForgeryClass) -> String? {
        guard let limit = policy.tokenSizeLimit else { return nil }
        let size = twin(f, world(nil)).largestToken
        guard size > limit else { return nil }
        return
            "not probed: its genuine twin is a token of \(size) bytes, over the policy's tokenSizeLimit of \(limit), which a correct validator refuses too"
    }

    /// Class `f` probed: not probed, not credited (its twin refused), or the forged artifact's verdict and whether it
    /// changed the answer.
    func result(of f: ForgeryClass) -> CertificationSuite.ForgeryResult {
        if let why = overLimit(f) {
            return CertificationSuite.ForgeryResult(name: f.rawValue, rejected: false, reason: why, notProbed: why)
        }
        do {
            if let why = try twinRefusal(f) {
                return CertificationSuite.ForgeryResult(
                    name: f.rawValue, rejected: false,
                    reason:
                        "not credited: its genuine twin (the same content, correctly signed for the app) was refused too: \(why)",
                    genuineRefused: why)
            }
            let (w, api) = try setUp()
            defer { api?.serve(nil, on: v) }
            // A backend that applies what it received later has its settle time to apply the set-up first.
            CaseRunner.waitForTheQueue(of: v)
            let before = try v.entitlements(EntitlementQuery(userId: w.user, at: t + 3000))
            let forged = content(f, w)
            let verdict = try v.deliver(kit.render(f, forged), now: t + 2000)
            CaseRunner.waitForTheQueue(of: v)
            let after = try v.entitlements(EntitlementQuery(userId: w.user, at: t + 3000))
            let changed = after.answerDifferences(from: before).filter { profile.compares($0.key) }.map(\.text)
            // An oversized token of genuine content may be accepted unless the policy sets a size limit; anything
            // may be by a route that verifies later, if it changes nothing.
            let allowed =
                f.mayBeAcknowledged || (f.isHardeningOnly && policy.tokenSizeLimit == nil)
                || v.verifiesLater(forged.channel)
            var reason: String?
            if verdict.isAccepted && !allowed { reason = "accepted" }
            if verdict.isAccepted && f.isHardeningOnly && allowed {
                reason = "accepted, as it may be without policy tokenSizeLimit (genuine content)"
            } else if verdict.isAccepted && f.mayBeAcknowledged {
                reason = "acknowledged as a repeat, which is allowed when the answers do not change"
            } else if verdict.isAccepted && allowed {
                reason = "received by a route that verifies later, which is allowed when the answers do not change"
            }
            if !changed.isEmpty {
                reason = (reason.map { $0 + "; " } ?? "") + "changed the answer: " + changed.joined(separator: "; ")
            }
            var result = CertificationSuite.ForgeryResult(
                name: f.rawValue, rejected: !verdict.isAccepted && changed.isEmpty, reason: reason)
            if verdict.isAccepted && allowed && changed.isEmpty { result.allowed = true }
            return result
        } catch {
            return CertificationSuite.ForgeryResult(
                name: f.rawValue, rejected: false, reason: "validator failure: \(error)", validatorFailure: "\(error)")
        }
    }
}
