import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPSupport
import IAPValidatorAPI
import Testing

/// `iapcheck certify` as a library call: the verdict word, the exit code and the printed lines come from the run,
/// without the command line.
@Suite struct CertifyRunTests {
    /// Ctrl-C (the Node trial's certify of a slow backend): the suite stops after the case under way and says what it
    /// ran, with no verdict and exit 130, where it used to die without a word.
    @Test func aCertifyStoppedByCtrlCSaysSoAndGivesNoVerdict() throws {
        let asked = Locked(0)
        var run = CertifyRun(scale: 0.05)
        run.shouldStop = {
            asked.withLock {
                $0 += 1
                return $0 > 20
            }
        }
        let report = run.run(ReferenceValidator())
        #expect(report.interrupted == true)
        #expect(report.exitCode == 130 && report.verdictWord.hasPrefix("INTERRUPTED"), "\(report.verdictWord)")
        #expect(report.properties.count < run.entries.count)
        #expect(report.forgeries.isEmpty)
        #expect(report.lines.contains { $0.contains("interrupted by Ctrl-C") }, "\(report.lines)")
        #expect(report.lines.contains("forgeries: not probed (the run was interrupted)"), "\(report.lines)")
    }

    /// The probe sends one artifact per class; a forgery the properties' cases found accepted is said on the same
    /// line, which read "26/26 classes rejected" beside that divergence (the Go trial).
    @Test func theForgeryLineSaysWhatThePropertiesCasesFoundAccepted() throws {
        let report = CertifyRun(scale: 0.02).run(ReferenceValidator())
        var json = try #require(
            JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        json["divergences"] = [
            [
                "kind": "property", "name": "forgery-rejected", "declared": false, "detail": "",
                "signatureFields": ["difference": "accepted a forged artifact (wrong-app-apple-id)"],
            ]
        ]
        let found = try JSONDecoder().decode(
            CertificationSuite.Report.self, from: JSONSerialization.data(withJSONObject: json))
        let line = try #require(found.lines.first { $0.hasPrefix("forgeries:") })
        #expect(
            line.contains("by the probe") && line.contains("accepted: a forged artifact (wrong-app-apple-id)"),
            "\(line)")
        #expect(!(report.lines.first { $0.hasPrefix("forgeries:") } ?? "").contains("by the probe"))
    }

    @Test func aCorrectValidatorIsCertifiedWithExitZeroAndARowPerProperty() {
        var run = CertifyRun(scale: 0.02)
        let seen = Locked<[(Int, Int, String)]>([])
        run.caseProgress = { done, total, label in seen.withLock { $0.append((done, total, label)) } }
        let report = run.run(ReferenceValidator())
        #expect(report.verdictWord == "CERTIFIED" && report.exitCode == 0)
        let rows = report.lines.filter { $0.contains("  pass  ") }
        #expect(rows.count == CertificationSuite.entries.count, "\(report.lines)")
        let judged = report.forgeries.count - 1
        #expect(
            report.lines.contains(
                "forgeries: \(judged)/\(judged) classes rejected; acknowledged as repeats, which is allowed: replayed-notification-uuid"
            ), "\(report.lines)")
        #expect(report.folderName.hasPrefix("certify-reference-"))
        // Progress counts the whole suite's cases, and names the property of each.
        let total = run.entries.map { max(1, Int(Double($0.cases) * 0.02)) }.reduce(0, +)
        let last = seen.withLock { $0.last }
        #expect(last?.0 == total && last?.1 == total, "\(String(describing: last))")
        #expect(last?.2 == "certify (clock-skew, property 6 of 6)")
    }

    @Test(.long) func aMutantIsNotCertifiedWithExitOneAndADeclaredDivergenceIsForgiven() {
        let bad = CertifyRun(scale: 0.05).run(Mutants.named("skip-signature")!.make())
        #expect(bad.verdictWord == "NOT CERTIFIED" && bad.exitCode == 1)
        #expect(bad.lines.contains { $0.hasPrefix("divergence (UNEXPECTED)") }, "\(bad.lines)")
        // Distinct failures that read alike are told apart: no two divergence lines are the same.
        let divergenceLines = bad.lines.filter { $0.hasPrefix("divergence") }
        #expect(Set(divergenceLines).count == divergenceLines.count, "\(divergenceLines)")
        var declared = CertifyRun(policy: Policy(tokenSizeLimit: 262_144), scale: 0.05)
        declared.knownDivergences = ["oversized-token"]
        let forgiven = declared.run(Mutants.named("no-size-limit")!.make())
        let n = forgiven.divergences.filter(\.declared).count
        #expect(
            forgiven.verdictWord == "CERTIFIED WITH \(n) DECLARED EXCEPTION\(n == 1 ? "" : "S")" && n >= 1
                && forgiven.exitCode == 0)
        #expect(forgiven.lines.contains { $0.hasPrefix("divergence (declared): forgery oversized-token") })
    }

    /// A validator that fails as a program (here every delivery times out) is exit 3, not a discrepancy.
    @Test func aValidatorThatFailsAsAProgramIsExitThree() {
        let report = CertifyRun(scale: 0.02).run(DistinctFailuresTests.TimesOut())
        #expect(report.exitCode == 3 && report.verdictWord == "NOT CERTIFIED")
        #expect(report.lines.contains { $0.contains("validator failure: no reply within 0 s") }, "\(report.lines)")
    }

    /// A validator that takes two calls at once is certified under parallel-delivery too (check runs it for such a
    /// validator), so a lost update under concurrent deliveries is not certified; one asked without it (an http:
    /// backend without --parallel) has the property listed as not checked, with the way to check it.
    @Test(.long) func aConcurrentValidatorIsCertifiedUnderParallelDelivery() {
        var run = CertifyRun(scale: 1)
        run.parallel = true
        #expect(run.entries.contains { $0.property == .parallelDelivery })
        let racy = run.run(Mutants.named("check-then-act-credit")!.make())
        #expect(racy.verdictWord == "NOT CERTIFIED", "\(racy.lines)")
        #expect(racy.properties.first { $0.property == "parallel-delivery" }?.passed == false, "\(racy.lines)")
        #expect(racy.properties.filter { $0.property != "parallel-delivery" }.allSatisfy { $0.passed })
        // Its replay races too: check takes parallel-delivery's concurrent clients with --parallel.
        #expect(
            racy.divergences.contains {
                $0.replay?.contains("--property parallel-delivery --seed 808 --parallel") == true
            },
            "\(racy.divergences.map(\.replay))")
    }

    @Test func parallelDeliveryNotAskedIsListedAsNotChecked() {
        var asked = CertifyRun(scale: 0.02)
        asked.parallelNotAsked = "checked with certify --parallel"
        let report = asked.run(ReferenceValidator())
        #expect(!report.properties.contains { $0.property == "parallel-delivery" })
        #expect(report.notChecked?.contains { $0.name == "parallel-delivery" && $0.kind == "property" } == true)
        #expect(CertifyRun.unknownDivergence(in: ["parallel-delivery", "durable-ack"]) == nil)
    }

    @Test func onlyCertifiedPropertiesAndForgeryClassesCanBeDeclared() {
        #expect(CertifyRun.unknownDivergence(in: ["oversized-token", "robust-input"]) == nil)
        #expect(CertifyRun.unknownDivergence(in: ["robust-input", "no-such-thing"]) == "no-such-thing")
    }

    /// A baseline written from a run (`certify --write-baseline`), each entry given its reason, certifies the same
    /// validator with those exceptions listed, never plainly; without one of its entries the run names only that
    /// signature as unexpected; an entry no run meets is named as not met.
    @Test(.long) func aBaselineCertifiesWithItsExceptionsListedAndNothingMore() throws {
        // The first of these mutants that shows two signatures or more at this scale (which one depends on the
        // generator).
        let names = ["latest-by-max-expires", "no-grace", "ignore-revocation", "family-as-owner", "intro-per-product"]
        var writing = CertifyRun(scale: 0.1)
        writing.collectsEverySignature = true  // as `certify --write-baseline` runs
        let runs = names.lazy.map { name in (name, writing.run(Mutants.named(name)!.make())) }
        let (name, first) = try #require(runs.first { $0.1.baselineOfDivergences.entries.count >= 2 })
        let mutant = { Mutants.named(name)!.make() }
        var written = first.baselineOfDivergences
        for i in written.entries.indices { written.entries[i].reason = "we read the latest by expiry on purpose" }
        let madeUp = try JSONDecoder().decode(FailureSignature.self, from: Data(#"{"difference":"made up"}"#.utf8))
        written.entries.append(Baseline.Entry(signature: madeUp, reason: "never met", replay: nil))
        var run = CertifyRun(scale: 0.1)
        (run.baseline, run.baselineFile) = (written, "baseline.json")
        let accepted = run.run(mutant())
        #expect(!accepted.passed && accepted.exitCode == 0, "\(accepted.lines)")
        #expect(
            accepted.verdictWord.hasPrefix("CERTIFIED WITH ") && accepted.verdictWord.hasSuffix("DECLARED EXCEPTIONS"))
        #expect(accepted.lines.contains("  accepted (baseline.json): we read the latest by expiry on purpose"))
        #expect(accepted.baselineNotSeen == ["made up"])
        #expect(accepted.properties.contains { ($0.accepted ?? 0) > 0 })
        run.baseline?.entries.removeFirst()
        let partial = run.run(mutant())
        #expect(partial.exitCode == 1 && partial.verdictWord == "NOT CERTIFIED")
        let unexpected = partial.divergences.filter { !$0.declared }
        #expect(unexpected.map(\.signatureFields) == [written.entries[0].signature], "\(partial.lines)")
    }
}
