import ArgumentParser
import Foundation
import IAPEncoding
import IAPHTTP
import IAPLoad
import IAPModel
import IAPSupport
import IAPValidatorAPI

extension Load.Run {
    /// The library run the options describe, or exit 2 naming the option: the run id, the segment, the kill
    /// interval, and a kill only where iapcheck started the backend.
    func loadRun(
        _ p: LoadProfile, catalog: Catalog, policy: Policy, faults faultProfile: FaultProfile, first: any Validator,
        baseline base: LoadResults.Summary?
    ) throws -> LoadRun {
        if let runId, !(0..<10_000_000_000).contains(runId) {
            throw fail("error: --run-id takes 0 to 9999999999, not \(runId)", code: Exit.usage)
        }
        guard killEvery >= 0.5 && killEvery <= 86_400 else {
            throw fail("error: --kill-every takes 0.5 to 86400 seconds, not \(killEvery)", code: Exit.usage)
        }
        var run = LoadRun(profile: p, catalog: catalog, policy: policy)
        if let segment {
            let parts = segment.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] >= 1, parts[0] >= 0, parts[0] < parts[1] else {
                throw ValidationError("--segment takes i/N with 0 ≤ i < N, e.g. 0/4")
            }
            run.segment = (parts[0], parts[1])
        }
        let http = first as? HTTPValidator
        run.clock = http?.hasFakeClock == true ? .fake : http?.hasWallClock == true ? .wall : .header
        (run.runId, run.faults, run.faultsAsGiven, run.timeout, run.quiet) = (
            runId, faultProfile, faults, timeout, quiet
        )
        run.shouldStop = { Interrupt.requested }
        if let baseline, let base { run.baseline = (baseline, base) }
        run.say = { try? FileHandle.standardError.write(contentsOf: Data(($0 + "\n").utf8)) }
        if faultProfile.kill {
            guard let backend = (first as? ManagedHTTPValidator)?.backend else {
                throw ValidationError(
                    "load --faults kill needs an http: target with a \"start\" command (iapcheck kills and restarts that backend)"
                )
            }
            run.kill = (killEvery, { Load.kill(backend, profile: p.name) })
        }
        return run
    }

    /// The result folder, then the report: an interrupted run reports what it had (no gate); a segment is gated on
    /// the merge, not alone.
    func finish(_ r: LoadResults, of run: LoadRun, verdict: LoadRun.Verdict) throws {
        let p = run.profile
        let dir = (results as NSString).appendingPathComponent(run.folderName(at: Date()))
        do { try r.write(to: dir) } catch {
            for line in r.summaryLines { print(line) }
            throw fail(
                "error: could not write the results to \(dir): \(StrictJSON.reason(error)); the summary above is the record of this run",
                code: Exit.usage)
        }
        if let segment, !verdict.interrupted {
            print("segment \(segment): thresholds and baselines are gated on the merged result, not per segment")
        }
        // Said again at the end, beside the comparison: the baseline ran another workload of this profile.
        if verdict.baseline != nil, let baseline { _ = try Load.readBaseline(baseline, for: p) }
        for line in verdict.lines(tolerance: p.baselineTolerance) { print(line) }
        print("results: \(dir)/report.html")
        if verdict.interrupted {
            // `load merge` refuses an interrupted segment.
            print(
                "interrupted after \(String(format: "%.1f", verdict.elapsed)) s of \(p.durationSeconds) s; partial results above. Run again: iapcheck \(CommandLine.arguments.dropFirst().map(Shell.quote).joined(separator: " "))"
            )
        }
        if verdict.exitCode != 0 { throw ExitCode(verdict.exitCode) }
    }
}

extension Load {
    /// The fault profile kill: the backend killed and started again, each said on standard error.
    static func kill(_ backend: ManagedBackend, profile name: String) {
        try? FileHandle.standardError.write(
            contentsOf: Data("load \(name): killing the backend (fault profile kill)\n".utf8))
        do { try backend.killAndRestart() } catch {
            try? FileHandle.standardError.write(
                contentsOf: Data("load \(name): the backend did not come back: \(error)\n".utf8))
        }
    }
}
