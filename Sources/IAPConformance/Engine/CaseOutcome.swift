import Dispatch
import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// A disagreement between the validator and the oracle: a value, not an error (the validator answered).
public struct Discrepancy: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// The validator's entitlement answer differs from the oracle's.
        case answer
        /// The validator accepted what it must reject, or rejected a genuine artifact.
        case verdict
    }
    public var property: PropertyName
    public var kind: Kind
    /// Index of the failing step in the case.
    public var step: Int
    public var expected: String
    public var observed: String
    public var differences: [String]
    /// The full answers, when the step was a question.
    public var expectedAnswer: EntitlementAnswer?
    public var observedAnswer: EntitlementAnswer?
    /// For a wrong answer: what differs, as `subject/field` (`product pro.monthly/active`), so that shrinking keeps
    /// the same defect rather than any wrong answer.
    public var differenceKeys: [String]?
    /// Set under parallel-delivery when the deliveries were raced: the question asked after the race is none of
    /// the case's own steps (every person is asked at the end), and the reports show it and where the race began.
    public var race: Race?
    /// The ids this run gave a backend without a reset route (docs/http-target.md#backends-without-a-reset-route):
    /// what its logs and database hold for the case shown.
    public var backendIds: BackendIds?

    /// The namespace of one run's ids. Not part of what differed: two runs of one case that fail alike are the same
    /// discrepancy whatever ids each used, so it never makes two discrepancies unequal.
    public struct BackendIds: Codable, Hashable, Sendable {
        public var namespace: Int64
        public static func == (_: BackendIds, _: BackendIds) -> Bool { true }
        public func hash(into hasher: inout Hasher) {}
    }

    /// What the backend got from the App Store Server API of its own accord by the failure, step by step
    /// (docs/mock-app-store.md#a-backend-that-asks-on-its-own): the oracle learned it too, and the explanation
    /// counts it among the facts.
    public var servedByAPI: ServedByAPI?

    /// Not part of what differed either: two runs that fail alike may have asked the API at other steps.
    public struct ServedByAPI: Codable, Hashable, Sendable {
        public struct Entry: Codable, Hashable, Sendable {
            public var step: Int
            public var facts: APISnapshot
        }
        public var entries: [Entry] = []
        public static func == (_: ServedByAPI, _: ServedByAPI) -> Bool { true }
        public func hash(into hasher: inout Hasher) {}
    }

    /// Where the race of a parallel-delivery case began and the question asked after it.
    public struct Race: Codable, Hashable, Sendable {
        /// The index in the case's steps of the first delivery the two clients sent.
        public var firstStep: Int
        /// The question that found the difference.
        public var question: PlannedQuery

        package init(firstStep: Int, question: PlannedQuery) { (self.firstStep, self.question) = (firstStep, question) }
    }

    /// The question that found a wrong answer: the race's, or the case's step.
    public func question(in c: GeneratedCase) -> PlannedQuery? {
        if let race { return race.question }
        if c.steps.indices.contains(step), case .query(let q) = c.steps[step] { return q }
        return nil
    }

    /// Every field (the memberwise initializer, with the package's tests as well as its modules).
    package init(
        property: PropertyName, kind: Kind, step: Int, expected: String, observed: String, differences: [String],
        expectedAnswer: EntitlementAnswer? = nil, observedAnswer: EntitlementAnswer? = nil,
        differenceKeys: [String]? = nil
    ) {
        self.property = property
        self.kind = kind
        self.step = step
        self.expected = expected
        self.observed = observed
        self.differences = differences
        self.expectedAnswer = expectedAnswer
        self.observedAnswer = observedAnswer
        self.differenceKeys = differenceKeys
    }

    /// What the comparison found, said before the property the case ran under (which only says how the case was
    /// delivered): `entitlement disagreement (product pro.monthly/active)`, `refused a genuine artifact`,
    /// `accepted a forged artifact (alg-none)`, `accepted an artifact it must refuse (…)`.
    public var finding: String {
        switch kind {
        case .answer:
            return "entitlement disagreement" + (differenceKeys?.first.map { " (\($0))" } ?? "")
        case .verdict:
            if expected == "accepted" { return "refused a genuine artifact" }
            let forged = "rejected (forged: "
            if expected.hasPrefix(forged) {
                return "accepted a forged artifact (\(expected.dropFirst(forged.count).dropLast()))"
            }
            return "accepted an artifact it must refuse " + expected.dropFirst("rejected ".count)
        }
    }
}

public enum CaseOutcome: Sendable {
    case passed(questions: Int)
    case discrepancy(Discrepancy)
    case validatorFailed(ValidatorFailure, step: Int)

    public var isPass: Bool { if case .passed = self { true } else { false } }
}
