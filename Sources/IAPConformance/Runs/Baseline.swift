import Foundation
import IAPEncoding

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

        public init(signature: FailureSignature, reason: String, replay: String?) {
            self.signature = signature
            self.reason = reason
            self.replay = replay
            text = signature.description
        }
    }

    public var version = 1
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// The entry that accepts `s`, if one does.
    public func entry(for s: FailureSignature) -> Entry? { entries.first { $0.signature == s } }

    public var signatures: Set<FailureSignature> { Set(entries.map(\.signature)) }

    /// Reads a baseline; an entry without a reason is refused (an accepted divergence says why), as is any file that
    /// is not one, naming the file and the entry.
    public static func load(path: String) throws(ConfigError) -> Baseline {
        let data = try StrictJSON.readFile(path)
        let b: Baseline
        do { b = try JSONDecoder().decode(Baseline.self, from: data) } catch {
            throw ConfigError(
                file: path, key: "entries",
                "not a baseline (\(error)); `iapcheck check --write-baseline FILE` writes one")
        }
        for (i, e) in b.entries.enumerated() where e.reason.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigError(
                file: path, key: "entries[\(i)].reason",
                "empty: say why \(e.signature) is accepted (a baseline accepts only divergences someone reasoned about)"
            )
        }
        return b
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

/// An accepted divergence met by a run: the entry and how many failing cases showed it.
public struct AcceptedFailure: Codable, Sendable {
    public var signature: String
    public var reason: String
    public var occurrences: Int

    public init(signature: String, reason: String, occurrences: Int) {
        (self.signature, self.reason, self.occurrences) = (signature, reason, occurrences)
    }
}
