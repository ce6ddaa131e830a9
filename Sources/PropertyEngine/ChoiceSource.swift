/// Where a generator reads its random decisions from: fresh randomness (recording every decision) or a recorded
/// choice sequence (replay and shrinking). This is Hypothesis' design: because generation is a pure function of
/// the sequence, shrinking can work on the sequence alone, without knowing anything about App Store histories.
///
/// Conventions that make shrinking work: the value 0 is always the simplest choice (stop, no perturbation,
/// the first option, the shortest gap), and generators mark the choices that make up one logical unit (an action,
/// a delivery perturbation) as a ``Span`` so the shrinker can delete the unit as a whole.
public final class ChoiceSource {
    public struct Span: Hashable, Sendable, Codable {
        public var label: String
        public var start: Int
        public var end: Int
        public init(label: String, start: Int, end: Int) {
            self.label = label
            self.start = start
            self.end = end
        }
    }

    /// Fresh randomness when `replayed` is nil, else the recorded sequence. Two stored properties rather than an
    /// enum with payloads: a draw then neither copies the sequence nor rewrites the generator's case.
    private var rng: SplitMix64
    private let replayed: [UInt64]?
    public private(set) var choices: [UInt64] = []
    public private(set) var spans: [Span] = []
    /// True once a replayed sequence ran out; further draws return 0.
    public private(set) var overran = false
    private var cursor = 0
    /// Generation stops adding choices past this many (a safety limit, not a tuning knob).
    public let maxChoices: Int

    public init(seed: UInt64, maxChoices: Int = 16384) {
        self.rng = SplitMix64(seed: seed)
        self.replayed = nil
        self.maxChoices = maxChoices
    }

    public init(replaying sequence: [UInt64], maxChoices: Int = 16384) {
        self.rng = SplitMix64(seed: 0)
        self.replayed = sequence
        self.maxChoices = maxChoices
    }

    /// A value in `0..<n` (n ≥ 1).
    public func draw(below n: UInt64) -> UInt64 {
        precondition(n > 0)
        var value: UInt64
        if let seq = replayed {
            if cursor < seq.count {
                value = seq[cursor]
                if value >= n { value %= n }
            } else {
                value = 0
                overran = true
            }
        } else {
            value = n == 1 ? 0 : rng.next(upperBound: n)
        }
        cursor += 1
        if choices.count < maxChoices { choices.append(value) }
        return value
    }

    public func int(below n: Int) -> Int { Int(draw(below: UInt64(max(n, 1)))) }

    /// An integer in `range`, with the lower bound as the simplest value.
    public func int(in range: ClosedRange<Int>) -> Int { range.lowerBound + int(below: range.count) }

    /// True with probability about `percent`/100; false is the simplest value.
    public func chance(_ percent: Int) -> Bool { draw(below: 100) >= UInt64(100 - percent) }

    /// An index into `weights`, chosen with the given relative weights; index 0 is the simplest.
    public func weighted(_ weights: [Int]) -> Int {
        let total = weights.reduce(0) { $0 + max($1, 0) }
        guard total > 0 else { return 0 }
        var v = int(below: total)
        for (i, w) in weights.enumerated() where w > 0 {
            if v < w { return i }
            v -= w
        }
        return weights.count - 1
    }

    public func pick<T>(_ options: [T]) -> T { options[int(below: options.count)] }

    /// Marks the choices `body` makes as one unit the shrinker may delete or simplify together.
    public func span<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
        let start = cursor
        let result = try body()
        if cursor > start, start < maxChoices {
            spans.append(Span(label: label, start: start, end: min(cursor, maxChoices)))
        }
        return result
    }

    public var drawCount: Int { cursor }
}
