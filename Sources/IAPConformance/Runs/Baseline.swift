import Foundation
import IAPEncoding
import IAPModel

/// Accepted divergences (docs/check.md#baselines): failure signatures a team has looked at and accepts, each with
/// its reason, so a gate can be green on the backend it has and still fail on every new kind of failure. A run with a
/// baseline fails only on signatures not in it, lists the accepted ones it met, and names entries it did not meet.
public struct Baseline: Codable, Sendable {
    public struct Entry: Codable, Sendable {
        /// The signature accepted (docs/check.md#distinct-failures): kind, field, product kind, channel and event.
        public var signature: FailureSignature
        /// Why it is accepted: a team's judgement, required in a file a run reads.
        public var reason: String
        /// How the run that wrote the entry replays it.
        public var replay: String?
        /// The signature as reports print it, for people reading the file (not read back).
        public var text: String?
        /// The signatures of the unshrunk cases whose shrink led to this one when the baseline was written: a gate
        /// over the same cases counts a case that failed then and fails so again into the entry, without a shrink.
        public var alsoAs: [FailureSignature]?

        public init(signature: FailureSignature, reason: String, replay: String?) {
            self.signature = signature
            self.reason = reason
            self.replay = replay
            text = signature.description
        }
    }

    /// The run that wrote the baseline and which of its cases failed (docs/check.md#baselines). A gate over the same
    /// cases fails on a case that passed then, even when its failure has an accepted signature: a new bug that
    /// fails as an accepted one does. Absent in a file written by a shard, by one case, or by hand.
    public struct WrittenOver: Codable, Sendable {
        /// What decides the cases and what the validator goes through: seed, `--cases`, properties, catalog,
        /// policy, faults, declared divergences and profile (not the shard, the corpus or the shrink budget).
        public var run: RunIdentity
        /// The cases that ran, from case 0: all of the run's, unless it stopped early.
        public var casesRun: Int
        /// The indices of the cases that failed, as comma-separated numbers and ranges: `3,17,20-25`.
        public var failingCases: String
        /// A digest of the first cases as the iapcheck that wrote the file generated them (``Checker/casesFingerprint``):
        /// another version may generate other cases from the same seed, and case i is then another case. Absent in
        /// files written before it existed.
        public var casesFingerprint: String?

        public init(run: RunIdentity, casesRun: Int, failingCases: [Int], casesFingerprint: String? = nil) {
            self.run = Self.cases(of: run)
            self.casesRun = casesRun
            self.failingCases = Self.ranges(failingCases)
            self.casesFingerprint = casesFingerprint
        }

        /// `run` with what does not change which cases run, or how, left out: two runs with equal results check the
        /// same cases.
        public static func cases(of run: RunIdentity) -> RunIdentity {
            var r = run
            r.shard = Shard(index: 0, count: 1)
            (r.corpusSkipped, r.shrinkAttempts, r.shrinkSeconds) = (nil, nil, nil)
            return r
        }

        /// `[3, 17, 20, 21, 22]` → `3,17,20-22`.
        static func ranges(_ indices: [Int]) -> String {
            var parts: [String] = []
            var k = 0
            let sorted = indices.sorted()
            while k < sorted.count {
                var end = k
                while end + 1 < sorted.count, sorted[end + 1] <= sorted[end] + 1 { end += 1 }
                parts.append(end == k ? "\(sorted[k])" : "\(sorted[k])-\(sorted[end])")
                k = end + 1
            }
            return parts.joined(separator: ",")
        }

        /// The indices `failingCases` lists; nil when it is not a list of numbers and ranges.
        public var failing: Set<Int>? {
            var out: Set<Int> = []
            for part in failingCases.split(separator: ",") {
                let ends = part.split(separator: "-", omittingEmptySubsequences: false).map {
                    Int($0.trimmingCharacters(in: .whitespaces))
                }
                // At most ten million cases listed: a hand-edited range cannot make the run hold billions.
                guard (1...2).contains(ends.count), let a = ends.first!, let b = ends.last!, 0 <= a, a <= b,
                    b < casesRun, out.count + (b - a) < 10_000_000
                else { return nil }
                out.formUnion(a...b)
            }
            return out
        }
    }

    public var version = 1
    public var entries: [Entry]
    public var writtenOver: WrittenOver?

    public init(entries: [Entry], writtenOver: WrittenOver? = nil) {
        self.entries = entries
        self.writtenOver = writtenOver
    }

    /// What a run over `run` checks with this baseline: its accepted signatures and, when the baseline was written
    /// over the same cases (the same seed, properties, catalog…: `--cases` may differ, since case i is the same
    /// case in both), which of them failed then; otherwise what differs (`seed: 1 there, 7 here`), or nil when
    /// the baseline does not say.
    /// `fingerprint` makes this build's fingerprint of the baseline's first cases (``WrittenOver/casesFingerprint``).
    public func cases(
        for run: RunIdentity, fingerprint: (Int) -> String
    ) -> (BaselineCases?, differs: String?) {
        guard let w = writtenOver, w.casesRun > 0, let failing = w.failing else { return (nil, nil) }
        // Case i is the same case whatever --cases says: only the cases both runs have are held case by case.
        var mine = WrittenOver.cases(of: run)
        mine.totalCases = w.run.totalCases
        // `mine` is this run's value, `theirs` the baseline's run's.
        if let d = mine.firstDifference(from: w.run) {
            return (nil, "\(d.what): \(d.theirs) there, \(d.mine) here")
        }
        if let theirs = w.casesFingerprint, theirs != fingerprint(w.casesRun) {
            return (
                nil,
                "generated by another iapcheck than this one, \(IAPCheckVersion.current): write it again with this version"
            )
        }
        var cases = BaselineCases(accepted: signatures, casesRun: w.casesRun, failing: failing)
        for e in entries { for raw in e.alsoAs ?? [] { cases.seenAs[raw] = e.signature } }
        return (cases, nil)
    }

    /// The entry that accepts `s`, if one does.
    public func entry(for s: FailureSignature) -> Entry? { entries.first { $0.signature == s } }

    public var signatures: Set<FailureSignature> { Set(entries.map(\.signature)) }

    /// Entries whose signatures read alike made one, in the file's order: signatures an older iapcheck wrote apart
    /// may read as one now (a forgery's product kind and event, no longer part of its signature). Their reasons are
    /// kept, each once, and the unshrunk signatures of each.
    func mergingAlikeEntries() -> Baseline {
        var merged: [Entry] = []
        var at: [FailureSignature: Int] = [:]
        for e in entries {
            guard let i = at[e.signature] else {
                at[e.signature] = merged.count
                merged.append(e)
                continue
            }
            if !e.reason.isEmpty && !merged[i].reason.contains(e.reason) {
                merged[i].reason += merged[i].reason.isEmpty ? e.reason : "; " + e.reason
            }
            if let more = e.alsoAs { merged[i].alsoAs = (merged[i].alsoAs ?? []) + more }
        }
        var b = self
        b.entries = merged
        return b
    }

    /// Reads a baseline; an entry without a reason is refused (an accepted divergence says why), as is any file that
    /// is not one, naming the file and the entry.
    public static func load(path: String) throws(ConfigError) -> Baseline {
        let data = try StrictJSON.readFile(path)
        let b: Baseline
        do { b = try JSONDecoder().decode(Baseline.self, from: data).mergingAlikeEntries() } catch {
            throw ConfigError(
                file: path, key: "entries",
                "not a baseline (\(error)); `iapcheck check --write-baseline FILE` writes one")
        }
        if let w = b.writtenOver, w.failing == nil {
            throw ConfigError(
                file: path, key: "writtenOver.failingCases",
                "\"\(w.failingCases)\" is not a list of case numbers and ranges below casesRun (\(w.casesRun)), as in \"3,17,20-25\""
            )
        }
        for (i, e) in b.entries.enumerated() where e.reason.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigError(
                file: path, key: "entries[\(i)].reason",
                "empty: say why \(e.signature) is accepted (a baseline accepts only divergences someone reasoned about)"
            )
        }
        return b
    }

    /// Gives each entry the reason `previous` has for its signature (and its replay, when this run has none); the
    /// number of entries given a reason, and the entries of `previous` with a reason that this baseline lacks.
    public mutating func keepingReasons(of previous: Baseline?) -> (kept: Int, dropped: [Entry]) {
        guard let previous else { return (0, []) }
        var kept = 0
        for i in entries.indices {
            guard let old = previous.entry(for: entries[i].signature), !old.reason.isEmpty else { continue }
            entries[i].reason = old.reason
            entries[i].replay = entries[i].replay ?? old.replay
            kept += 1
        }
        let dropped = previous.entries.filter { old in
            !old.reason.isEmpty && !entries.contains { $0.signature == old.signature }
        }
        return (kept, dropped)
    }

    /// The baseline at `path` as it is, reasons given or not; nil when there is none to read.
    public static func loadAsIs(path: String) -> Baseline? {
        guard let data = try? StrictJSON.readFile(path) else { return nil }
        return (try? JSONDecoder().decode(Baseline.self, from: data))?.mergingAlikeEntries()
    }

    /// Writes the baseline as indented JSON, entries in signature order.
    public func write(to path: String) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var sorted = self
        sorted.entries.sort { $0.signature.description < $1.signature.description }
        try (e.encode(sorted) + Data("\n".utf8)).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// What a gate knows of the run that wrote its baseline over the same cases (docs/check.md#baselines).
public struct BaselineCases: Sendable {
    /// The signatures the baseline accepts.
    public var accepted: Set<FailureSignature>
    /// The cases that ran then (from case 0), and those of them that failed.
    public var casesRun: Int
    public var failing: Set<Int>

    /// Unshrunk signatures whose shrink led to an accepted one when the baseline was written.
    public var seenAs: [FailureSignature: FailureSignature] = [:]

    /// Whether case `i` ran when the baseline was written, and passed.
    func passed(_ i: Int) -> Bool { i < casesRun && !failing.contains(i) }

    /// The accepted signature of case `i` failing as `raw`, when it failed then and `raw` led to that signature:
    /// counted without a shrink, as that shrink's result is known.
    func acceptedAgain(_ i: Int, _ raw: FailureSignature) -> FailureSignature? {
        failing.contains(i) ? seenAs[raw] : nil
    }
}

/// An accepted divergence met by a run: the entry and how many failing cases showed it.
public struct AcceptedFailure: Codable, Sendable {
    public var signature: String
    public var reason: String
    public var occurrences: Int

    public init(signature: String, reason: String, occurrences: Int) {
        (self.signature, self.reason, self.occurrences) = (signature, reason, occurrences)
    }
}
