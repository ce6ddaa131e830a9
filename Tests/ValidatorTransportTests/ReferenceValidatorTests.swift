import IAPModel
import IAPMutants
import IAPReference
import IAPTesting
import Testing

/// Hand-written scenarios for the reference validator, each a rule of docs/semantics.md#core-rules.
@Suite struct ReferenceValidatorTests {
    let catalog = Catalog.standard
    let user = "a1b2c3d4-0000-4000-8000-000000000001"
    let day = CivilTime.msPerDay
    let t0: Millis = 1_772_323_200_000  // 2026-03-01

    func validator(_ policy: Policy = .default) throws -> ReferenceValidator {
        let v = ReferenceValidator()
        try v.reset(ValidatorConfig(catalog: catalog, policy: policy))
        return v
    }

    func tx(
        _ id: String, chain: String? = nil, product: String = "pro.monthly", at t: Millis, expires: Millis? = nil,
        reason: TransactionReason = .purchase, signed: Millis? = nil
    ) -> JWSTransactionDecodedPayload {
        var x = Build.transaction(
            id, chain: chain, product: product, purchased: t, expires: expires, signed: signed, reason: reason,
            catalog: catalog)
        x.appAccountToken = user
        // Only a subscription's expiry is given here; a pass without one has none.
        x.expiresDate = catalog.product(product)!.kind == .autoRenewable ? expires : nil
        return x
    }

    func notification(
        _ type: NotificationTypeV2, _ subtype: Subtype? = nil, uuid: String, tx: JWSTransactionDecodedPayload?,
        renewal: JWSRenewalInfoDecodedPayload? = nil, signed: Millis
    ) -> Delivery {
        Build.notification(type, subtype, tx: tx, renewal: renewal, uuid: uuid, signed: signed, catalog: catalog)
    }

    func active(_ v: ReferenceValidator, at t: Millis) throws -> [String] {
        try v.entitlements(EntitlementQuery(userId: user, at: t)).products.filter(\.active).map(\.productId)
    }

    @Test func subscriptionEntitlesUntilExpiresDateExclusive() throws {
        let v = try validator()
        _ = try v.deliver(
            decoded: .appTransaction(
                .init(userId: user, transaction: tx("1", at: t0, expires: t0 + 30 * day), deviceTime: nil)), now: t0)
        #expect(try active(v, at: t0) == ["pro.monthly"])
        #expect(try active(v, at: t0 + 30 * day - 1) == ["pro.monthly"])
        #expect(try active(v, at: t0 + 30 * day).isEmpty)
    }

    @Test func refundEndsAccessAtRevocationDateAndReversalRestoresIt() throws {
        let v = try validator()
        var x = tx("1", product: "lifetime.unlock", at: t0)
        _ = try v.deliver(decoded: .appTransaction(.init(userId: user, transaction: x, deviceTime: nil)), now: t0)
        x.revocationDate = t0 + 5 * day
        x.revocationReason = .refundedDueToIssue
        x.signedDate = t0 + 5 * day
        _ = try v.deliver(decoded: notification(.refund, uuid: "n1", tx: x, signed: t0 + 5 * day), now: t0 + 5 * day)
        #expect(try active(v, at: t0 + 5 * day - 1) == ["lifetime.unlock"])
        #expect(try active(v, at: t0 + 5 * day).isEmpty)
        x.revocationDate = nil
        x.revocationReason = nil
        x.signedDate = t0 + 9 * day
        _ = try v.deliver(
            decoded: notification(.refundReversed, uuid: "n2", tx: x, signed: t0 + 9 * day), now: t0 + 9 * day)
        #expect(try active(v, at: t0 + 9 * day) == ["lifetime.unlock"])
    }

    @Test func aStaleSnapshotArrivingLateDoesNotUndoARefund() throws {
        let v = try validator()
        var x = tx("1", product: "lifetime.unlock", at: t0)
        let original = x
        x.revocationDate = t0 + day
        x.signedDate = t0 + day
        _ = try v.deliver(decoded: notification(.refund, uuid: "n1", tx: x, signed: t0 + day), now: t0 + day)
        _ = try v.deliver(
            decoded: .appTransaction(.init(userId: user, transaction: original, deviceTime: nil)), now: t0 + 2 * day)
        #expect(try active(v, at: t0 + 2 * day).isEmpty)
    }

    @Test func upgradeTakesEffectImmediately() throws {
        let v = try validator()
        let basic = tx("1", product: "basic.monthly", at: t0, expires: t0 + 31 * day)
        let pro = tx("2", chain: "1", product: "pro.monthly", at: t0 + 10 * day, expires: t0 + 41 * day)
        for x in [basic, pro] {
            _ = try v.deliver(
                decoded: .appTransaction(.init(userId: user, transaction: x, deviceTime: nil)), now: x.signedDate)
        }
        let answer = try v.entitlements(EntitlementQuery(userId: user, at: t0 + 11 * day))
        #expect(answer.products.filter(\.active).map(\.productId) == ["pro.monthly"])
        #expect(answer.groups.first { $0.groupId == "21000001" }?.effectiveProductId == "pro.monthly")
    }

    @Test func graceKeepsAccessUntilGracePeriodExpiresDateAndRetryDoesNot() throws {
        let v = try validator()
        let x = tx("1", at: t0, expires: t0 + 31 * day)
        let r = Build.renewalInfo(of: x, signed: t0 + 31 * day, retry: true, grace: t0 + 34 * day)
        _ = try v.deliver(
            decoded: notification(.didFailToRenew, .gracePeriod, uuid: "n1", tx: x, renewal: r, signed: t0 + 31 * day),
            now: t0 + 31 * day)
        let inGrace = try v.entitlements(EntitlementQuery(userId: user, at: t0 + 33 * day)).products.first
        #expect(inGrace?.state == .grace && inGrace?.expiresDate == t0 + 34 * day)
        let after = try v.entitlements(EntitlementQuery(userId: user, at: t0 + 34 * day)).products.first
        #expect(after?.active == false && after?.state == .billingRetry)
    }

    @Test func foreignArtifactsAreRejectedAndChangeNothing() throws {
        let v = try validator()
        var x = tx("1", product: "lifetime.unlock", at: t0)
        x.environment = .sandbox
        #expect(
            try !v.deliver(decoded: .appTransaction(.init(userId: user, transaction: x, deviceTime: nil)), now: t0)
                .isAccepted)
        x.environment = .production
        x.bundleId = "com.other"
        #expect(
            try !v.deliver(decoded: .appTransaction(.init(userId: user, transaction: x, deviceTime: nil)), now: t0)
                .isAccepted)
        #expect(try active(v, at: t0 + 1).isEmpty)
    }

    @Test func consumablesAreCreditedOncePerTransaction() throws {
        let v = try validator()
        var x = tx("1", product: "coins.100", at: t0)
        x.quantity = 3
        for _ in 0..<3 {
            _ = try v.deliver(decoded: .appTransaction(.init(userId: user, transaction: x, deviceTime: nil)), now: t0)
        }
        _ = try v.deliver(
            decoded: .apiSnapshot(APISnapshot(originalTransactionId: "1", transactions: [x], renewalInfo: nil)),
            now: t0 + 1)
        #expect(
            try v.entitlements(EntitlementQuery(userId: user, at: t0 + 2)).consumables == [
                ConsumableBalance(productId: "coins.100", balance: 3)
            ])
    }

    @Test func theDeviceClockIsIgnored() throws {
        let v = try validator()
        _ = try v.deliver(
            decoded: .appTransaction(
                .init(userId: user, transaction: tx("1", at: t0, expires: t0 + 30 * day), deviceTime: nil)), now: t0)
        let q = EntitlementQuery(userId: user, at: t0 + 40 * day, deviceTime: t0 + day)
        #expect(try v.entitlements(q).products.filter(\.active).isEmpty)
    }

    @Test func everyMutantHasAUniqueNameAndDiffersFromTheReference() throws {
        let names = Mutants.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.count >= 25)
        for m in Mutants.all { #expect(m.make().name == "mutant:\(m.name)") }
    }
}
