import PropertyEngine
import Synchronization
import Testing

@Suite struct PropertyEngineTests {
    @Test func splitMixIsDeterministicPerSeed() {
        var a = SplitMix64(seed: 7), b = SplitMix64(seed: 7), c = SplitMix64(seed: 8)
        let xs = (0..<5).map { _ in a.next() }
        #expect(xs == (0..<5).map { _ in b.next() })
        #expect(xs != (0..<5).map { _ in c.next() })
        #expect(SplitMix64.derive(1, 0) != SplitMix64.derive(1, 1))
    }

    @Test func replayingTheRecordedChoicesReproducesTheDraws() {
        let src = ChoiceSource(seed: 99)
        let drawn = (0..<20).map { i in src.draw(below: UInt64(3 + i)) }
        let replay = ChoiceSource(replaying: src.choices)
        #expect((0..<20).map { i in replay.draw(below: UInt64(3 + i)) } == drawn)
        #expect(!replay.overran)
    }

    @Test func anExhaustedReplayYieldsTheSimplestChoice() {
        let src = ChoiceSource(replaying: [5])
        #expect(src.draw(below: 10) == 5)
        #expect(src.draw(below: 10) == 0)
        #expect(src.overran)
        #expect(ChoiceSource(replaying: [25]).draw(below: 10) == 5)  // out-of-range values wrap
    }

    @Test func spansMarkTheChoicesOfOneUnit() {
        let src = ChoiceSource(seed: 1)
        _ = src.draw(below: 4)
        src.span("unit") {
            _ = src.draw(below: 4)
            _ = src.draw(below: 4)
        }
        #expect(src.spans == [ChoiceSource.Span(label: "unit", start: 1, end: 3)])
    }

    /// A list generator: "more?" then a value, repeated. The property fails when the sum exceeds 100.
    static func sumOfList(_ src: ChoiceSource) -> [Int] {
        var xs: [Int] = []
        while src.chance(80) && xs.count < 50 {
            src.span("element") { xs.append(src.int(below: 1000)) }
        }
        return xs
    }

    @Test func shrinkingFindsTheMinimalCounterexample() {
        var seed: UInt64 = 0
        var src = ChoiceSource(seed: seed)
        while Self.sumOfList(src).reduce(0, +) <= 100 {
            seed += 1
            src = ChoiceSource(seed: seed)
        }
        let result = Shrinker().shrink(src.choices, spans: src.spans) { candidate in
            let s = ChoiceSource(replaying: candidate)
            let failing = Self.sumOfList(s).reduce(0, +) > 100
            return Shrinker.Outcome(failing: failing, spans: s.spans, consumed: Array(s.choices.prefix(s.drawCount)))
        }
        let minimal = Self.sumOfList(ChoiceSource(replaying: result.choices))
        #expect(minimal == [101])
    }

    @Test func shrinkingRespectsItsBudget() {
        let start = Array(repeating: UInt64(999), count: 200)
        let result = Shrinker(budget: .init(maxAttempts: 10, maxSeconds: 5)).shrink(start, spans: []) { c in
            Shrinker.Outcome(failing: true, spans: [], consumed: c)
        }
        #expect(result.attempts <= 10)
        #expect(result.exhaustedBudget)
        #expect(!result.stopped)
    }

    /// A budget of time (a program's or a backend's shrink) removes structure before lowering values: from 200 large
    /// values of which one is needed, 60 attempts reach a short sequence, where the interleaved order of an attempt
    /// budget spends them lowering the first values one by one.
    @Test func aTimeBudgetDeletesBeforeItLowers() {
        let start = Array(repeating: UInt64(999), count: 200)
        func test(_ c: [UInt64]) -> Shrinker.Outcome {
            Shrinker.Outcome(failing: c.contains { $0 >= 500 }, spans: [], consumed: c)
        }
        let timed = Shrinker(budget: .init(maxAttempts: 60, maxSeconds: 600)).shrink(start, spans: [], test: test)
        let counted = Shrinker(budget: .init(maxAttempts: 60)).shrink(start, spans: [], test: test)
        #expect(timed.choices.count <= 160, "\(timed.choices.count) left")
        #expect(counted.choices.count == 200)
        // Given the attempts, both end at the smallest counterexample.
        let whole = Shrinker(budget: .init(maxAttempts: 100_000, maxSeconds: 600)).shrink(start, spans: [], test: test)
        #expect(whole.choices == [500])
    }

    /// Ctrl-C: `shouldStop` ends shrinking at once, keeping the simplest failing sequence found so far.
    @Test func shrinkingStopsWhenAsked() {
        let start = Array(repeating: UInt64(999), count: 200)
        let asked = Mutex(0)
        var budget = Shrinker.Budget()
        budget.shouldStop = {
            asked.withLock { n in
                n += 1
                return n > 5
            }
        }
        let result = Shrinker(budget: budget).shrink(start, spans: []) { c in
            Shrinker.Outcome(failing: c.reduce(0, +) > 0, spans: [], consumed: c)
        }
        #expect(result.stopped && result.exhaustedBudget)
        #expect(result.attempts <= 5 && result.attempts > 0)
        #expect(Shrinker.simpler(result.choices, than: start) && result.choices.reduce(0, +) > 0)
        let whole = Shrinker().shrink(start, spans: []) { c in
            Shrinker.Outcome(failing: c.reduce(0, +) > 0, spans: [], consumed: c)
        }
        #expect(!whole.stopped && whole.attempts > result.attempts)
    }

    /// Candidates tried side by side (`width` > 1) give the counterexample, and the attempt count, of one at a time;
    /// only the batches are fewer.
    @Test(arguments: [2, 3, 8])
    func shrinkingSideBySideGivesTheSameResult(width: Int) {
        for seed: UInt64 in 0..<40 {
            let src = ChoiceSource(seed: seed)
            guard Self.sumOfList(src).reduce(0, +) > 100 else { continue }
            func test(_ candidate: [UInt64]) -> Shrinker.Outcome {
                let s = ChoiceSource(replaying: candidate)
                let failing = Self.sumOfList(s).reduce(0, +) > 100
                return Shrinker.Outcome(
                    failing: failing, spans: s.spans, consumed: Array(s.choices.prefix(s.drawCount)))
            }
            let one = Shrinker().shrink(src.choices, spans: src.spans, test: test)
            var batches = 0
            let wide = Shrinker().shrink(src.choices, spans: src.spans, width: width) { batch in
                #expect(batch.count <= width)
                batches += 1
                return batch.map(test)
            }
            #expect(wide.choices == one.choices, "seed \(seed)")
            #expect(wide.attempts == one.attempts, "seed \(seed)")
            #expect(batches < one.attempts, "seed \(seed): \(batches) batches for \(one.attempts) attempts")
        }
    }

    /// A budget of attempts is kept exactly with batches too.
    @Test func sideBySideKeepsTheAttemptBudget() {
        let start = Array(repeating: UInt64(999), count: 200)
        let result = Shrinker(budget: .init(maxAttempts: 10)).shrink(start, spans: [], width: 4) { batch in
            batch.map { Shrinker.Outcome(failing: $0.reduce(0, +) > 5000, spans: [], consumed: $0) }
        }
        #expect(result.attempts == 10 && result.exhaustedBudget)
    }
}
