import Foundation
import IAPModel
import IAPSigning
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// The fixed, versioned certification suite: named seeds and case counts per property, plus a probe of every
/// forgery class. Changing any number here is a new suite version.
public enum CertificationSuite {
    public static let version = "iapcheck-certify/3"

    public struct Entry: Codable, Sendable {
        public var property: PropertyName
        public var seed: UInt64
        public var cases: Int
    }

    public static let entries: [Entry] = [
        Entry(property: .entitlementAgreement, seed: 101, cases: 300),
        Entry(property: .idempotentDelivery, seed: 202, cases: 200),
        Entry(property: .orderInsensitivity, seed: 303, cases: 200),
        Entry(property: .forgeryRejected, seed: 404, cases: 200),
        Entry(property: .robustInput, seed: 505, cases: 150),
        Entry(property: .clockSkew, seed: 606, cases: 150),
    ]

    /// Run only under the `kill` fault profile (it needs a validator that can be killed and restarted).
    public static let durableAckEntry = Entry(property: .durableAck, seed: 707, cases: 100)

    /// Run for a validator that takes two calls at once: in this process always (as `check` does), for an `http:`
    /// backend with `--parallel` (its races are real requests, so it is asked for); otherwise listed as not checked.
    public static let parallelDeliveryEntry = Entry(property: .parallelDelivery, seed: 808, cases: 100)

    /// Every property the suite can run, with those it runs only under a fault profile or for concurrent validators.
    public static var everyEntry: [Entry] { entries + [durableAckEntry, parallelDeliveryEntry] }

    public struct PropertyResult: Codable, Sendable {
        public var property: String
        public var seed: UInt64
        public var cases: Int
        public var passed: Bool
        public var casesRun: Int
        /// Cases of `casesRun` that failed (any signature); nil in reports written before it was recorded.
        public var casesFailed: Int?
        public var counterexample: Reports.DiscrepancySummary?
        public var validatorFailure: Reports.ValidatorFailureSummary?
        public var coverage: Coverage
        /// The forgery class of the forged artifact the counterexample turns on, if it turns on one.
        public var forgeryClass: String?
        /// Distinct failures after the first (another signature), each shrunk: a second bug found in the same run.
        public var moreFailures: [FailureSummary]?
        /// Failing cases whose signature the baseline accepts (`--baseline`): not failures of the property.
        public var accepted: Int?
    }

    /// A distinct failure of a property beyond its first, as the report lists it.
    public struct FailureSummary: Codable, Sendable {
        public var signature: String
        public var counterexample: Reports.DiscrepancySummary?
        public var validatorFailure: Reports.ValidatorFailureSummary?
        public var forgeryClass: String?
    }

    /// How many distinct failures each property looks for before it stops.
    public static let distinctFailuresPerProperty = 3

    public struct ForgeryResult: Codable, Sendable {
        public var name: String
        /// The validator refused the forged artifact (and the answers did not change).
        public var rejected: Bool
        /// True when it accepted the artifact where that is allowed and the answers did not change: an oversized
        /// token of genuine content without the policy's `tokenSizeLimit`, a replayed notification acknowledged, a
        /// route that verifies later. Not a rejection, and not a divergence.
        public var allowed: Bool?
        public var reason: String?
        /// Set when the validator failed as a program (crash, timeout, malformed reply) during this probe.
        public var validatorFailure: String?
        /// Set when the class's genuine twin was refused (its reason): the forgery's refusal is then not credited.
        public var genuineRefused: String?
        /// Set when the class could not be probed under the run's policy (why): its genuine twin is over the app's
        /// declared token size limit, so a correct validator refuses the twin too. Neither credited nor a divergence.
        public var notProbed: String?

        /// Counts for the verdict: rejected, accepted where allowed, or not probable under the policy.
        public var holds: Bool { rejected || allowed == true || notProbed != nil }
    }

    /// The catalog the suite ran on, so a report says what it certifies and can be reproduced.
    public struct CatalogRecord: Codable, Sendable, Hashable {
        /// The file as given on the command line; nil for the built-in catalog.
        public var file: String?
        /// SHA-256 of the file's bytes, hex; nil for the built-in catalog.
        public var sha256: String?
        public var bundleId: String
        public var environment: String
        public var products: Int
        /// The options that select this catalog again (`--catalog F --bundle-id B`, or nothing).
        public var arguments: String
        /// Every case drew its own catalog, the built-in one being one of the draws (no `--catalog`); `products`
        /// then counts the built-in catalog's.
        public var drawn: Bool?
        /// What reading the file assumed or left out (a non-renewing duration, an installment plan).
        public var notes: [String]?

        public init(file: String?, sha256: String?, catalog: Catalog, arguments: String, drawn: Bool = false) {
            self.file = file
            self.sha256 = sha256
            self.bundleId = catalog.bundleId
            self.environment = catalog.environment.rawValue
            self.products = catalog.products.count
            self.arguments = arguments
            self.drawn = drawn ? true : nil
            self.notes = catalog.notes.isEmpty ? nil : catalog.notes
        }

        public static func builtIn(_ catalog: Catalog) -> CatalogRecord {
            CatalogRecord(file: nil, sha256: nil, catalog: catalog, arguments: "")
        }

        /// How a report names the catalog: the file, the built-in one, or drawn per case.
        public var description: String {
            if let file { return "\(file) (sha256 \(sha256 ?? "?"))" }
            return drawn == true ? "drawn per case (the built-in catalog among the draws)" : "built-in"
        }
    }

    public struct Report: Codable, Sendable {
        public var suite = CertificationSuite.version
        public var iapcheckVersion = IAPCheckVersion.current
        public var validator: String
        public var hello: String?
        public var date: String
        public var scale: Double
        /// The fault profile the suite ran under (`--faults`), if any.
        public var faults: String?
        public var catalog: CatalogRecord?
        /// Every property held and every forgery class was rejected (or accepted where that is allowed).
        public var passed: Bool
        public var properties: [PropertyResult]
        public var forgeries: [ForgeryResult]
        /// Where the validator differs from the reference: failed properties and unrejected forgery classes, each
        /// marked declared when the run was told to expect it (`--known-divergences`, e.g. docs/verifiers.md#what-is-left-to-the-application).
        public var divergences: [Divergence] = []
        /// Declared divergences that did not occur (the declaration can go).
        public var declaredButNotObserved: [String] = []
        /// The baseline the run accepted divergences from (`--baseline`, or the target file's), and its entries the
        /// run did not meet (fixed, or not reached: the entry may go).
        public var baseline: String?
        public var baselineNotSeen: [String]?
        /// What the validator declared it answers and which channels it takes, when it declared anything.
        public var profile: ValidatorProfile?
        /// What that profile leaves unchecked: fields not compared, channels not used, and the properties and
        /// forgery classes they leave out (absent when nothing is).
        public var notChecked: [NotChecked]?
        /// Stopped by Ctrl-C: the properties run so far (the last one perhaps in part), no forgery probe; no verdict.
        public var interrupted: Bool?
        /// No validator failure and every divergence declared.
        public var passedWithDeclaredDivergences: Bool {
            divergences.allSatisfy(\.declared) && properties.allSatisfy { $0.validatorFailure == nil }
                && interrupted != true
        }
    }

    /// One thing a declared profile leaves unchecked, and why.
    public struct NotChecked: Codable, Sendable, Hashable {
        /// `field`, `channel`, `property` or `forgery`.
        public var kind: String
        public var name: String
        public var why: String
    }

    /// What a profile leaves unchecked (empty for a validator that declares everything).
    public static func notChecked(by p: ValidatorProfile) -> [NotChecked] {
        var out: [NotChecked] = []
        for f in p.unansweredFields {
            out.append(NotChecked(kind: "field", name: f.rawValue, why: "not declared: never compared"))
        }
        for c in p.unusedChannels {
            let why: String =
                switch c {
                case .app:
                    "no app submissions: a chain reaches a user only through appAccountToken, or as the app's legacy receipt"
                case .notification:
                    "no notifications: what they say arrives only through the API (or not at all)"
                case .api: "no API answers: a lost notification is never reconciled, so none is lost"
                case .legacy: "no verifyReceipt responses"
                }
            out.append(NotChecked(kind: "channel", name: c.protocolName, why: why))
        }
        if !p.accepts(.notification) {
            out.append(
                NotChecked(
                    kind: "property", name: PropertyName.robustInput.rawValue,
                    why: "unknown types, subtypes and values arrive in notifications, which it does not take"))
        }
        if !p.accepts(.api) {
            out.append(
                NotChecked(
                    kind: "property", name: PropertyName.orderInsensitivity.rawValue + " (in part)",
                    why: "retried notifications only: reconciling lost ones needs the API"))
        }
        for f in ForgeryClass.allCases where !f.channels.contains(where: p.accepts) || !p.accepts(probeChannel(f)) {
            let on = f.channels.filter(p.accepts)
            out.append(
                NotChecked(
                    kind: "forgery", name: f.rawValue,
                    why: on.isEmpty
                        ? "travels on \(f.channels.map(\.protocolName).joined(separator: ", ")), none of which it takes"
                        : "not probed on its own (the probe sends it as \(probeChannel(f).protocolName)); cases still send it on \(on.map(\.protocolName).joined(separator: ", "))"
                ))
        }
        return out
    }

    /// The channel the forgery probe sends a class on.
    static func probeChannel(_ f: ForgeryClass) -> DeliveryChannel {
        switch f {
        case .wrongAppAppleId, .replayedNotificationUUID, .forgedNestedTransaction: .notification
        case _ where f.isLegacyOnly: .legacy
        default: .app
        }
    }

    public struct Divergence: Codable, Sendable, Hashable {
        public var kind: Kind
        public var name: String
        public var declared: Bool
        public var detail: String
        /// Every property the failure was seen under (the same signature), `name` first; nil for a forgery class.
        public var seenUnder: [String]?
        /// What makes a failure this one (``FailureSignature``); nil for a forgery class.
        public var signature: String?
        /// The signature's fields, as a baseline entry names them; nil for a forgery class.
        public var signatureFields: FailureSignature?
        /// Why it is accepted: the reason of the baseline entry that accepts it (`--baseline`); nil otherwise.
        public var reason: String?
        /// The command that replays the first case that showed it.
        public var replay: String?

        /// What diverged: a property that failed, or a forgery class that was accepted.
        public enum Kind: String, Codable, Sendable, Hashable, CustomStringConvertible {
            case property, forgery
            public var description: String { rawValue }
        }
    }

    /// One property's row of the table, and its distinct failures, each with the command that replays its case.
    static func propertyResult(
        _ e: Entry, cases: Int, _ r: CheckReport, replay: String, arguments: String
    ) -> (PropertyResult, [Finding]) {
        let found = r.failures.map { f in finding(f, replay: "\(replay) --case \(f.caseIndex)\(arguments)") }
        var result = PropertyResult(
            property: e.property.rawValue, seed: e.seed, cases: cases, passed: r.failure == nil,
            casesRun: r.cases, counterexample: found.first?.counterexample,
            validatorFailure: found.first?.validatorFailure, coverage: r.coverage,
            forgeryClass: found.first?.forgeryClass)
        result.casesFailed = r.cases - r.passed
        if found.count > 1 { result.moreFailures = found.dropFirst().map(\.summary) }
        return (result, found)
    }

    /// One row per distinct failure (its signature), listing every property it was seen under, then the forgery
    /// classes that did not hold; each says whether it was declared.
    static func divergences(
        _ findings: [(Finding, String)], _ forgeries: [ForgeryResult], declared known: Set<String>,
        baseline: Baseline? = nil
    ) -> [Divergence] {
        var out: [Divergence] = []
        var order: [String] = []
        var groups: [String: [(Finding, String)]] = [:]
        for (f, property) in findings {
            if groups[f.signature] == nil { order.append(f.signature) }
            groups[f.signature, default: []].append((f, property))
        }
        for signature in order {
            let seen = groups[signature]!
            let (first, property) = seen[0]
            let properties = seen.map(\.1)
            // A failure on a forged artifact of a declared class is that declared divergence, seen again; one whose
            // signature a baseline entry names is accepted for that entry's reason.
            let accepted = first.fields.flatMap { baseline?.entry(for: $0) }
            let declared =
                properties.contains(where: known.contains) || first.forgeryClass.map(known.contains) == true
                || accepted != nil
            var d = Divergence(
                kind: .property, name: property, declared: declared,
                detail: first.forgeryClass.map { "\(first.detail) (forged artifact: \($0))" } ?? first.detail)
            d.seenUnder = properties
            d.signature = signature
            (d.signatureFields, d.reason, d.replay) = (first.fields, accepted?.reason, first.replay)
            out.append(d)
        }
        for f in forgeries where !f.holds {
            out.append(
                Divergence(kind: .forgery, name: f.name, declared: known.contains(f.name), detail: f.reason ?? ""))
        }
        return out
    }
}

extension CertificationSuite.PropertyResult {
    /// The table's count: "150 cases", or "3 of 150 cases failed" (a run cut short after its distinct failures:
    /// "3 of 40 cases failed (40 of 150 run)").
    public var casesPhrase: String {
        guard let failed = casesFailed, failed > 0 || !passed else { return "\(casesRun) cases" }
        let run = casesRun < cases ? " (\(casesRun) of \(cases) run)" : ""
        return "\(failed) of \(casesRun) cases failed\(run)"
    }
}
