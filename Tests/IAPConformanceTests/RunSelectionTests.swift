import IAPConformance
import Testing

/// Every command a run prints to run its cases again (a rerun, a replay, the doctor's "usable" line) carries the
/// `--timeout` the user gave: a slow backend's rerun with the default would fail or pass otherwise.
@Suite struct RunSelectionTests {
    @Test func aGivenTimeoutIsInEveryCommandAndTheDefaultInNone() {
        var s = RunSelection(validator: "http:target.json")
        #expect(
            ![s.rerun(case: 3), s.sameRun, s.replay(file: "c.json"), s.check].contains { $0.contains("--timeout") })
        s.timeout = 20
        for command in [s.rerun(case: 3), s.sameRun, s.replay(file: "c.json"), s.check] {
            #expect(command.hasSuffix(" --timeout 20"), "\(command)")
        }
        s.timeout = 2.5
        #expect(s.rerun(case: 0).hasSuffix(" --timeout 2.5"))
    }

    /// From the command line: the rerun line of a failing check.
    @Test func theRerunLineOfACheckCarriesItsTimeout() throws {
        let r = try CLI.run(
            ["check", "--validator", "mutant:ignore-revocation", "--cases", "30", "--no-corpus", "--timeout", "12"],
            in: CLI.repo.path)
        let rerun = r.out.split(separator: "\n").first {
            $0.contains("iapcheck check --validator") && $0.contains("--case ")
        }
        #expect(r.status == 1 && rerun?.contains("--timeout 12") == true, "\(r.out)")
    }
}
