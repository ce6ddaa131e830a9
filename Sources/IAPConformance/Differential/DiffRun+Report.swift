import Foundation
import IAPModel
import IAPSimulator
import IAPValidatorAPI

extension DiffRun.Result {
    /// A difference in the diff's words: the comparison's are the oracle's ("expected", "got", "validator says"),
    /// and here the old build is the expectation.
    public static func inBuildsWords(_ difference: String) -> String {
        [
            ("not expected at all, validator says ", "not in the old build's answer, this build says "),
            (", validator does not list it", ", this build does not list it"),
            (" expected ", " old build "), (", got ", ", this build "),
        ].reduce(difference) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }

    /// The report: one block per change (what the old build answered, what the new one does, the history and how to
    /// replay it), the accepted changes, and a last line with the verdict.
    public func lines(against old: String, seed: UInt64, replay: (Int) -> String) -> [String] {
        var out: [String] = []
        for c in changes {
            let count = c.occurrences == 1 ? "1 case" : "\(c.occurrences) cases, the first"
            out.append("CHANGED \(c.signature) (\(count): case \(c.caseIndex), seed \(seed))")
            out.append("  old build: \(c.change.expected)")
            out.append("  this build: \(c.change.observed)")
            for d in c.change.differences { out.append("    \(Self.inBuildsWords(d))") }
            let timed = c.shrinkTimedOut ? ", stopped by --shrink-seconds" : ""
            let size =
                c.shrinkAttempts > 0
                ? "shrunk from \(c.originalActions) to \(c.history.actionCount) actions in \(c.shrinkAttempts) attempts\(timed)"
                : c.shrinkTimedOut
                    ? "not shrunk: \(c.history.actionCount) actions; --shrink-seconds ended before the first attempt"
                    : "not shrunk: \(c.history.actionCount) actions; with the old build at hand, --against-validator shrinks it"
            out.append("  history (\(size)), the change at step \(c.change.step):")
            out.append(Timeline.render(c.history, failingStep: c.change.step, indent: "    "))
            out.append("  replay: \(replay(c.caseIndex))")
        }
        for (s, n) in allowed.sorted(by: { $0.key.description < $1.key.description }) {
            out.append("ALLOWED \(s) (\(n) \(n == 1 ? "case" : "cases"))")
        }
        if notRecorded > 0 {
            out.append("note: \(notRecorded) cases of this run are not in the recording, and were not compared")
        }
        let over =
            "over \(compared) \(compared == 1 ? "case" : "cases") against \(old) (\(TextReport.rate(Double(compared), seconds: seconds)))"
        if changes.isEmpty {
            out.append(
                "NO CHANGE \(over)" + (allowed.isEmpty ? "" : ", \(allowed.count) allowed")
                    + (interrupted ? " (INTERRUPTED: not every case was compared)" : ""))
        } else {
            let total = changes.map(\.occurrences).reduce(0, +)
            out.append(
                "CHANGED: \(changes.count) \(changes.count == 1 ? "kind" : "kinds") of change in \(total) \(total == 1 ? "case" : "cases") \(over)"
            )
        }
        return out
    }
}

extension DiffRun {
    /// What makes a run's cases these cases, as a recording states it and `diff --against` requires: seed, cases,
    /// properties, policy, catalog, size and the forgery classes left out. The profile is not part of it (a build
    /// may answer a field more); each recorded case's fingerprint tells whether the cases are the same.
    public static func identity(of checker: Checker) -> RunIdentity {
        let o = checker.options
        var r = RunIdentity(
            seed: o.seed, totalCases: o.cases, properties: checker.properties.map(\.rawValue), policy: o.policy,
            catalog: o.catalog, drawsCatalogs: o.drawsCatalogs, signed: true, shard: Shard(index: 0, count: 1))
        if o.maxSize != HistoryGenerator.defaultMaxSize { r.maxSize = o.maxSize }
        if !o.knownDivergences.isEmpty { r.knownDivergences = o.knownDivergences.map(\.rawValue).sorted() }
        return r
    }

    /// `check --record DIR`: every case of the run transcribed on `checker`'s validator and written as it finishes
    /// (a second pass over the cases, with no oracle: the answers a later `diff --against DIR` compares with).
    public static func record(
        _ checker: Checker, header: Recording.Header, into directory: String, progress: ((Int, Int) -> Void)? = nil
    ) throws -> Int {
        let writer = try Recording.Writer(directory: directory, header: header)
        defer { writer.close() }
        try? checker.validator.prepare()
        let indices: Range<Int> = checker.options.onlyCase.map { $0..<($0 + 1) } ?? checker.options.caseRange
        var written = 0
        for (n, i) in indices.enumerated() {
            if checker.options.shouldStop() { break }
            let (c, _) = checker.generate(caseIndex: i)
            try writer.append(
                Recording.Case(
                    index: i, fingerprint: Transcript.fingerprint(of: c),
                    transcript: Transcript.of(c, on: checker.validator)))
            written += 1
            progress?(n + 1, indices.count)
        }
        return written
    }
}
