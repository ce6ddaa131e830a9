import Foundation
import IAPModel
import IAPSimulator
import IAPSupport
import IAPValidatorAPI

/// One `iapcheck certify` run as a library call: the suite's settings, then the run, whose report is the verdict
/// (its lines, its word and its exit code). The command line parses options, makes the validators, writes the report
/// folder and prints.
public struct CertifyRun {
    /// How the command line names the validator, for the replay commands in the report.
    public var spec = "reference"
    public var catalog = Catalog.standard
    public var policy = Policy.default
    /// Multiplies every case count (1 is the certified size).
    public var scale: Double = 1
    /// Properties and forgery classes where the validator is known to differ from the reference.
    public var knownDivergences: Set<String> = []
    /// Accepted divergences by signature, each with its reason (docs/check.md#baselines), and the file they came
    /// from: a property that fails only with these is certified with them as declared exceptions.
    public var baseline: Baseline?
    public var baselineFile: String?
    /// Writing a baseline (`--write-baseline`): every property's cases run past up to 20 distinct failures, so the
    /// baseline holds every signature a run with it will meet, not only the first few per property.
    public var collectsEverySignature = false
    /// The fault profile as the user wrote it; nil for none. With `durableAck` the suite adds that property.
    public var faults: String?
    public var durableAck = false
    /// The parallel-delivery property: set for validators that take two calls at once (``CertificationSuite/parallelDeliveryEntry``).
    public var parallel = false
    /// Why parallel-delivery did not run, for the report's "not checked" (nil: it ran, or cannot for this validator).
    public var parallelNotAsked: String?
    public var catalogRecord: CertificationSuite.CatalogRecord?
    public var jobs = 1
    public var makeWorker: (() throws -> any Validator)?
    public var maxSize = HistoryGenerator.defaultMaxSize
    /// A line when each property and the forgery probe start.
    public var progress: ((String) -> Void)?
    /// Ctrl-C: the property under way stops after its case, and the suite ends there without a verdict.
    public var shouldStop: @Sendable () -> Bool = { false }
    /// Cases done in the whole suite, of all its cases, and what runs now (`certify (robust-input, property 5 of 6)`).
    public var caseProgress: ((_ done: Int, _ total: Int, _ label: String) -> Void)?

    public init(catalog: Catalog = .standard, policy: Policy = .default, scale: Double = 1) {
        (self.catalog, self.policy, self.scale) = (catalog, policy, scale)
    }

    /// The suite's properties, with durable-ack under the kill fault profile.
    public var entries: [CertificationSuite.Entry] {
        CertificationSuite.entries + (durableAck ? [CertificationSuite.durableAckEntry] : [])
            + (parallel ? [CertificationSuite.parallelDeliveryEntry] : [])
    }

    /// A declared name that is neither a certified property nor a forgery class, if there is one.
    public static func unknownDivergence(in names: Set<String>) -> String? {
        let known = Set(CertificationSuite.everyEntry.map(\.property.rawValue) + ForgeryClass.allCases.map(\.rawValue))
        return names.subtracting(known).sorted().first
    }

    /// Every property with its named seed and case count, then the forgery probe; a failing property does not stop
    /// the others.
    public func run(_ validator: any Validator) -> CertificationSuite.Report {
        let record = catalogRecord ?? .builtIn(catalog)
        let faultArgs = (faults.map { " --faults \(Shell.quote($0))" } ?? "") + record.arguments
        var results: [CertificationSuite.PropertyResult] = []
        var findings: [(CertificationSuite.Finding, String)] = []
        var accepted: [(FailureSignature, Int, String)] = []
        let counts = entries.map { max(1, Int(Double($0.cases) * scale)) }
        for (i, e) in entries.enumerated() {
            progress?("\(e.property.rawValue): \(counts[i]) cases, seed \(e.seed)")
            var checker = Checker(options: options(e, cases: counts[i], record: record), validator: validator)
            checker.makeWorker = makeWorker
            if let caseProgress {
                let (before, total) = (counts.prefix(i).reduce(0, +), counts.reduce(0, +))
                let label = "certify (\(e.property.rawValue), property \(i + 1) of \(entries.count))"
                checker.progress = { done, _ in caseProgress(before + done, total, label) }
            }
            let checked = checker.run()
            var (result, found) = CertificationSuite.propertyResult(
                e, cases: counts[i], checked,
                replay:
                    "iapcheck check --validator \(Shell.quote(spec)) --property \(e.property.rawValue) --seed \(e.seed)"
                    + (e.property == .parallelDelivery ? " --parallel" : ""),
                arguments: faultArgs)
            // Failing cases whose signature the baseline accepts: counted, not shrunk, and not failures.
            let met = checked.repeatsOfReported.filter { baseline?.entry(for: $0.key) != nil }
            if !met.isEmpty { result.accepted = met.values.reduce(0, +) }
            accepted += met.sorted { $0.key.description < $1.key.description }.map {
                ($0.key, $0.value, e.property.rawValue)
            }
            results.append(result)
            findings += found.map { ($0, e.property.rawValue) }
            if shouldStop() { break }
        }
        if shouldStop() {
            var report = report(validator, results, [], findings, record: record)
            (report.interrupted, report.passed) = (true, false)
            return report
        }
        let probed = ForgeryClass.allCases.filter {
            $0.applies(in: catalog.environment) && validator.profile.accepts(CertificationSuite.probeChannel($0))
        }
        progress?("forgery probe: \(probed.count) classes")
        let forgeries = CertificationSuite.probeForgeries(validator, catalog: catalog, policy: policy)
        var report = report(validator, results, forgeries, findings, record: record)
        if baseline != nil { acceptDivergences(accepted, into: &report) }
        return report
    }

    /// One property's check: its seed and cases, every distinct failure up to the suite's limit, shrunk within a
    /// number of attempts (not seconds: the report is the same on any machine).
    func options(
        _ e: CertificationSuite.Entry, cases: Int, record: CertificationSuite.CatalogRecord
    ) -> CheckOptions {
        var o = CheckOptions()
        (o.seed, o.cases, o.properties) = (e.seed, cases, [e.property])
        (o.catalog, o.drawsCatalogs, o.maxSize, o.policy) = (catalog, record.drawn == true, maxSize, policy)
        o.shrinkBudget = .init(maxAttempts: 300)
        o.shouldStop = shouldStop
        o.jobs = jobs
        // Past the first failure: a second bug shows in the same run, not after the first is fixed.
        o.keepGoing = collectsEverySignature ? 20 : CertificationSuite.distinctFailuresPerProperty
        o.shrinkLimit = o.keepGoing + 1
        // Accepted divergences do not take the place of a new failure: counted, never shrunk.
        o.reportedSignatures = baseline?.signatures ?? []
        return o
    }

    /// The report: the rows, the forgeries, what the validator's profile left unchecked, and the divergences
    /// against the declared ones.
    func report(
        _ validator: any Validator, _ results: [CertificationSuite.PropertyResult],
        _ forgeries: [CertificationSuite.ForgeryResult], _ findings: [(CertificationSuite.Finding, String)],
        record: CertificationSuite.CatalogRecord
    ) -> CertificationSuite.Report {
        var report = CertificationSuite.Report(
            validator: validator.name, hello: validator.selfReportedName ?? validator.name,
            date: CivilTime.iso8601(Millis(Date().timeIntervalSince1970 * 1000)),
            scale: scale, passed: results.allSatisfy(\.passed) && forgeries.allSatisfy(\.holds),
            properties: results, forgeries: forgeries)
        report.faults = faults
        report.catalog = record
        let profile = validator.profile
        if !profile.isUndeclared {
            report.profile = profile
            let skipped = CertificationSuite.notChecked(by: profile)
            if !skipped.isEmpty { report.notChecked = skipped }
        }
        if !profile.questionsInHindsight {
            report.notChecked =
                (report.notChecked ?? []) + [
                    .init(
                        kind: "questions", name: "in hindsight",
                        why:
                            "asked about its present only (its entitlements route carries no {at}): an old instant answered from the current state (mistake J59) is not looked for"
                    )
                ]
        }
        if let why = parallelNotAsked {
            report.notChecked =
                (report.notChecked ?? []) + [
                    .init(kind: "property", name: PropertyName.parallelDelivery.rawValue, why: why)
                ]
        }
        for f in forgeries {
            if let why = f.notProbed {
                report.notChecked =
                    (report.notChecked ?? []) + [.init(kind: "forgery", name: f.name, why: why)]
            }
        }
        report.divergences = CertificationSuite.divergences(
            findings, forgeries, declared: knownDivergences, baseline: baseline)
        report.declaredButNotObserved = knownDivergences.subtracting(
            report.divergences.flatMap { [$0.name] + ($0.seenUnder ?? []) }
        ).sorted()
        return report
    }

    /// The baseline's entries met, one declared divergence per signature with every property it showed under, its
    /// failing cases and its reason; the entries not met named. A run with an accepted divergence is never a plain
    /// certificate.
    func acceptDivergences(_ met: [(FailureSignature, Int, String)], into report: inout CertificationSuite.Report) {
        guard let baseline else { return }
        var order: [FailureSignature] = []
        var seen: [FailureSignature: (cases: Int, properties: [String])] = [:]
        for (signature, n, property) in met {
            if seen[signature] == nil { order.append(signature) }
            seen[signature, default: (0, [])].cases += n
            seen[signature]!.properties.append(property)
        }
        for signature in order {
            let (cases, properties) = seen[signature]!
            let entry = baseline.entry(for: signature)
            var d = CertificationSuite.Divergence(
                kind: .property, name: properties[0], declared: true,
                detail: "\(signature) (\(cases) failing case\(cases == 1 ? "" : "s"), accepted)")
            (d.seenUnder, d.signature, d.signatureFields) = (properties, signature.description, signature)
            (d.reason, d.replay) = (entry?.reason, entry?.replay)
            report.divergences.append(d)
        }
        let shown = Set(report.divergences.compactMap(\.signatureFields))
        report.baseline = baselineFile ?? "the baseline"
        report.baselineNotSeen = baseline.entries.filter { !shown.contains($0.signature) }.map(\.signature.description)
        if !order.isEmpty { report.passed = false }
    }
}
