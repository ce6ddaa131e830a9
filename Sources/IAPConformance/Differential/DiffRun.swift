import Dispatch
import Foundation
import IAPModel
import IAPSupport
import IAPValidatorAPI
import PropertyEngine

/// `iapcheck diff` (docs/diff.md): the same cases run on a new build and compared with an old build's answers — a
/// recording (`check --record DIR`) or the old build itself, run side by side — with no oracle: every changed
/// verdict or answer field counts, including those the oracle leaves open. Changes are grouped by signature; with the
/// old build at hand each is shrunk to a small history on which the two builds still answer differently.
public struct DiffRun {
    /// What the new build is compared with.
    public enum Old {
        case recording(Recording)
        case validator(any Validator)
    }

    /// One kind of change: its signature, how often it showed, and the smallest history that shows it.
    public struct Change: Sendable {
        public var signature: FailureSignature
        public var caseIndex: Int
        public var occurrences = 1
        public var change: Discrepancy
        public var history: GeneratedCase
        /// The case's size before shrinking, and the attempts spent (0: not shrunk, as against a recording).
        public var originalActions: Int
        public var shrinkAttempts = 0
        /// `--shrink-seconds` ended the shrink.
        public var shrinkTimedOut = false
    }

    public struct Result: Sendable {
        public var compared = 0
        public var changes: [Change] = []
        /// Changes the allow file accepts, by signature: how often each showed.
        public var allowed: [FailureSignature: Int] = [:]
        /// Cases of the run the recording does not hold (it was stopped, or recorded fewer cases).
        public var notRecorded = 0
        public var interrupted = false
        public var seconds = 0.0
        public var exitCode: Int32 { changes.isEmpty ? 0 : 1 }
    }

    /// The new build, with the run's options (seed, cases, policy, catalog): the cases are the ones it generates.
    public var checker: Checker
    public var old: Old
    /// Changes a team accepts (`--allow FILE`, a baseline file of diff signatures).
    public var allow: Baseline?

    public init(checker: Checker, old: Old) {
        self.checker = checker
        self.old = old
    }

    /// What both builds declare: a field or channel only one of them has is not compared.
    var profile: ValidatorProfile {
        let new = checker.validator.profile
        let other: ValidatorProfile =
            switch old {
            case .recording(let r): r.header.identity.profile ?? .undeclared
            case .validator(let v): v.profile
            }
        var p = ValidatorProfile(
            answers: new.answers.filter(other.answers.contains), channels: new.channels.filter(other.channels.contains))
        p.datePrecision = max(new.datePrecision, other.datePrecision)
        p.questionsInHindsight = new.questionsInHindsight && other.questionsInHindsight
        return p
    }

    /// The old build's transcript of case `i` (nil: not recorded), or a message when the recording's case is not this
    /// case (another generator).
    func oldTranscript(_ i: Int, _ c: GeneratedCase) throws(RecordingMismatch) -> Transcript? {
        switch old {
        case .validator(let v): return Transcript.of(c, on: v)
        case .recording(let r):
            guard let saved = r.cases[i] else { return nil }
            guard saved.fingerprint == Transcript.fingerprint(of: c) else {
                throw RecordingMismatch(caseIndex: i, version: r.header.iapcheck)
            }
            return saved.transcript
        }
    }

    /// The recording holds other cases than this build generates.
    public struct RecordingMismatch: Error, CustomStringConvertible {
        public var caseIndex: Int
        public var version: String
        public var description: String {
            "case \(caseIndex) of the recording is not the case this run generates: another iapcheck version (it was recorded by \(version), this is \(IAPCheckVersion.current)) or a validator declaring other channels makes other cases; record the old build again with this version and these channels"
        }
    }

    /// Runs every case of the run on the new build and compares it with the old.
    public func run(progress: ((Int, Int) -> Void)? = nil) throws(RecordingMismatch) -> Result {
        let start = DispatchTime.now().uptimeNanoseconds
        try? checker.validator.prepare()
        if case .validator(let v) = old { try? v.prepare() }
        let profile = profile
        var result = Result()
        var seen: [FailureSignature: Int] = [:]
        let indices: Range<Int> = checker.options.onlyCase.map { $0..<($0 + 1) } ?? checker.options.caseRange
        for (n, i) in indices.enumerated() {
            if checker.options.shouldStop() {
                result.interrupted = true
                break
            }
            let (c, src) = checker.generate(caseIndex: i)
            guard let before = try oldTranscript(i, c) else {
                result.notRecorded += 1
                continue
            }
            result.compared += 1
            let after = Transcript.of(c, on: checker.validator)
            if let d = after.firstChange(from: before, in: c, profile: profile) {
                let signature = Self.signature(d, in: c)
                if allow?.entry(for: signature) != nil {
                    result.allowed[signature, default: 0] += 1
                } else if let k = seen[signature] {
                    result.changes[k].occurrences += 1
                } else {
                    seen[signature] = result.changes.count
                    result.changes.append(shrink(caseIndex: i, c, src, d, profile: profile, signature: signature))
                }
            }
            progress?(n + 1, indices.count)
        }
        result.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return result
    }

    /// A change's signature: as a failure's, said as a change.
    static func signature(_ d: Discrepancy, in c: GeneratedCase) -> FailureSignature {
        var s = FailureSignature.of(.discrepancy(d), in: c)
        s.difference = d.kind == .answer ? "answer changed" : "verdict changed (\(d.expected) → \(d.observed))"
        return s
    }

    /// With the old build at hand, the change shrunk on its choice sequence: the smallest history on which the two
    /// builds still differ the same way (the same field of the same subject, or the same verdicts).
    func shrink(
        caseIndex i: Int, _ c: GeneratedCase, _ src: ChoiceSource, _ d: Discrepancy, profile: ValidatorProfile,
        signature: FailureSignature
    ) -> Change {
        var change = Change(
            signature: signature, caseIndex: i, change: d, history: c, originalActions: c.actionCount)
        guard case .validator(let oldBuild) = old else { return change }
        let generator = checker.generator(forCase: i)
        let new = checker.validator
        func differs(_ candidate: GeneratedCase) -> Discrepancy? {
            let found = Transcript.of(candidate, on: new).firstChange(
                from: Transcript.of(candidate, on: oldBuild), in: candidate, profile: profile)
            return found.flatMap { Checker.sameFailure(.discrepancy($0), .discrepancy(d)) ? $0 : nil }
        }
        var budget = checker.options.shrinkBudget
        budget.shouldStop = checker.options.shouldStop
        if !checker.options.outOfProcess { budget.maxAttempts = min(budget.maxAttempts, 400) }
        let result = Shrinker(budget: budget, zeroOnlyLabels: ["entropy"]).shrink(src.choices, spans: src.spans) {
            candidate in
            let s = ChoiceSource(replaying: candidate)
            let (generated, _) = generator.generate(c.property, s)
            return Shrinker.Outcome(
                failing: differs(generated) != nil, spans: s.spans, consumed: Array(s.choices.prefix(s.drawCount)))
        }
        (change.shrinkAttempts, change.shrinkTimedOut) = (result.attempts, result.timedOut)
        let (smallest, _) = generator.generate(c.property, ChoiceSource(replaying: result.choices))
        if let confirmed = differs(smallest) {
            (change.history, change.change) = (smallest, confirmed)
        }
        return change
    }
}
