import IAPModel
import IAPSimulator
import IAPValidatorAPI

/// What makes two failures the same bug (docs/check.md#distinct-failures): their shrunk cases differ in the same
/// way — the same kind of difference, about the same field of the same kind of product, shown after the same kind
/// of delivery. Ids, instants and values are left out: two refunds of two products read from the wrong field are
/// one bug.
public struct FailureSignature: Codable, Hashable, Sendable, CustomStringConvertible {
    /// What the comparison found, without ids: `entitlement disagreement`, `refused a genuine artifact`,
    /// `accepted a forged artifact (alg-none)`, `validator failure (crashed)`.
    public var difference: String
    /// The answer field that differs first (`active`, `expiresDate`, `balance`…); nil for a verdict or a failure.
    public var field: String?
    /// The kind of what differs or was delivered: a catalog product kind (`auto-renewable`), `subscription group`,
    /// `entitlement`.
    public var productKind: String?
    /// The channel of the delivery the failure follows (at or before the failing step).
    public var channel: String?
    /// That delivery's event: a notification's type/subtype, an app submission's transaction reason, `API
    /// snapshot`, `verifyReceipt`.
    public var event: String?
    /// True for a failure in a case that passed when the run's baseline was written (docs/check.md#baselines): the
    /// same kind of failure as an accepted one, in a case where it is new. No baseline entry has it, so none
    /// accepts it.
    public var newSinceBaseline: Bool?

    public var description: String {
        var parts = [difference]
        if let field { parts.append("field " + field) }
        if let productKind { parts.append(productKind) }
        if let event {
            parts.append("after " + event + (channel.map { " (\($0))" } ?? ""))
        } else if let channel {
            parts.append("channel " + channel)
        }
        if newSinceBaseline == true { parts.append("in a case that passed when the baseline was written") }
        return parts.joined(separator: ", ")
    }

    /// This signature, not said of a case that passed when the baseline was written: what a baseline entry has.
    public var withoutBaselineMark: FailureSignature {
        var s = self
        s.newSinceBaseline = nil
        return s
    }

    /// This signature, said of a case that passed when the baseline was written.
    var newSinceBaselineRun: FailureSignature {
        var s = self
        s.newSinceBaseline = true
        return s
    }

    /// The signature of `outcome`, a failure of case `c`.
    public static func of(_ outcome: CaseOutcome, in c: GeneratedCase) -> FailureSignature {
        signed(outcome, in: c).acceptanceByClassAndChannel
    }

    /// Whether the validator accepted an artifact it must refuse (a forgery, another app's, the wrong environment):
    /// the check it lacks is about the artifact's signature or envelope, the same for every product and event.
    public var acceptsWhatMustBeRefused: Bool {
        difference.hasPrefix("accepted a forged artifact")
            || difference.hasPrefix("accepted an artifact it must refuse")
    }

    /// An acceptance of what must be refused is one bug per class and channel (docs/check.md#distinct-failures): one
    /// missing chain check does not make a failure per product kind and event the token carried, but a route that
    /// verifies what another does not (API answers, a notification's nested JWS) is a bug of its own. Signatures
    /// written before (baselines, reports) are read this way too, so their entries still match.
    var acceptanceByClassAndChannel: FailureSignature {
        guard acceptsWhatMustBeRefused else { return self }
        var s = self
        (s.productKind, s.event) = (nil, nil)
        return s
    }

    private enum CodingKeys: String, CodingKey {
        case difference, field, productKind, channel, event, newSinceBaseline
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        difference = try c.decode(String.self, forKey: .difference)
        field = try c.decodeIfPresent(String.self, forKey: .field)
        productKind = try c.decodeIfPresent(String.self, forKey: .productKind)
        channel = try c.decodeIfPresent(String.self, forKey: .channel)
        event = try c.decodeIfPresent(String.self, forKey: .event)
        newSinceBaseline = try c.decodeIfPresent(Bool.self, forKey: .newSinceBaseline)
        self = acceptanceByClassAndChannel
    }

    private static func signed(_ outcome: CaseOutcome, in c: GeneratedCase) -> FailureSignature {
        let step: Int
        var s: FailureSignature
        switch outcome {
        case .passed:
            return FailureSignature(difference: "passed")
        case .discrepancy(let d):
            step = d.step
            s = FailureSignature(difference: d.kind == .answer ? "entitlement disagreement" : d.finding)
            if d.kind == .answer, let key = d.differenceKeys?.first, let slash = key.lastIndex(of: "/") {
                s.field = String(key[key.index(after: slash)...])
                s.productKind = kind(ofSubject: String(key[..<slash]), catalog: c.config.catalog)
            }
        case .validatorFailed(let f, let at):
            step = at
            s = FailureSignature(difference: "validator failure (\(f.kind.rawValue))")
        }
        if let d = trigger(of: c, atOrBefore: step) {
            s.channel = d.delivery.channel.protocolName
            s.event = event(of: d.delivery)
            if s.productKind == nil, s.field == nil {
                s.productKind = productId(of: d.delivery).flatMap { c.config.catalog.product($0)?.kind.rawValue }
            }
        }
        return s
    }

    public init(difference: String) { self.difference = difference }

    /// `product pro.monthly` → `auto-renewable`; groups, consumables and entitlements by what they are.
    static func kind(ofSubject subject: String, catalog: Catalog) -> String? {
        let parts = subject.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return nil }
        switch parts[0] {
        case "product", "consumable": return catalog.product(parts[1])?.kind.rawValue ?? parts[0]
        case "group": return "subscription group"
        default: return parts[0]
        }
    }

    /// The delivery at `step`, or the last one before it (a question's answer follows what was delivered).
    static func trigger(of c: GeneratedCase, atOrBefore step: Int) -> PlannedDelivery? {
        guard !c.steps.isEmpty else { return nil }
        for s in c.steps.prefix(min(max(step, 0), c.steps.count - 1) + 1).reversed() {
            if case .deliver(let d) = s { return d }
        }
        return nil
    }

    static func event(of d: Delivery) -> String {
        switch d {
        case .appTransaction(let a):
            "app transaction " + (a.transaction.transactionReason?.rawValue ?? "without reason")
        case .notification(let n): n.notificationType.rawValue + (n.subtype.map { "/" + $0.rawValue } ?? "")
        case .apiSnapshot: "API snapshot"
        case .legacyReceipt: "verifyReceipt"
        }
    }

    static func productId(of d: Delivery) -> String? {
        switch d {
        case .appTransaction(let a): a.transaction.productId
        case .notification(let n): n.data?.transactionInfo?.productId
        case .apiSnapshot(let s): s.transactions.first?.productId
        case .legacyReceipt: nil
        }
    }
}

/// What a run keeps of its failures: each failure with a new signature shrunk, and repeats of a known one counted
/// into it (`--keep-going`). Without `--keep-going` the first failure ends the run.
struct FailureCollector {
    let options: CheckOptions
    private(set) var failures: [FailureReport] = []
    /// Unshrunk signatures met so far, each with the failure its shrinking led to: a repeat is not shrunk again.
    private var seen: [FailureSignature: Int] = [:]
    private var shrinks = 0
    /// Failing cases not shrunk because ``CheckOptions/maxShrinks`` was reached.
    private(set) var unshrunk = 0

    init(options: CheckOptions) { self.options = options }

    var shrinkStopped: Bool { failures.contains { $0.shrinkStopped } }
    /// The run has what it came for: enough distinct failures, Ctrl-C stopped a shrink, or the validator cannot
    /// go on (a hang, a backend gone, a wrong target file: every further case would wait or fail the same way).
    var isDone: Bool {
        (failures.count >= options.keepGoing && !options.runsToTheEnd) || shrinkStopped
            || failures.contains { $0.validatorFailure.map(FailureCollector.endsTheRun) ?? false }
    }

    /// A failure after which no further case is run, `--keep-going` or not.
    static func endsTheRun(_ f: ValidatorFailure) -> Bool {
        f.kind == .timedOut || f.kind == .unavailable || f.kind == .misconfigured
    }

    /// Failing cases counted into a failure reported before the run (``CheckOptions/reportedSignatures``).
    private(set) var repeatsOfReported: [FailureSignature: Int] = [:]
    /// Unshrunk signatures whose shrinking led to a failure reported before the run.
    private var seenReported: [FailureSignature: FailureSignature] = [:]

    /// A failing case: counted into the failure its signature (unshrunk, then shrunk) matches — one of this run's, or
    /// one reported before it — or shrunk and kept. A bug is shrunk once per run. A case that passed when the
    /// baseline was written goes its own way (``addNewSinceBaseline(_:_:_:shrink:rerun:)``).
    mutating func add(
        _ i: Int, _ c: GeneratedCase, _ outcome: CaseOutcome, shrink: () -> FailureReport,
        rerun: () -> CaseOutcome
    ) {
        if let cases = options.baselineCases, cases.passed(i) {
            addNewSinceBaseline(i, c, outcome, shrink: shrink, rerun: rerun)
            return
        }
        let raw = FailureSignature.of(outcome, in: c)
        if let k = seen[raw] {
            failures[k].occurrences += 1
            return
        }
        if let known = seenReported[raw] ?? (options.reportedSignatures.contains(raw) ? raw : nil)
            ?? options.baselineCases?.acceptedAgain(i, raw)
        {
            repeatsOfReported[known, default: 0] += 1
            return
        }
        guard let f = shrunk(shrink) else { return }
        let signature = f.signature
        if options.reportedSignatures.contains(signature) {
            repeatsOfReported[signature, default: 0] += 1
            seenReported[raw] = signature
            // A shrink that ends in a failure reported before the run does not use up the budget for new ones (a
            // baseline's accepted divergences must not hide a new bug); each unshrunk signature shrinks once.
            shrinks -= 1
        } else {
            keep(f, as: raw)
        }
    }

    /// A failing case that passed when the baseline was written, in a gate over that run's cases
    /// (docs/check.md#baselines). A failure no entry accepts is kept as any other. One an entry accepts is new in
    /// this case: it fails the run, marked ``FailureSignature/newSinceBaseline``, and is shown unshrunk, since a
    /// shrink would lead to the accepted divergence the baseline's cases already show. A case that passes when run
    /// again is counted as accepted: an accepted divergence that shows only sometimes is not shown to be new.
    mutating func addNewSinceBaseline(
        _ i: Int, _ c: GeneratedCase, _ outcome: CaseOutcome, shrink: () -> FailureReport,
        rerun: () -> CaseOutcome
    ) {
        let accepted = options.baselineCases?.accepted ?? []
        let raw = FailureSignature.of(outcome, in: c)
        let marked = raw.newSinceBaselineRun
        if let k = seen[marked] {
            failures[k].occurrences += 1
            return
        }
        var f: FailureReport
        if accepted.contains(raw) {
            f = FailureReport(unshrunk: c, caseIndex: i, seed: options.seed, outcome: outcome)
        } else {
            guard let s = shrunk(shrink) else { return }
            f = s
            if accepted.contains(f.signature) {
                f = FailureReport(unshrunk: c, caseIndex: i, seed: options.seed, outcome: outcome)
            }
        }
        if accepted.contains(f.signature) {
            guard Checker.sameFailure(rerun(), outcome) else {
                repeatsOfReported[f.signature, default: 0] += 1
                return
            }
            f.newSinceBaseline = true
        }
        keep(f, as: marked)
    }

    /// Each unshrunk signature met, with the signature its shrink led to (``Baseline/Entry/alsoAs``).
    var shrunkSignatures: [FailureSignature: FailureSignature] {
        seenReported.merging(seen.mapValues { failures[$0].signature }) { a, _ in a }
    }

    /// `shrink()`, unless the run has shrunk as many failures as it may (then the case is counted as unshrunk).
    private mutating func shrunk(_ shrink: () -> FailureReport) -> FailureReport? {
        guard shrinks < options.maxShrinks else {
            unshrunk += 1
            return nil
        }
        shrinks += 1
        return shrink()
    }

    /// Counts `f` into the failure with its signature, or keeps it as a new one; cases whose unshrunk signature is
    /// `raw` are counted into it from now on.
    private mutating func keep(_ f: FailureReport, as raw: FailureSignature) {
        if let k = failures.firstIndex(where: { $0.signature == f.signature }) {
            failures[k].occurrences += 1
            seen[raw] = k
        } else {
            failures.append(f)
            seen[raw] = failures.count - 1
        }
    }
}
