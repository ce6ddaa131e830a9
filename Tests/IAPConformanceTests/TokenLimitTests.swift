import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import Testing

/// An app may declare a size limit on signed tokens (policy tokenSizeLimit, docs/policies.md): then every token over
/// it must be refused, genuine ones too (docs/semantics.md#q19-token-size).
@Suite struct TokenLimitTests {
    /// A limit below the size of genuine tokens: a validator that takes them anyway is reported, with the size and
    /// the limit as the reason, not left to crash the run (the expected verdict had no reason to print).
    @Test func aGenuineTokenOverTheDeclaredLimitMustBeRefusedAndSaysWhy() throws {
        var o = CheckOptions()
        o.cases = 20
        o.seed = 1
        o.policy = Policy(tokenSizeLimit: 2048)
        let report = Checker(options: o, validator: Mutants.named("no-size-limit")!.make()).run()
        let d = try #require(report.failure?.discrepancy)
        #expect(d.kind == .verdict)
        #expect(d.expected.contains("bytes, over the policy's tokenSizeLimit of 2048"), "\(d.expected)")
        #expect(d.finding.hasPrefix("accepted an artifact it must refuse (a token of "), "\(d.finding)")
        // The explanation says why this genuine artifact must be refused, not that it must be accepted.
        let why = Explanation.lines(d, in: try #require(report.failure?.shrunk)).joined(separator: "\n")
        #expect(why.contains("why it must be refused: a token of "), "\(why)")
        #expect(!why.contains("must be accepted"), "\(why)")
    }

    /// The reference honours the same limit: it refuses what is over it and passes.
    @Test func theReferenceHonoursASmallLimit() {
        var o = CheckOptions()
        o.cases = 20
        o.seed = 1
        o.policy = Policy(tokenSizeLimit: 2048)
        #expect(Checker(options: o, validator: ReferenceValidator()).run().failure == nil)
    }

    /// Under such a limit the forgery probe cannot credit a class whose genuine twin is over it (a correct validator
    /// refuses the twin too): the class is listed as not checked, and is neither a divergence nor a failure.
    @Test func certifyDoesNotHoldTheLimitAgainstTheReference() {
        let report = CertifyRun(policy: Policy(tokenSizeLimit: 2048), scale: 0.05).run(ReferenceValidator())
        #expect(report.passed)
        let notProbed = report.forgeries.filter { $0.notProbed != nil }.map(\.name)
        #expect(!notProbed.isEmpty)
        #expect(report.divergences.isEmpty, "\(report.divergences.map(\.detail))")
        #expect(Set(notProbed).isSubset(of: Set((report.notChecked ?? []).map(\.name))))
        // At the limit the kit's probes fit under, every class is probed again.
        let roomy = CertifyRun(policy: Policy(tokenSizeLimit: 262_144), scale: 0.05).run(ReferenceValidator())
        #expect(roomy.forgeries.allSatisfy { $0.notProbed == nil })
    }
}
