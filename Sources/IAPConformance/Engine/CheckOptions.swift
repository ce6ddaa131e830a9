import Dispatch
import IAPModel
import IAPSimulator
import IAPValidatorAPI
import PropertyEngine

/// Settings of one `check` run.
public struct CheckOptions: Sendable {
    public var cases: Int = 600
    public var seed: UInt64 = 1
    public var properties: [PropertyName] = PropertyName.standard
    public var catalog: Catalog = .standard
    /// Draw a catalog per case with `catalog` as the simplest draw (the command line's default when no `--catalog`
    /// pins one); off, every case uses `catalog`.
    public var drawsCatalogs = false
    public var policy: Policy = .default
    public var maxActions: Int = 12
    /// The largest case size of the run's long tail (``HistoryGenerator/sizeLimit(caseIndex:maxSize:)``): renewals in
    /// one "time passes" action, purchases in one spree (`--max-size`).
    public var maxSize = HistoryGenerator.defaultMaxSize
    public var shrinkBudget = Shrinker.Budget()
    /// The validator is a program or a backend (`exec:`, `http:`): each shrinking attempt is a round trip, so
    /// shrinking is bounded by `shrinkBudget` as given (the command line adds a time budget) rather than by the
    /// 400 attempts of a signed in-process shrink.
    public var outOfProcess = false
    /// Run only this case index (reproduces one case of a seeded run).
    public var onlyCase: Int?
    /// How many times a shrunk counterexample is replayed to tell a real failure from a flaky one.
    public var flakinessReplays = 3
    /// Polled between cases; true stops the run early (Ctrl-C), keeping what was found.
    public var shouldStop: @Sendable () -> Bool = { false }
    /// Deliver signed artifacts (the default). Off: decoded facts, in-process validators only, no forgeries.
    public var signed = true
    /// Validators checked at once (`--jobs`); more than 1 needs `Checker.makeWorker`. The report does not depend on it.
    public var jobs = 1
    /// Run only this slice of the case indices (`--shard i/N`); case `i` is the same case in any shard.
    public var shard: Shard?
    /// Forgery classes the validator is known to accept (`--known-divergences`): cases leave them out, and the
    /// report says they were not checked.
    public var knownDivergences: Set<ForgeryClass> = []
    /// Properties the validator is known to fail on purpose (`--known-divergences`): not run, their corpus cases
    /// skipped, and the report says they were not checked.
    public var knownDivergentProperties: Set<PropertyName> = []
    /// Distinct failures to find before the run stops (`--keep-going[=N]`): 1 stops at the first, as a plain run
    /// does; more go on past failures, shrink each new one and fold repeats of a known one into it.
    public var keepGoing = 1
    /// The most failures a `--keep-going` run shrinks: a failing case whose unshrunk signature is new after that is
    /// counted, not shrunk (a validator that fails everything cannot make the run shrink for ever).
    /// Failures this run reported before its cases (the corpus replay's), by signature: a generated case that fails
    /// the same way is counted into them, not shrunk and printed again (docs/check.md#distinct-failures).
    public var reportedSignatures: Set<FailureSignature> = []
    /// The cases of the run that wrote the baseline, when this run checks the same ones: a case that passed then
    /// and fails now as an accepted divergence does is a new failure (docs/check.md#baselines).
    public var baselineCases: BaselineCases?
    /// Every case runs, whatever fails (`--write-baseline`: the baseline records which cases failed); up to
    /// ``maxShrinks`` failures are shrunk, and ``keepGoing`` does not stop the run.
    public var runsToTheEnd = false
    /// Whether a failing case leaves later cases to run: with `--keep-going`, or when failures were reported before
    /// the run (an accepted failure is not the end of it).
    var runsPastAFailure: Bool { keepGoing > 1 || !reportedSignatures.isEmpty || runsToTheEnd }
    public var maxShrinks: Int { shrinkLimit ?? (keepGoing == 1 ? 1 : keepGoing * 3) }
    /// Sets ``maxShrinks`` (certify shrinks fewer, since it runs six properties).
    public var shrinkLimit: Int?
    public init() {}

    /// The case indices this run generates.
    public var caseRange: Range<Int> { shard?.range(of: cases) ?? 0..<cases }
}
