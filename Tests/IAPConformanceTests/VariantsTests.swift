import IAPConformance
import IAPModel
import IAPReference
import Testing

/// The variants are correct validators that read the App Store differently from the reference where Apple leaves
/// room: each passes the default policy (a failure of one is a false failure of the harness).
@Suite struct VariantsTests {
    @Test(.long, arguments: Variants.all.map(\.name))
    func eachVariantPassesTheDefaultPolicy(_ name: String) {
        for seed: UInt64 in [1, 2] {
            var o = CheckOptions()
            (o.seed, o.cases, o.drawsCatalogs, o.signed) = (seed, 400, true, false)
            let report = Checker(options: o, validator: Variants.named(name)!.make()).run()
            #expect(report.failures.isEmpty, "variant:\(name), seed \(seed): \(report.failures.map(\.signature))")
            #expect(report.passed == 400)
        }
    }
}
