import Foundation
import IAPLoad
import IAPModel
import IAPReference
import IAPSupport
import IAPValidatorAPI
import Testing

/// `iapcheck load` as a library call: the pool, the run and what its summary records, without the command line.
@Suite struct LoadRunCallTests {
    static func profile(duration: Double = 1) throws -> LoadProfile {
        try LoadProfile.decode(
            Data(
                #"""
                {"name":"call","mix":{"appTransaction":60,"notification":20,"query":20},"pool":{"size":60},
                 "executor":{"type":"closed","workers":2},"warmupSeconds":0,"durationSeconds":\#(duration),
                 "thresholds":["errors < 1%"]}
                """#.utf8), file: "call.json")
    }

    @Test func aRunRecordsItsOptionsPoolAndSegment() throws {
        var run = LoadRun(profile: try Self.profile(), catalog: .standard, policy: .default)
        (run.runId, run.segment, run.timeout) = (4242, (1, 2), 7)
        let verdict = try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }
        let r = try #require(verdict.results)
        #expect(!verdict.interrupted && r.summary.requests > 0 && r.summary.passed)
        #expect(r.summary.runId == "4242" && r.summary.poolItems ?? 0 > 0)
        #expect(r.summary.options == "faults none; timeout 7.0 s")
        #expect(r.summary.segment == "1/2" && r.summary.workers == 1, "a segment runs its share of the workers")
        #expect(r.summary.answerSamples?.contains("questions about") == true, "\(r.summary.answerSamples ?? "nil")")
        let lines = r.summaryLines
        #expect(lines.first?.hasPrefix("call: \(r.summary.requests) requests in ") == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("  pool: \(r.summary.poolItems!) artifacts and questions, run id 4242") })
        #expect(lines.contains("  pass  errors < 1%  (observed 0%)"), "\(lines)")
        #expect(run.folderName(at: Date(timeIntervalSince1970: 0)) == "call-1970-01-01T000000000Z-segment-1of2")
    }

    /// The verdict's exit code: a run whose throughput fell below its baseline's is a regression (4); the same run
    /// as a segment is gated on the merge (0); within tolerance it passes.
    @Test(.long) func theBaselineAndTheSegmentDecideTheExitCode() throws {
        var run = LoadRun(profile: try Self.profile(), catalog: .standard, policy: .default)
        let first = try #require(try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }.results)
        #expect(first.summary.passed)
        var faster = first.summary
        faster.throughputPerSecond *= 100
        run.baseline = ("fast.json", faster)
        let slower = try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }
        #expect(slower.exitCode == 4 && slower.baseline?.regressions.isEmpty == false)
        #expect(slower.lines(tolerance: 0.1).contains("baseline: REGRESSION against fast.json"))
        run.segment = (0, 2)
        let segment = try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }
        #expect(segment.exitCode == 0 && segment.baseline == nil && !segment.gated)
        run.segment = nil
        var slow = first.summary
        slow.throughputPerSecond /= 100
        slow.latencyMicros = slow.latencyMicros.mapValues { $0 * 1000 }
        run.baseline = ("slow.json", slow)
        let within = try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }
        #expect(within.exitCode == 0 && within.lines(tolerance: 0.1).contains("baseline: within 10% of slow.json"))
    }

    /// A backend on libfaketime gets one frozen clock, after every artifact's own instant; on the header clock none.
    @Test func aFakeClockIsFrozenAfterEveryArtifact() throws {
        var run = LoadRun(profile: try Self.profile(), catalog: .standard, policy: .default)
        run.clock = .fake
        let made = try run.pool(for: ReferenceValidator())
        let frozen = try #require(made.frozenClock)
        #expect(made.pool.items.allSatisfy { $0.now < frozen })
        #expect(made.samples.contains("at the backend's frozen clock \(CivilTime.iso8601(frozen))"))
        let given = Locked<[Millis?]>([])
        _ = try run.run(first: ReferenceValidator()) { clock in
            given.withLock { $0.append(clock) }
            return ReferenceValidator()
        }
        #expect(given.withLock { $0 }.allSatisfy { $0 == frozen } && !given.withLock { $0 }.isEmpty)
        run.clock = .header
        #expect(try run.pool(for: ReferenceValidator()).frozenClock == nil)
    }

    /// Stopped before any measured request: nothing to write, and the verdict says it was interrupted.
    @Test func stoppedBeforeAnyRequestMeasuresNothing() throws {
        var run = LoadRun(profile: try Self.profile(), catalog: .standard, policy: .default)
        run.shouldStop = { true }
        let verdict = try run.run(first: ReferenceValidator()) { _ in ReferenceValidator() }
        #expect(verdict.results == nil && verdict.interrupted)
    }

    /// A validator that cannot start is a validator failure (exit 3), not a usage error.
    @Test func aValidatorThatCannotStartIsExitThree() throws {
        final class WillNotStart: Validator {
            let inner = ReferenceValidator()
            var name: String { "will-not-start" }
            func prepare() throws(ValidatorFailure) { throw ValidatorFailure(.crashed, "exit 1 at start") }
            func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
            func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
                try inner.deliver(delivery, now: now)
            }
            func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
                try inner.entitlements(query)
            }
        }
        let run = LoadRun(profile: try Self.profile(), catalog: .standard, policy: .default)
        #expect {
            _ = try run.run(first: WillNotStart()) { _ in WillNotStart() }
        } throws: { error in
            (error as? LoadRun.Failure)?.exitCode == 3 && "\(error)" == "validator failure: crashed: exit 1 at start"
        }
    }
}
