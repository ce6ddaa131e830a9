import Foundation
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// Machine-readable outputs of `check` and `mutants`: the JSON summary and JUnit XML for CI.
public enum Reports {
    public struct CheckSummary: Codable, Sendable {
        public var iapcheckVersion = IAPCheckVersion.current
        public var validator: String
        public var seed: UInt64
        public var cases: Int
        public var passed: Int
        public var questions: Int
        public var seconds: Double
        /// What reading the catalog file assumed or left out (``Catalog/notes``); absent when nothing.
        public var catalogNotes: [String]?
        public var corpus: CorpusSummary
        public var discrepancies: [DiscrepancySummary]
        public var validatorFailures: [ValidatorFailureSummary]
        public var coverage: Coverage
        /// Every forgery class: how many forged artifacts were sent and whether all were rejected.
        public var forgeries: [ForgerySummary] = []
        /// With `--parallel`: the deliveries sent again alone after failing in the two-client race, and the first
        /// failure; absent when none was.
        public var raceResent: RaceTally?
        /// What run this is (seed, size, catalog, policy, shard): what `merge-reports` checks before joining shards.
        public var run: RunIdentity?
        /// The run stopped before its last case.
        public var interrupted: Bool?
        /// With a baseline: the accepted divergences this run met, and the baseline's entries it did not meet.
        public var accepted: [AcceptedFailure]?
        public var baselineNotSeen: [String]?
        /// What the validator declared it answers and which channels it takes, when it declared anything: only
        /// those fields were compared, only those channels used.
        public var profile: ValidatorProfile?

        public init(
            validator: String, seed: UInt64, cases: Int, passed: Int, questions: Int, seconds: Double,
            corpus: CorpusSummary, discrepancies: [DiscrepancySummary], validatorFailures: [ValidatorFailureSummary],
            coverage: Coverage
        ) {
            self.validator = validator
            self.seed = seed
            self.cases = cases
            self.passed = passed
            self.questions = questions
            self.seconds = seconds
            self.corpus = corpus
            self.discrepancies = discrepancies
            self.validatorFailures = validatorFailures
            self.coverage = coverage
        }
    }

    public struct ForgerySummary: Codable, Sendable {
        public var name: String
        public var sent: Int
        /// True when every forged artifact of the class was rejected (never true for a class that was never sent).
        public var rejected: Bool
        /// Per channel the class applies to (`app`, `notification`, `api`, `legacy`): forged artifacts sent and
        /// rejected. A channel the class cannot travel on is absent.
        public var channels: [String: ForgeryTally.Count]?

        public static func all(_ t: ForgeryTally) -> [ForgerySummary] {
            ForgeryClass.allCases.map { f in
                let sent = t.sent[f.rawValue] ?? 0
                var channels: [String: ForgeryTally.Count] = [:]
                for ch in f.channels { channels[ch.rawValue] = t.channels[f.rawValue]?[ch] ?? ForgeryTally.Count() }
                return ForgerySummary(
                    name: f.rawValue, sent: sent, rejected: sent > 0 && (t.rejected[f.rawValue] ?? 0) == sent,
                    channels: channels)
            }
        }
    }

    public struct CorpusSummary: Codable, Sendable {
        public var replayed: Int
        public var failed: [String]
        /// Saved cases not replayed, by reason (`another app`, `another profile`; docs/corpus.md).
        public var skipped: [String: Int]?

        public init(replayed: Int, failed: [String], skipped: [String: Int]? = nil) {
            self.replayed = replayed
            self.failed = failed
            self.skipped = skipped
        }

        /// `corpus 62 replayed, 2 failed, 12 skipped (another app)`.
        public var line: String {
            var out = "corpus \(replayed) replayed"
            if !failed.isEmpty { out += ", \(failed.count) failed" }
            if let skipped, !skipped.isEmpty {
                let total = skipped.values.reduce(0, +)
                let reasons =
                    skipped.count == 1
                    ? skipped.keys.first!
                    : skipped.keys.sorted().map { "\(skipped[$0]!) \($0)" }.joined(separator: ", ")
                out += ", \(total) skipped (\(reasons))"
            }
            return out
        }
    }

    public struct DiscrepancySummary: Codable, Sendable {
        public var property: String
        public var caseIndex: Int?
        public var corpusFile: String?
        public var shrunkEvents: Int
        public var expected: String
        public var observed: String
        public var differences: [String]
        public var timeline: String
        public var replay: String
        /// The FAIL line `check` printed above it (the property, the shrink figures) and, for a counterexample
        /// saved to the corpus, the command that reruns the unshrunk case: `merge-reports` prints both as `check`
        /// did. Absent from summaries written before they existed.
        public var headline: String?
        public var rerun: String?
        /// Set when replaying the shrunk case gave different outcomes (`check` printed FLAKY above the failure).
        public var flaky: FlakySummary?
        /// What the comparison found (``Discrepancy/finding``), first in every report; the property comes second.
        public var finding: String?
        /// With `--keep-going`: what makes another failure the same bug (``FailureSignature``), and how many failing
        /// cases of the run had it.
        public var signature: String?
        public var occurrences: Int?
        /// The facts the oracle's expectation rests on (``Explanation``): the fields to look at first.
        public var explanation: [String]?
        /// With `--explain`: per delivery of the shrunk case, the decoded fields that changed (``Explanation/deliveries(_:upTo:)``).
        public var deliveries: [String]?
        /// For a backend without a reset route: the ids it got in the run shown (``IDNamespace/idsLine(_:)``).
        public var backendIds: String?

        public init(
            property: String, caseIndex: Int? = nil, corpusFile: String? = nil, shrunkEvents: Int, expected: String,
            observed: String, differences: [String], timeline: String, replay: String
        ) {
            self.property = property
            self.caseIndex = caseIndex
            self.corpusFile = corpusFile
            self.shrunkEvents = shrunkEvents
            self.expected = expected
            self.observed = observed
            self.differences = differences
            self.timeline = timeline
            self.replay = replay
        }
    }

    public struct ValidatorFailureSummary: Codable, Sendable {
        public var kind: ValidatorFailure.Kind
        public var message: String
        public var caseIndex: Int?
        public var transcript: [String]
        /// As `check` printed it: the line naming the failure, the shrunk case's timeline and the command that
        /// reruns it (for `merge-reports`; absent from older summaries and for the corpus).
        public var headline: String?
        public var timeline: String?
        public var rerun: String?
        /// Set when replaying the shrunk case gave different outcomes.
        public var flaky: FlakySummary?
        /// What to change when the failure names its cause (a status the target file may describe, say).
        public var fix: String?

        public init(kind: ValidatorFailure.Kind, message: String, caseIndex: Int? = nil, transcript: [String]) {
            self.kind = kind
            self.message = message
            self.caseIndex = caseIndex
            self.transcript = transcript
        }

        public init(_ f: ValidatorFailure, caseIndex: Int?) {
            self.init(kind: f.kind, message: f.message, caseIndex: caseIndex, transcript: f.transcript)
            fix = f.fix
        }
    }

    /// A shrunk case whose replays disagreed: the property of the case, how many replays, and each one's outcome.
    public struct FlakySummary: Codable, Sendable, Equatable {
        public var property: String
        public var runs: Int
        public var outcomes: [String]

        public init(property: String, runs: Int, outcomes: [String]) {
            self.property = property
            self.runs = runs
            self.outcomes = outcomes
        }
    }

    public struct MutantSummary: Codable, Sendable {
        public var name: String
        public var description: String
        public var pitfall: String
        public var killed: Bool
        public var casesToKill: Int?
        public var shrunkEvents: Int?
        public var property: String?
        public var seconds: Double

        public init(
            name: String, description: String, pitfall: String, killed: Bool, casesToKill: Int? = nil,
            shrunkEvents: Int? = nil, property: String? = nil, seconds: Double
        ) {
            self.name = name
            self.description = description
            self.pitfall = pitfall
            self.killed = killed
            self.casesToKill = casesToKill
            self.shrunkEvents = shrunkEvents
            self.property = property
            self.seconds = seconds
        }
    }

    public struct MutantsSummary: Codable, Sendable {
        public var iapcheckVersion = IAPCheckVersion.current
        /// Set by `mutants --shard`: what run this slice of the mutant list belongs to (`merge-reports` checks it).
        public var run: MutantsRunIdentity?
        /// Mutants that did not run: skipped (the example backend is not built) or failed to start (their names).
        public var skipped: [String]?
        public var setupErrors: [String]?
        public var seed: UInt64
        public var casesPerMutant: Int
        public var total: Int
        public var killed: Int
        public var medianShrunkEvents: Double?
        public var mutants: [MutantSummary]

        public init(
            seed: UInt64, casesPerMutant: Int, total: Int, killed: Int, medianShrunkEvents: Double? = nil,
            mutants: [MutantSummary]
        ) {
            self.seed = seed
            self.casesPerMutant = casesPerMutant
            self.total = total
            self.killed = killed
            self.medianShrunkEvents = medianShrunkEvents
            self.mutants = mutants
        }
    }

    /// A discrepancy as reported: what differed, the (shrunk) case's timeline and the command that replays it.
    public static func summary(
        of d: Discrepancy, _ c: GeneratedCase, caseIndex: Int?, corpusFile: String?, replay: String
    ) -> DiscrepancySummary {
        var s = DiscrepancySummary(
            property: d.property.rawValue, caseIndex: caseIndex, corpusFile: corpusFile, shrunkEvents: c.actionCount,
            expected: d.expected, observed: d.observed, differences: d.differences,
            timeline: Timeline.render(c, failingStep: d.step, race: d.race), replay: replay)
        s.finding = d.finding
        let why = Explanation.lines(d, in: c)
        if !why.isEmpty { s.explanation = why }
        s.backendIds = d.backendIds.map { IDNamespace(value: $0.namespace).idsLine(c) }
        return s
    }

    /// JUnit XML: one test case per property (and one for the corpus replay), failed with the discrepancy's text.
    public static func junit(_ s: CheckSummary) -> String {
        let esc = Markup.escape
        var cases: [String] = []
        // JUnit counts a <failure> (a property that did not hold) apart from an <error> (the run or the validator
        // broke): a CI page shows them apart.
        var failures = 0, errors = 0
        let checked = s.coverage.properties.keys.sorted()
        for p in PropertyName.allCases.map(\.rawValue)
        where checked.contains(p) || s.discrepancies.contains(where: { $0.property == p }) {
            let found = s.discrepancies.filter { $0.property == p }
            // One test case per distinct failure (`--keep-going` finds several under one property).
            for (k, d) in found.enumerated() {
                failures += 1
                // The signature a baseline entry would accept, where the run named it (with --keep-going or a baseline).
                let body =
                    (d.signature.map { "signature: \($0)\n\n" } ?? "")
                    + (d.flaky.map { TextReport.flaky($0) + "\n\n" } ?? "")
                    + "expected: \(d.expected)\nobserved: \(d.observed)\n\(d.differences.joined(separator: "\n"))\n\((d.explanation ?? []).joined(separator: "\n"))\n\n\(d.timeline)\n\nreplay: \(d.replay)"
                let name = found.count == 1 ? p : "\(p) #\(k + 1)" + (d.signature.map { " (\($0))" } ?? "")
                cases.append(
                    "    <testcase classname=\"iapcheck.\(esc(s.validator))\" name=\"\(esc(name))\"><failure message=\"\(esc((d.finding.map { $0 + ": " } ?? "") + (d.differences.first ?? d.observed)))\">\(esc(body))</failure></testcase>"
                )
            }
            if found.isEmpty {
                cases.append("    <testcase classname=\"iapcheck.\(esc(s.validator))\" name=\"\(p)\"/>")
            }
        }
        // Accepted divergences pass, but a CI page shows what the baseline accepted and what it no longer met.
        if s.accepted != nil || s.baselineNotSeen != nil {
            cases.append(
                "    <testcase classname=\"iapcheck.\(esc(s.validator))\" name=\"accepted-divergences\"><system-out>\(esc(CheckRun.baselineLines(s, file: "the baseline")))</system-out></testcase>"
            )
        }
        if s.interrupted == true {
            errors += 1
            cases.append(
                "    <testcase classname=\"iapcheck.\(esc(s.validator))\" name=\"completeness\"><error message=\"the run did not check every case (interrupted, or shards missing)\"/></testcase>"
            )
        }
        for f in s.validatorFailures {
            errors += 1
            cases.append(
                "    <testcase classname=\"iapcheck.\(esc(s.validator))\" name=\"validator-health\"><error message=\"\(esc(f.kind.rawValue + ": " + f.message))\">\(esc(((f.flaky.map { [TextReport.flaky($0)] } ?? []) + f.transcript).joined(separator: "\n")))</error></testcase>"
            )
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <testsuites>
              <testsuite name="iapcheck \(esc(s.validator))" tests="\(cases.count)" failures="\(failures)" errors="\(errors)" time="\(String(format: "%.3f", s.seconds))">
            \(cases.joined(separator: "\n"))
              </testsuite>
            </testsuites>

            """
    }
}
