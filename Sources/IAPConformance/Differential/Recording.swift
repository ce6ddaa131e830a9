import Foundation
import IAPEncoding
import IAPModel

/// A run's answers, stored (`check --record DIR`) to be compared with another build's (`iapcheck diff --against DIR`,
/// docs/diff.md): one file, `answers.jsonl`, whose first line says what run it is (the run identity, the validator,
/// iapcheck's version) and each further line one case's transcript. Lines are written as cases finish, so a run
/// stopped half way keeps what it recorded. An answer met before in the same case is stored as `"=K"` (the same as
/// the entry of step K): most answers of a case repeat.
public struct Recording: Sendable {
    public struct Header: Codable, Sendable {
        public var format = 1
        /// The version of iapcheck that recorded (another version may generate other cases).
        public var iapcheck: String
        public var validator: String
        /// Seed, cases, properties, policy, catalog and profile: what made the cases these cases.
        public var identity: RunIdentity

        public init(iapcheck: String, validator: String, identity: RunIdentity) {
            (self.iapcheck, self.validator, self.identity) = (iapcheck, validator, identity)
        }
    }

    /// One case's line.
    public struct Case: Sendable {
        public var index: Int
        /// ``Transcript/fingerprint(of:)`` of the case as recorded.
        public var fingerprint: String
        public var transcript: Transcript
    }

    public static let fileName = "answers.jsonl"

    public var header: Header
    public var cases: [Int: Case] = [:]

    /// Reads `directory/answers.jsonl`; a file that is not a recording is refused, naming the file and line.
    public static func load(directory: String) throws(ConfigError) -> Recording {
        let path = (directory as NSString).appendingPathComponent(fileName)
        let data = try StrictJSON.readFile(path, maxBytes: StrictJSON.ownOutput)
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        guard let first = lines.first, let header = try? JSONDecoder().decode(Header.self, from: Data(first)) else {
            throw ConfigError(
                file: path, key: "line 1", "not a recording of answers; `iapcheck check --record DIR` writes one")
        }
        guard header.format == 1 else {
            throw ConfigError(
                file: path, key: "format", "format \(header.format) is not one this version reads (1): record again")
        }
        var r = Recording(header: header)
        for (n, line) in lines.dropFirst().enumerated() {
            do {
                let c = try decodeCase(Data(line))
                r.cases[c.index] = c
            } catch {
                // The last line of a run killed while writing may be cut off: the cases before it stand.
                if n == lines.count - 2 { break }
                throw ConfigError(file: path, key: "line \(n + 2)", "not a recorded case: \(error)")
            }
        }
        return r
    }

    struct Line: Codable {
        var `case`: Int
        var fingerprint: String
        var steps: [Step]
    }

    /// An entry, or a reference to an earlier equal answer.
    enum Step: Codable {
        case entry(Transcript.Entry)
        case same(Int)

        init(from decoder: any Decoder) throws {
            if let s = try? decoder.singleValueContainer().decode(String.self), s.hasPrefix("="),
                let k = Int(s.dropFirst())
            {
                self = .same(k)
            } else {
                self = .entry(try Transcript.Entry(from: decoder))
            }
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .entry(let e): try e.encode(to: encoder)
            case .same(let k):
                var c = encoder.singleValueContainer()
                try c.encode("=\(k)")
            }
        }
    }

    static func decodeCase(_ data: Data) throws -> Case {
        let line = try JSONDecoder().decode(Line.self, from: data)
        var entries: [Transcript.Entry] = []
        for step in line.steps {
            switch step {
            case .entry(let e): entries.append(e)
            case .same(let k):
                guard k >= 0, k < entries.count else {
                    throw DecodingError.dataCorrupted(
                        .init(codingPath: [], debugDescription: "\"=\(k)\" names no earlier step"))
                }
                entries.append(entries[k])
            }
        }
        return Case(index: line.case, fingerprint: line.fingerprint, transcript: Transcript(entries: entries))
    }

    static func encodeCase(_ c: Case) throws -> Data {
        var steps: [Step] = []
        var firstAt: [EntitlementAnswer: Int] = [:]
        for (k, e) in c.transcript.entries.enumerated() {
            if case .answer(let a) = e, let earlier = firstAt[a] {
                steps.append(.same(earlier))
                continue
            }
            if case .answer(let a) = e { firstAt[a] = k }
            steps.append(.entry(e))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(Line(case: c.index, fingerprint: c.fingerprint, steps: steps))
    }

    /// Writes a recording line by line as cases finish.
    public final class Writer {
        let handle: FileHandle
        public let path: String

        /// Creates `directory` if needed and starts `answers.jsonl` with the header (replacing an older recording).
        public init(directory: String, header: Header) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = (directory as NSString).appendingPathComponent(Recording.fileName)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var first = try encoder.encode(header)
            first.append(UInt8(ascii: "\n"))
            try first.write(to: URL(fileURLWithPath: path))
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seekToEnd()
        }

        public func append(_ c: Case) throws {
            var line = try Recording.encodeCase(c)
            line.append(UInt8(ascii: "\n"))
            try handle.write(contentsOf: line)
        }

        public func close() { try? handle.close() }
    }
}
