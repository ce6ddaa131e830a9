import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPValidatorAPI

/// The long sweeps that check the harness itself, each cut into items that run alone: the oracle against the
/// simulator's truth over many seeds under every policy, the reference validator under every policy, every mutant
/// caught and shrunk. `swift test` runs a share of each (Sources/IAPTesting/Sweep.swift); `iapcheck-sweeps` runs them
/// whole from a release build, which is where CI runs them (CONTRIBUTING.md, "How the tests are organised").
public enum Sweeps {
    /// One item of a sweep: a name to select it by (`iapcheck-sweeps --only`), and its run, which returns what failed
    /// (nothing when it passed).
    public struct Item: Sendable {
        public var name: String
        public var run: @Sendable () -> [String]

        public init(name: String, run: @escaping @Sendable () -> [String]) {
            self.name = name
            self.run = run
        }
    }

    /// Every policy that differs from the default on one point (or two that interact), as the oracle and the
    /// reference must follow them all.
    public static let policies: [Policy] = [
        Policy(refundScope: .chain), Policy(consumableClawback: false), Policy(introEligibility: .neverSubscribed),
        Policy(nonRenewingStacking: true), Policy(graceWithoutRetryFlag: .deny), Policy(graceWithoutRetryFlag: .grant),
        Policy(consumableRefundShare: .share), Policy(upgradeDuringIntro: .cut), Policy(upgradeDuringIntro: .union),
        Policy(refundScope: .chain, upgradeDuringIntro: .union), Policy(extensionSignedAs: .renewalInfo),
        Policy(upgradeDuringIntro: .union, extensionSignedAs: .renewalInfo), Policy(expiresMeaning: .accessEnd),
        Policy(expiresMeaning: .paidFirst), Policy(expiresMeaning: .paidThrough),
    ]

    /// The whole sweeps' sizes: seeds of the oracle against the truth per policy (from seed 1000), signed cases of the
    /// reference per policy, cases and shrinking attempts per mutant.
    public static let truthSeeds = 1500
    public static let referenceCases = 300
    public static let mutantCases = 2000
    public static let mutantShrinkAttempts = 600

    /// Every item at full size, in a fixed order: the oracle against the truth (the default policy from seed 1, the
    /// others from seed 1000), the reference, the mutants.
    public static var all: [Item] {
        [Item(name: "truth default") { OracleTruth.sweep(1..<(1 + UInt64(truthSeeds))) }]
            + policies.map { p in
                Item(name: "truth \(label(p))") { OracleTruth.sweep(1000..<(1000 + UInt64(truthSeeds)), policy: p) }
            }
            + policies.map { p in Item(name: "reference \(label(p))") { referenceFollows(p, cases: referenceCases) } }
            + Mutants.all.map { m in Item(name: "mutant \(m.name)") { mutantIsCaughtAndShrunk(m.name) } }
    }

    /// A policy by what it changes from the default, as `field=value` pairs in the order of its fields (`default` for
    /// none).
    public static func label(_ policy: Policy) -> String {
        func fields(_ p: Policy) -> [(String, String)] {
            Mirror(reflecting: p).children.map { ($0.label ?? "", "\($0.value)") }
        }
        let base = fields(.default)
        let changed = zip(fields(policy), base).filter { $0.0.1 != $0.1.1 }.map { "\($0.0.0)=\($0.0.1)" }
        return changed.isEmpty ? "default" : changed.joined(separator: ",")
    }

    /// The reference validator passes `cases` signed cases under `policy` (catalogs drawn, as `check` does), or the
    /// shrunk counterexample's timeline. `validator` is the reference unless a test checks that the sweep can fail.
    public static func referenceFollows(
        _ policy: Policy, cases: Int, validator: @autoclosure () -> any Validator = ReferenceValidator()
    ) -> [String] {
        var o = CheckOptions()
        o.cases = cases
        o.policy = policy
        o.drawsCatalogs = true
        let report = Checker(options: o, validator: validator()).run()
        return report.failure.map {
            [Timeline.render($0.shrunk, failingStep: $0.failingStep, race: $0.discrepancy?.race)]
        } ?? []
    }

    /// A mutant is caught within ``mutantCases`` cases (catalogs drawn, as `iapcheck mutants` runs them) and shrunk
    /// to a small history within ``mutantShrinkAttempts``; its counterexample fails against it again and passes
    /// against the reference.
    public static func mutantIsCaughtAndShrunk(_ name: String) -> [String] {
        guard let m = Mutants.named(name) else { return ["no mutant named \(name)"] }
        var o = CheckOptions()
        o.cases = mutantCases
        o.drawsCatalogs = true
        o.shrinkBudget = .init(maxAttempts: mutantShrinkAttempts)
        if let p = m.policy { o.policy = p }
        let report = Checker(options: o, validator: m.make()).run()
        guard let f = report.failure else { return ["mutant \(name) survived \(o.cases) cases"] }
        var problems: [String] = []
        // A window of ten recent purchases takes eleven to show; 600 attempts bring it near that.
        let most = name == "recent-window" ? 24 : 10
        if f.shrunk.actionCount > most { problems.append("\(name): shrunk to \(f.shrunk.actionCount) actions") }
        if f.shrunk.actionCount >= f.originalActions && f.originalActions > 4 {
            problems.append("\(name): not shrunk from \(f.originalActions)")
        }
        // A race mutant fails only when the race is lost: replay a few times and require one failure.
        if !(0..<5).contains(where: { _ in !CaseRunner.run(f.shrunk, against: m.make()).isPass }) {
            problems.append("\(name): the shrunk counterexample no longer fails against it")
        }
        if !CaseRunner.run(f.shrunk, against: ReferenceValidator()).isPass {
            problems.append("\(name): the shrunk counterexample fails against the reference")
        }
        return problems
    }
}
