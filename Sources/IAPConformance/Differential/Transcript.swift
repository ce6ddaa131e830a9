import Foundation
import IAPEncoding
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// What one validator did in one case, step by step, with no oracle in sight: each delivery's verdict, each
/// question's answer, and where it failed (docs/diff.md). Two builds of a backend are compared on their transcripts:
/// every changed answer counts, including fields the oracle leaves open and fields a policy allows either way.
public struct Transcript: Hashable, Sendable {
    public enum Entry: Hashable, Sendable {
        /// A delivery: accepted or refused.
        case verdict(accepted: Bool)
        /// A question's answer.
        case answer(EntitlementAnswer)
        /// A delivery over a channel the validator does not take: not sent.
        case skipped
        /// The validator failed here (a crash, a hang, a bad answer); nothing after it was run.
        case failed(ValidatorFailure.Kind)
    }

    /// One entry per step of the case, up to its end or the validator's failure.
    public var entries: [Entry] = []

    public init(entries: [Entry] = []) { self.entries = entries }

    /// Runs case `c` on `v` from a reset to its last step (or the validator's failure), signed as `check` signs it.
    public static func of(_ c: GeneratedCase, on v: any Validator) -> Transcript {
        let c = v.isolation == .namespace ? IDNamespace.next().apply(c) : c
        var t = Transcript()
        if case .validatorFailed(let f, _)? = CaseRunner.reset(v, for: c) {
            t.entries.append(.failed(f.kind))
            return t
        }
        let profile = v.profile
        let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
        let kit = ForgeryKit(pki: TestPKI.harness)
        // A validator that applies deliveries after acknowledging them is asked until its answer settles on the
        // oracle's, as check asks it (docs/http-target.md#asynchronous-backends); the facts are followed for that.
        let settles = v.settleSeconds > 0
        var knowledge = Knowledge(config: c.config)
        for (i, step) in c.steps.enumerated() {
            do {
                switch step {
                case .deliver(let d):
                    guard profile.accepts(d.delivery.channel) else {
                        t.entries.append(.skipped)
                        continue
                    }
                    let signed = d.forgery.map { kit.render($0, d.delivery) } ?? renderer.render(d.delivery)
                    let verdict = try v.deliver(signed, now: d.now)
                    t.entries.append(.verdict(accepted: verdict.isAccepted))
                    if settles,
                        CaseRunner.expectedVerdict(
                            d, largestToken: signed.largestToken, knowledge, policy: c.config.policy
                        ).learns(verdict)
                    {
                        knowledge.learn(d.delivery)
                    }
                case .query(let q) where settles:
                    let judgement = Oracle.judge(knowledge, user: q.query.userId, at: q.query.at)
                    let (observed, _, _) = try CaseRunner.settledAnswer(
                        q.query, v, judgement, profile: profile,
                        deliveredAgain: CaseRunner.deliversAgain(c, through: i))
                    t.entries.append(.answer(observed.sorted))
                case .query(let q):
                    t.entries.append(.answer(try v.entitlements(q.query).sorted))
                }
            } catch {
                t.entries.append(.failed(error.kind))
                return t
            }
        }
        return t
    }

    /// The first step at which `self` (the new build) differs from `old`, as a discrepancy whose "expected" is the
    /// old build's: a verdict, an answer field (dates within `precision`, fields `profile` declares), or a failure
    /// one build has and the other has not. Steps past the end of either transcript are not compared (a recording
    /// of a case that failed ends there).
    public func firstChange(from old: Transcript, in c: GeneratedCase, profile: ValidatorProfile) -> Discrepancy? {
        for k in 0..<min(entries.count, old.entries.count) where entries[k] != old.entries[k] {
            switch (old.entries[k], entries[k]) {
            case (.answer(let before), .answer(let after)):
                let snapped = after.snapping(to: before, profile: profile)
                let diffs = snapped.answerDifferences(from: before).filter { profile.compares($0.key) }
                guard !diffs.isEmpty else { continue }
                return Discrepancy(
                    property: CaseRunner.attribute(c, step: k), kind: .answer, step: k,
                    expected: CaseRunner.summary(before, profile: profile),
                    observed: CaseRunner.summary(after, profile: profile), differences: diffs.map(\.text),
                    expectedAnswer: before, observedAnswer: after, differenceKeys: diffs.map(CaseRunner.key))
            case (let before, let after):
                return Discrepancy(
                    property: CaseRunner.attribute(c, step: k), kind: .verdict, step: k,
                    expected: Self.describe(before), observed: Self.describe(after), differences: [],
                    expectedAnswer: nil, observedAnswer: nil)
            }
        }
        return nil
    }

    /// An entry as a report line says it.
    static func describe(_ e: Entry) -> String {
        switch e {
        case .verdict(let accepted): accepted ? "accepted" : "refused"
        case .answer(let a): CaseRunner.summary(a)
        case .skipped: "not sent"
        case .failed(let kind): "validator failure (\(kind.rawValue))"
        }
    }

    /// A short digest of what case `c` is (its property, and each step's channel, event and instants): a recording
    /// is compared only with the same cases, and a generator that changed between versions is caught here.
    public static func fingerprint(of c: GeneratedCase) -> String {
        var text = c.property.rawValue
        for s in c.steps {
            switch s {
            case .deliver(let d):
                text +=
                    "|D \(d.delivery.channel.protocolName) \(FailureSignature.event(of: d.delivery)) \(d.now) \(d.arrival)"
                if let f = d.forgery { text += " \(f.rawValue)" }
            case .query(let q): text += "|Q \(q.query.userId) \(q.query.at)"
            }
        }
        let h = Array(text.utf8).withUnsafeBytes { ByteHash.of($0) }
        return String(h, radix: 16)
    }
}

/// Compact in a recording: `"A"` accepted, `"R"` refused, `"-"` not sent, `{"failed": kind}`, or the answer.
extension Transcript.Entry: Codable {
    enum CodingKeys: String, CodingKey { case failed }

    public init(from decoder: any Decoder) throws {
        if let s = try? decoder.singleValueContainer().decode(String.self) {
            switch s {
            case "A": self = .verdict(accepted: true)
            case "R": self = .verdict(accepted: false)
            case "-": self = .skipped
            default:
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "\"\(s)\" is not A, R or -"))
            }
            return
        }
        if let c = try? decoder.container(keyedBy: CodingKeys.self), c.contains(.failed) {
            self = .failed(try c.decode(ValidatorFailure.Kind.self, forKey: .failed))
            return
        }
        self = .answer(try EntitlementAnswer(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .verdict(let accepted):
            var c = encoder.singleValueContainer()
            try c.encode(accepted ? "A" : "R")
        case .skipped:
            var c = encoder.singleValueContainer()
            try c.encode("-")
        case .failed(let kind):
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .failed)
        case .answer(let a): try a.encode(to: encoder)
        }
    }
}
