import Foundation
import IAPBench
import IAPModel
import IAPValidatorAPI
import Synchronization
import Testing

/// Counts what it is sent; refuses every third delivery (a backend that fails under load).
final class CountingValidator: Validator, @unchecked Sendable {
    let failEvery: Int
    let resets = Atomic<Int>(0)
    let deliveries = Atomic<Int>(0)
    init(failEvery: Int = 0) { self.failEvery = failEvery }
    var name: String { "counting" }
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { resets.add(1, ordering: .relaxed) }
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
        let n = deliveries.add(1, ordering: .relaxed).newValue
        if failEvery > 0 && n % failEvery == 0 { throw ValidatorFailure(.crashed, "refused under load") }
        return .accepted
    }
    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
        EntitlementAnswer(products: [], groups: [], consumables: [])
    }
}

/// `bench transport --connections N`: only operations that succeeded count, and the clients either keep a state each
/// (a tenant per job) or share one that is reset once, never resetting each other's.
@Suite struct TransportBenchTests {
    static let ops = TransportBench.operations()

    @Test func failedOperationsAreReportedNotCounted() throws {
        let validators = [CountingValidator(failEvery: 3), CountingValidator(failEvery: 3)]
        let r = try TransportBench.concurrent(validators, Self.ops, seconds: 0.3, isolated: false)
        let deliveries = validators.map { $0.deliveries.load(ordering: .relaxed) }.reduce(0, +)
        #expect(r.failed > 0)
        // Every failure was a delivery: a third of them (each client fails every third of its own).
        #expect(abs(r.failed - deliveries / 3) <= 2)
        #expect(r.line("x").contains("\(r.failed) FAILED, not counted"))
        let good = try TransportBench.concurrent(
            [CountingValidator(), CountingValidator()], Self.ops, seconds: 0.1, isolated: false)
        #expect(good.failed == 0 && good.operations > 0)
    }

    @Test func sharedStateIsResetOnceAndIsolatedClientsEachResetTheirOwn() throws {
        let shared = [CountingValidator(), CountingValidator(), CountingValidator()]
        let s = try TransportBench.concurrent(shared, Self.ops, seconds: 0.3, isolated: false)
        #expect(shared.map { $0.resets.load(ordering: .relaxed) } == [1, 0, 0])
        #expect(s.operations > 0 && !s.isolated)

        let own = [CountingValidator(), CountingValidator()]
        let i = try TransportBench.concurrent(own, Self.ops, seconds: 0.3, isolated: true)
        // Each client starts its own state and resets it at every case of the mix, as one client alone does.
        for v in own { #expect(v.resets.load(ordering: .relaxed) >= 2) }
        #expect(i.isolated && i.line("x").contains("each its own state"))
    }
}
