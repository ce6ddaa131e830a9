import Foundation
import IAPLoad
import IAPModel
import IAPReference
import IAPSupport
import IAPTesting
import IAPValidatorAPI
import Testing

/// A load run sends what a real backend can take: every history's ids its own (and a second run's not the first's),
/// only the operations the target's channels take, and every error counted per operation with its reason.
@Suite struct LoadIdentityTests {
    /// A backend that remembers every notification UUID and transaction id it saw, across runs (a `reset` does not
    /// forget them, as a real database would not), and refuses one seen before with other content.
    final class RefusesReusedIds: ReferenceValidator, @unchecked Sendable {
        let seen = Locked<[String: String]>([:])
        override func ingestApp(_ s: AppTransactionSubmission) -> DeliveryVerdict {
            let t = s.transaction
            if let why = remember(
                "transaction \(t.transactionId)", "\(t.productId)|\(t.purchaseDate)|\(t.originalTransactionId)")
            {
                return .rejected(reason: why)
            }
            return super.ingestApp(s)
        }
        override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
            let content =
                "\(n.notificationType.rawValue)|\(n.subtype?.rawValue ?? "")|\(n.signedDate)|\(n.data?.transactionInfo?.transactionId ?? "")"
            if let why = remember("notification \(n.notificationUUID)", content) { return .rejected(reason: why) }
            return super.ingestNotification(n)
        }
        func remember(_ id: String, _ content: String) -> String? {
            seen.withLock { seen in
                if let before = seen[id], before != content { return "\(id) was received before with other content" }
                seen[id] = content
                return nil
            }
        }
    }

    static func profile(seed: Int = 1) throws -> LoadProfile {
        try LoadProfile.decode(
            Data(
                """
                {"name":"ids","mix":{"appTransaction":50,"notification":50},"pool":{"size":1500,"seed":\(seed)},
                 "executor":{"type":"closed","workers":1},"warmupSeconds":0,"durationSeconds":1}
                """.utf8), file: "ids.json")
    }

    static func run(_ profile: LoadProfile, _ pool: ArtifactPool, on backend: RefusesReusedIds) throws -> LoadResults {
        let workers = try LoadDriver(profile: profile, pool: pool) { backend }.run(seconds: 1, record: true)
        return LoadResults(profile: profile, workers: workers, seconds: 1)
    }

    @Test(.long) func aBackendThatRefusesReusedIdsSeesNoneInARunNorAcrossTwo() throws {
        let backend = RefusesReusedIds()
        let first = try Self.run(try Self.profile(), ArtifactPool.build(try Self.profile()), on: backend)
        #expect(first.summary.requests > 100)
        #expect(first.summary.errors.isEmpty, "\(first.summary.operations ?? [])")
        // A second run of the same profile against the same backend: new ids, nothing refused.
        let second = try Self.run(try Self.profile(), ArtifactPool.build(try Self.profile()), on: backend)
        #expect(second.summary.errors.isEmpty, "\(second.summary.operations ?? [])")
        // The check can fail: two pools of other histories under one run id reuse ids with other content.
        var setup = ArtifactPool.Setup()
        setup.runId = 42
        let a = ArtifactPool.build(try Self.profile(seed: 1), setup: setup)
        let b = ArtifactPool.build(try Self.profile(seed: 2), setup: setup)
        let fresh = RefusesReusedIds()
        _ = try Self.run(try Self.profile(seed: 1), a, on: fresh)
        let clash = try Self.run(try Self.profile(seed: 2), b, on: fresh)
        #expect((clash.summary.errors["rejected"] ?? 0) > 0)
    }

    /// Only what the validator's channels take is pooled; the rest is named.
    @Test func theTargetsChannelsDecideWhatIsSent() throws {
        var profile = try Self.profile()
        profile.mix = [.appTransaction: 1, .notification: 1, .legacyReceipt: 1, .query: 1]
        var setup = ArtifactPool.Setup()
        setup.validator = ValidatorProfile(answers: [.entitlementsActive], channels: [.app, .notification])
        let ops = ArtifactPool.operations(profile, for: setup.validator)
        #expect(ops.dropped == [.legacyReceipt])
        let pool = ArtifactPool.build(profile, setup: setup)
        #expect(!pool.items.contains { $0.operation == .legacyReceipt })
        #expect(pool.items.contains { $0.operation == .notification })
        #expect(pool.samples.deliveries.allSatisfy { if case .legacyReceipt = $0.0 { false } else { true } })
    }

    /// Refuses every notification, naming an id: counted under one reason (ids replaced), per operation, with the
    /// first request that met it; a threshold on one operation reads that operation alone.
    final class RefusesNotifications: ReferenceValidator, @unchecked Sendable {
        override func ingestNotification(_ n: ResponseBodyV2DecodedPayload) -> DeliveryVerdict {
            .rejected(reason: "webhook closed for \(n.notificationUUID) at 1780000000000")
        }
    }

    @Test(.long) func errorsAreCountedPerOperationWithTheirReason() throws {
        var profile = try Self.profile()
        profile.thresholds = [Threshold("errors{op:appTransaction} < 1%")!, Threshold("errors{op:notification} < 1%")!]
        let pool = ArtifactPool.build(profile)
        let workers = try LoadDriver(profile: profile, pool: pool) { RefusesNotifications() }.run(
            seconds: 1, record: true)
        let r = LoadResults(profile: profile, workers: workers, seconds: 1)
        let rows = Dictionary(uniqueKeysWithValues: (r.summary.operations ?? []).map { ($0.operation, $0) })
        let notifications = try #require(rows["notification"])
        #expect(notifications.errors == ["refused: webhook closed for <uuid> at <n>": notifications.requests])
        #expect(notifications.errorSamples.values.first?.contains("notification ") == true)
        #expect(rows["appTransaction"]?.errors.isEmpty == true)
        #expect(r.summary.thresholds.map(\.passed) == [true, false])
        #expect(r.summary.thresholds[1].shown == "100%")
        // The report shows them, the threshold in its unit.
        let dir = Scratch.directory + "iapcheck-ops-\(UUID().uuidString)"
        try r.write(to: dir)
        let html = try String(contentsOfFile: dir + "/report.html", encoding: .utf8)
        #expect(html.contains("Errors by reason") && html.contains("webhook closed for &lt;uuid&gt;"))
        #expect(html.contains("<td>100%</td>"))
    }
}
