import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPSimulator
import IAPSupport
import IAPValidatorAPI
import IAPVerification
import PropertyEngine
import Testing

/// When the attempt budget ends a shrink, the FAIL line says whether fewer actions were within reach: the passes
/// spend most of a budget lowering values, and "a larger --shrink-attempts may give a smaller case" on a case none
/// of whose actions can go sent users to raise a budget for nothing.
@Suite struct ShrinkNoteTests {
    @Test func aBudgetEndedShrinkSaysWhenNoActionCanGo() throws {
        var o = CheckOptions()
        o.cases = 50
        // A budget the passes end within values still to lower (this shrink ends its passes after about 1,100).
        o.shrinkBudget.maxAttempts = 300
        let checker = Checker(options: o, validator: Mutants.named("ignore-revocation")!.make())
        let f = try #require(checker.run().failure)
        #expect(f.shrinkExhausted && f.actionsNeeded, "\(f.shrinkAttempts) attempts")
        let clause = f.shrinkClause(timeBudget: 60, timed: false)
        #expect(clause.contains("no single action can go") && !clause.contains("smaller case"), "\(clause)")
        // The probe itself: the case as first found has an action that can go (the shrink deleted some).
        let (original, source) = checker.generate(caseIndex: f.caseIndex)
        let outcome = CaseRunner.run(original, against: checker.validator, signed: false)
        #expect(
            checker.anActionCanGo(
                source.choices, generator: checker.generator(forCase: f.caseIndex), property: original.property,
                outcome: outcome, signed: false))
    }
}

/// A failure that comes on some runs only cannot show an action needed: the FAIL line must not say "its N actions
/// are needed" under a FLAKY block.
@Suite struct FlakyShrinkNoteTests {
    /// The reference that miscounts consumable balances in every other case it is reset for.
    final class SometimesForgets: ReferenceValidator, @unchecked Sendable {
        let resets = Locked(0)
        override func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            resets.withLock { $0 += 1 }
            try super.reset(config)
        }
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            var a = try super.entitlements(query)
            if resets.value % 2 == 0 {
                a.consumables = a.consumables.map {
                    ConsumableBalance(productId: $0.productId, balance: $0.balance + 1)
                }
            }
            return a
        }
    }

    @Test func aFlakyFailuresShrinkClaimsNoActionNeeded() throws {
        var o = CheckOptions()
        o.cases = 200
        let f = try #require(Checker(options: o, validator: SometimesForgets()).run().failure)
        try #require(f.flaky != nil, "the failure came on every replay")
        let clause = f.shrinkClause(timeBudget: 60, timed: false)
        #expect(
            !clause.contains("needed:") && !clause.contains("are needed") && !clause.contains("is needed"), "\(clause)")
        #expect(!clause.contains("no single action can go"), "\(clause)")
        #expect(clause.contains("does not fail on every run"), "\(clause)")
    }
}

/// A shrink keeps the finding it started from: a validator that accepts several forgery classes is reported with
/// the class its case was found with, not another one a smaller case happened to carry.
@Suite struct ShrinkKeepsTheFindingTests {
    /// Checks no certificate chain at all: every chain-shaped forgery class gets through.
    final class NoChainCheck: ReferenceValidator, @unchecked Sendable {
        override func verifierOptions(_ base: SignedDataVerifier.Options) -> SignedDataVerifier.Options {
            var o = base
            o.verifyChain = false
            o.checkOIDs = false
            return o
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func aShrunkForgeryFailureNamesTheClassItWasFoundWith(seed: UInt64) throws {
        var o = CheckOptions()
        o.cases = 300
        o.seed = seed
        o.properties = [.forgeryRejected]
        let checker = Checker(options: o, validator: NoChainCheck())
        let f = try #require(checker.run().failure)
        let (original, _) = checker.generate(caseIndex: f.caseIndex)
        let found = CaseRunner.run(original, against: NoChainCheck())
        guard case .discrepancy(let first) = found, let shrunk = f.discrepancy else {
            Issue.record("not a discrepancy: \(found)")
            return
        }
        #expect(shrunk.finding == first.finding, "found with \(first.finding), reported as \(shrunk.finding)")
    }
}

/// Ctrl-C while a case runs: when that case fails, it is reported as found, without a shrink or a replay (against a
/// hanging backend each would wait another --timeout), and the run is marked interrupted.
@Suite struct StopDuringACaseTests {
    /// The reference whose questions time out, and which asks the run to stop (Ctrl-C) during the first.
    final class StopsWhileHanging: ReferenceValidator, @unchecked Sendable {
        let asked = Locked(0)
        let stop = Locked(false)
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            asked.withLock { $0 += 1 }
            stop.withLock { $0 = true }
            throw ValidatorFailure(.timedOut, "no complete HTTP response within 20 s")
        }
    }

    @Test func aCaseThatFailsAfterCtrlCIsReportedUnshrunk() throws {
        let v = StopsWhileHanging()
        var o = CheckOptions()
        o.cases = 20
        o.shouldStop = { v.stop.value }
        var announced: [Shrinker.Budget?] = []
        var checker = Checker(options: o, validator: v)
        checker.willShrink = { _, _, budget in announced.append(budget) }
        let report = checker.run()
        let f = try #require(report.failure)
        #expect(f.shrinkStopped && f.shrinkAttempts == 0 && report.interrupted)
        #expect(v.asked.value == 1, "asked \(v.asked.value) times: a replay or a shrink ran after the stop")
        #expect(announced.count == 1 && announced[0] == nil)
        #expect(f.shrinkClause(timeBudget: 60, timed: false).contains("stopped by Ctrl-C"))
    }
}

/// A validator failing as a program gets a few shrink attempts whatever `--shrink-attempts` says, so its FAIL line
/// does not send the user to raise that option.
@Suite struct ValidatorFailureShrinkNoteTests {
    final class AlwaysHangs: ReferenceValidator, @unchecked Sendable {
        override func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            throw ValidatorFailure(.timedOut, "no complete HTTP response within 5 s")
        }
    }

    @Test func aHangsShrinkNoteNamesItsOwnBudget() throws {
        var o = CheckOptions()
        o.cases = 5
        let f = try #require(Checker(options: o, validator: AlwaysHangs()).run().failure)
        let clause = f.shrinkClause(timeBudget: 60, timed: true)
        #expect(f.shrinkAttempts <= 8, "\(f.shrinkAttempts) attempts")
        #expect(!clause.contains("--shrink-attempts"), "\(clause)")
        #expect(f.shrinkExhausted && clause.contains("few attempts a validator failing as a program"), "\(clause)")
    }
}
