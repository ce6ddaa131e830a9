import Dispatch

/// Generic shrinking of a failing choice sequence (Hypothesis-style), domain-free.
///
/// Candidates are ordered shortlex (shorter first, then lexicographically smaller): every accepted step makes the
/// sequence strictly simpler, so shrinking terminates. Passes, cheapest and most effective first: delete marked
/// spans, zero spans, lower single values, delete small unmarked blocks. The caller's predicate regenerates the case from a candidate and re-runs the
/// property; it also returns the spans of that run so later passes see the new structure.
public struct Shrinker {
    /// How much shrinking may cost. Attempts make it deterministic (the same seed shrinks to the same case on any
    /// machine); `maxSeconds` is an optional wall-clock cap for very slow validators, off by default because it
    /// makes the result depend on the machine's speed.
    public struct Budget: Sendable {
        public var maxAttempts: Int
        public var maxSeconds: Double
        /// Asked before each attempt: true stops shrinking at the simplest failing sequence found so far (Ctrl-C).
        /// The result then depends on when it was asked, so a caller says so.
        public var shouldStop: @Sendable () -> Bool = { false }
        public init(maxAttempts: Int = 2000, maxSeconds: Double = .infinity) {
            self.maxAttempts = maxAttempts
            self.maxSeconds = maxSeconds
        }
    }

    public struct Outcome: Sendable {
        /// True when the candidate still shows the failure being shrunk.
        public var failing: Bool
        /// The spans the generator marked while running the candidate.
        public var spans: [ChoiceSource.Span]
        /// The choices the generator actually consumed (the candidate trimmed to what was read).
        public var consumed: [UInt64]
        public init(failing: Bool, spans: [ChoiceSource.Span], consumed: [UInt64]) {
            self.failing = failing
            self.spans = spans
            self.consumed = consumed
        }
    }

    public struct Result {
        public var choices: [UInt64]
        public var attempts: Int
        public var improvements: Int
        public var exhaustedBudget: Bool
        /// Stopped by ``Budget/shouldStop`` before the budget ran out.
        public var stopped = false
        /// Stopped by ``Budget/maxSeconds``: a faster machine may shrink further.
        public var timedOut = false
    }

    public var budget: Budget
    /// Labels of spans that are only zeroed, never deleted or lowered value by value: raw material the generator
    /// reads through a fixed-size window (deleting part of it would shift unrelated decisions).
    public var zeroOnlyLabels: Set<String>

    public init(budget: Budget = Budget(), zeroOnlyLabels: Set<String> = []) {
        self.budget = budget
        self.zeroOnlyLabels = zeroOnlyLabels
    }

    public static func simpler(_ a: [UInt64], than b: [UInt64]) -> Bool {
        if a.count != b.count { return a.count < b.count }
        for (x, y) in zip(a, b) where x != y { return x < y }
        return false
    }

    /// Shrinks `initial`, one candidate at a time.
    public func shrink(
        _ initial: [UInt64], spans initialSpans: [ChoiceSource.Span], test: ([UInt64]) -> Outcome
    ) -> Result {
        shrink(initial, spans: initialSpans, width: 1) { batch in batch.map(test) }
    }

    /// Shrinks `initial`, handing `testBatch` up to `width` candidates at once (it may run them side by side).
    ///
    /// The batch is what a one-at-a-time shrink would try next if each attempt failed; the first failing candidate
    /// of the batch is kept and the rest are dropped unread (and not counted as attempts). So the result, and the
    /// attempt count, are the same for any width: width only buys time.
    ///
    /// A budget of time (a program's or a backend's shrink, each attempt a round trip) goes to the structure first:
    /// spans and blocks are deleted and zeroed until none more goes, and values are lowered only then, since lowering
    /// every value of a long history spends the time before a small one is reached. A budget of attempts keeps the
    /// interleaved order (its counterexamples are deterministic and saved in corpora).
    public func shrink(
        _ initial: [UInt64], spans initialSpans: [ChoiceSource.Span], width: Int,
        testBatch: ([[UInt64]]) -> [Outcome]
    ) -> Result {
        let deadline: UInt64? =
            budget.maxSeconds.isFinite
            ? DispatchTime.now().uptimeNanoseconds + UInt64(min(max(budget.maxSeconds, 0), 1e9) * 1e9) : nil
        var run = ShrinkRun(
            state: ShrinkState(best: initial, spans: initialSpans, zeroOnly: zeroOnlyLabels), budget: budget,
            width: max(width, 1), deadline: deadline)
        run.passes(structureFirst: budget.maxSeconds.isFinite, testBatch)  // see above
        // Whether a stop cut the passes short, read before the last look at the budget: a Ctrl-C after the passes
        // ended does not make a finished shrink look cut.
        let (cut, cutByTime) = (run.stopped, run.timedOut)
        var result = Result(
            choices: run.state.best, attempts: run.attempts, improvements: run.improvements,
            exhaustedBudget: run.outOfBudget())
        (result.stopped, result.timedOut) = (cut, cutByTime)
        return result
    }
}

/// One shrink under way: the simplest failing sequence so far, the budget spent, and whether the last round of
/// passes changed anything.
struct ShrinkRun {
    var state: ShrinkState
    let budget: Shrinker.Budget
    let width: Int
    let deadline: UInt64?
    var attempts = 0
    var improvements = 0
    var stopped = false
    var timedOut = false
    var progress = true
    /// The length of the sequence the last full sweep of block deletions ended at.
    var blocksSweptAt: Int?

    mutating func outOfBudget() -> Bool {
        if stopped || budget.shouldStop() {
            stopped = true
            return true
        }
        if let deadline, DispatchTime.now().uptimeNanoseconds > deadline { timedOut = true }
        return attempts >= budget.maxAttempts || timedOut
    }

    /// Rounds of the passes until one changes nothing or the budget ends.
    mutating func passes(structureFirst: Bool, _ testBatch: ([[UInt64]]) -> [Shrinker.Outcome]) {
        while progress && !outOfBudget() {
            progress = false
            var deleteSpans = DeleteSpans(state)
            run(&deleteSpans, testBatch)
            var zeroSpans = ZeroSpans(state)
            run(&zeroSpans, testBatch)
            if structureFirst {
                deleteBlocks(testBatch)
                if progress { continue }
            }
            var lowerValues = LowerValues(state)
            run(&lowerValues, testBatch)
            if !structureFirst { deleteBlocks(testBatch) }
        }
    }

    /// Deleting blocks tries three candidates per choice, most of a shrink's attempts: a sweep is not repeated over a
    /// sequence of the length the last full sweep ended at (lowered values seldom free a block the sweep kept).
    mutating func deleteBlocks(_ testBatch: ([[UInt64]]) -> [Shrinker.Outcome]) {
        guard state.best.count != blocksSweptAt else { return }
        var pass = DeleteBlocks()
        run(&pass, testBatch)
        if !outOfBudget() { blocksSweptAt = state.best.count }
    }

    /// Runs one pass to its end (or the budget's): batches of the candidates it would try next, walked in order.
    mutating func run<P: ShrinkPass>(_ pass: inout P, _ testBatch: ([[UInt64]]) -> [Shrinker.Outcome]) {
        while !outOfBudget() {
            var ahead = pass
            var batch: [[UInt64]] = []
            while batch.count < min(width, budget.maxAttempts - attempts), let c = ahead.candidate(state) {
                if Shrinker.simpler(c, than: state.best) { batch.append(c) }
                ahead.failed(state)
            }
            if batch.isEmpty { return }
            let outcomes = testBatch(batch)
            var next = 0
            while next < outcomes.count, let c = pass.candidate(state) {
                // A candidate no simpler than the best is passed over untried, as in the batch.
                guard Shrinker.simpler(c, than: state.best) else {
                    pass.failed(state)
                    continue
                }
                attempts += 1
                let outcome = outcomes[next]
                next += 1
                guard outcome.failing else {
                    pass.failed(state)
                    continue
                }
                state.best = Shrinker.simpler(outcome.consumed, than: c) ? outcome.consumed : c
                state.spans = outcome.spans
                improvements += 1
                progress = true
                pass.succeeded(state)
                break
            }
        }
    }
}

/// What the passes read: the simplest failing sequence so far and the spans its run marked.
struct ShrinkState {
    var best: [UInt64]
    var spans: [ChoiceSource.Span]
    let zeroOnly: Set<String>
}

/// A pass of the shrinker as a cursor over the candidates it tries: `candidate` is the next one from the state
/// (nil: the pass is over), `failed` moves past it, `succeeded` follows its acceptance (the state then holds it).
protocol ShrinkPass {
    mutating func candidate(_ s: ShrinkState) -> [UInt64]?
    mutating func failed(_ s: ShrinkState)
    mutating func succeeded(_ s: ShrinkState)
}

/// 1. Delete whole spans, largest first, in one sweep: after a success the list is rebuilt from the new structure and
///    the sweep goes on at the same position.
struct DeleteSpans: ShrinkPass {
    var ordered: [ChoiceSource.Span]
    var k = 0
    init(_ s: ShrinkState) { ordered = Self.deletable(s) }
    static func deletable(_ s: ShrinkState) -> [ChoiceSource.Span] {
        s.spans.filter { $0.end <= s.best.count && !s.zeroOnly.contains($0.label) }
            .sorted { ($0.end - $0.start, $1.start) > ($1.end - $1.start, $0.start) }
    }
    func candidate(_ s: ShrinkState) -> [UInt64]? {
        guard k < ordered.count else { return nil }
        var c = s.best
        c.removeSubrange(ordered[k].start..<ordered[k].end)
        return c
    }
    mutating func failed(_ s: ShrinkState) { k += 1 }
    mutating func succeeded(_ s: ShrinkState) { ordered = Self.deletable(s) }
}

/// 2. Zero whole spans (removes a perturbation or simplifies an action as a unit), over the spans the pass began with.
struct ZeroSpans: ShrinkPass {
    let spans: [ChoiceSource.Span]
    var k = 0
    init(_ s: ShrinkState) { spans = s.spans }
    mutating func candidate(_ s: ShrinkState) -> [UInt64]? {
        while k < spans.count && spans[k].end > s.best.count { k += 1 }
        guard k < spans.count else { return nil }
        var c = s.best
        for j in spans[k].start..<spans[k].end { c[j] = 0 }
        return c
    }
    mutating func failed(_ s: ShrinkState) { k += 1 }
    mutating func succeeded(_ s: ShrinkState) { k += 1 }
}

/// 3. Lower single values (outside zero-only spans), each to the lowest it fails at in one go: zero first, then
///    halving while the half still fails, then a bisection between the last half that passed and the value. A value
///    of n is down in about 2·log2(n) attempts, where lowering it one step per round of passes took as many rounds,
///    each trying every other pass again (what made a slow validator's shrink spend its budget on one number).
struct LowerValues: ShrinkPass {
    enum Phase { case zero, halve, bisect }
    let frozen: [ChoiceSource.Span]
    var i = 0
    var phase = Phase.zero
    /// The highest value known to pass at `i` (the failure gone) below the current one.
    var passesAt: UInt64 = 0
    init(_ s: ShrinkState) { frozen = s.spans.filter { s.zeroOnly.contains($0.label) } }

    /// The next lower value tried for `v` in `phase`; nil when `v` cannot go lower.
    func lower(_ v: UInt64) -> UInt64? {
        switch phase {
        case .zero: return 0
        case .halve: return v / 2 > 0 ? v / 2 : bisected(v)
        case .bisect: return bisected(v)
        }
    }
    func bisected(_ v: UInt64) -> UInt64? {
        let mid = passesAt + (v - passesAt) / 2
        return mid > passesAt ? mid : nil
    }
    mutating func next() {
        (i, phase, passesAt) = (i + 1, .zero, 0)
    }

    mutating func candidate(_ s: ShrinkState) -> [UInt64]? {
        while i < s.best.count {
            if let f = frozen.first(where: { $0.start <= i && i < $0.end }) {
                (i, phase, passesAt) = (f.end, .zero, 0)
                continue
            }
            if s.best[i] > 0, let v = lower(s.best[i]) {
                var c = s.best
                c[i] = v
                return c
            }
            next()
        }
        return nil
    }
    mutating func failed(_ s: ShrinkState) {
        guard i < s.best.count, let tried = lower(s.best[i]) else { return next() }
        passesAt = max(passesAt, tried)
        phase = phase == .zero ? .halve : .bisect
    }
    mutating func succeeded(_ s: ShrinkState) {
        if phase == .zero { next() }
    }
}

/// 4. Delete small blocks anywhere (covers units the generator did not mark).
struct DeleteBlocks: ShrinkPass {
    static let sizes = [4, 2, 1]
    var size = 0
    var i = 0
    mutating func candidate(_ s: ShrinkState) -> [UInt64]? {
        while size < Self.sizes.count {
            let k = Self.sizes[size]
            if i + k <= s.best.count {
                var c = s.best
                c.removeSubrange(i..<(i + k))
                return c
            }
            size += 1
            i = 0
        }
        return nil
    }
    mutating func failed(_ s: ShrinkState) { i += 1 }
    mutating func succeeded(_ s: ShrinkState) {}
}
