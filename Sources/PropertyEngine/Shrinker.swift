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

    public struct Outcome {
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

    public func shrink(
        _ initial: [UInt64], spans initialSpans: [ChoiceSource.Span], test: ([UInt64]) -> Outcome
    ) -> Result {
        var best = initial
        var spans = initialSpans
        var attempts = 0
        var improvements = 0
        let deadline: UInt64? =
            budget.maxSeconds.isFinite
            ? DispatchTime.now().uptimeNanoseconds + UInt64(min(max(budget.maxSeconds, 0), 1e9) * 1e9) : nil
        var stopped = false
        var outOfBudget: Bool {
            if stopped || budget.shouldStop() {
                stopped = true
                return true
            }
            return attempts >= budget.maxAttempts
                || deadline.map { DispatchTime.now().uptimeNanoseconds > $0 } == true
        }

        /// Tries a candidate; keeps it when it is simpler and still failing.
        func attempt(_ candidate: [UInt64]) -> Bool {
            guard !outOfBudget, Self.simpler(candidate, than: best) else { return false }
            attempts += 1
            let outcome = test(candidate)
            guard outcome.failing else { return false }
            let kept = Self.simpler(outcome.consumed, than: candidate) ? outcome.consumed : candidate
            best = kept
            spans = outcome.spans
            improvements += 1
            return true
        }

        var progress = true
        while progress && !outOfBudget {
            progress = false

            // 1. Delete whole spans, largest first, in one sweep: after a success the list is rebuilt from the new
            //    structure and the sweep goes on at the same position.
            func deletable() -> [ChoiceSource.Span] {
                spans.filter { $0.end <= best.count && !zeroOnlyLabels.contains($0.label) }
                    .sorted { ($0.end - $0.start, $1.start) > ($1.end - $1.start, $0.start) }
            }
            var ordered = deletable()
            var k = 0
            while k < ordered.count && !outOfBudget {
                var c = best
                c.removeSubrange(ordered[k].start..<ordered[k].end)
                if attempt(c) {
                    progress = true
                    ordered = deletable()
                } else {
                    k += 1
                }
            }

            // 2. Zero whole spans (removes a perturbation or simplifies an action as a unit).
            for s in spans where s.end <= best.count && !outOfBudget {
                var c = best
                for j in s.start..<s.end { c[j] = 0 }
                if attempt(c) { progress = true }
            }

            // 3. Lower single values (outside zero-only spans): zero, then halve, then minus one.
            let frozen = spans.filter { zeroOnlyLabels.contains($0.label) }
            var i = 0
            while i < best.count && !outOfBudget {
                if let f = frozen.first(where: { $0.start <= i && i < $0.end }) {
                    i = f.end
                    continue
                }
                let v = best[i]
                if v > 0 {
                    for nv in [0, v / 2, v - 1] where nv < v {
                        var c = best
                        c[i] = nv
                        if attempt(c) {
                            progress = true
                            break
                        }
                    }
                }
                i += 1
            }

            // 4. Delete small blocks anywhere (covers units the generator did not mark).
            for k in [4, 2, 1] {
                var i = 0
                while i + k <= best.count && !outOfBudget {
                    var c = best
                    c.removeSubrange(i..<(i + k))
                    if attempt(c) { progress = true } else { i += 1 }
                }
            }

        }
        // Whether a stop cut the passes short, read before the last look at the budget: a Ctrl-C after the passes
        // ended does not make a finished shrink look cut.
        let cut = stopped
        let exhausted = outOfBudget
        var result = Result(choices: best, attempts: attempts, improvements: improvements, exhaustedBudget: exhausted)
        result.stopped = cut
        return result
    }
}
