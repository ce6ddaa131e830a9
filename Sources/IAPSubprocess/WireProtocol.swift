import Foundation
import IAPEncoding
import IAPModel
import IAPValidatorAPI

/// The subprocess wire protocol, version 1: one JSON object per line on the validator's stdin (requests) and stdout
/// (replies), in order, one reply per request. Documented in `docs/wire-protocol.md`.
public enum WireProtocol {
    public static let version = 1

    /// A request from the harness.
    public struct Request: Codable, Sendable {
        public var id: Int
        /// `hello`, `reset`, `deliver`, `query`.
        public var type: String
        public var config: ValidatorConfig?
        public var now: Millis?
        public var delivery: SignedDelivery?
        public var query: EntitlementQuery?
        public init(
            id: Int, type: String, config: ValidatorConfig? = nil, now: Millis? = nil, delivery: SignedDelivery? = nil,
            query: EntitlementQuery? = nil
        ) {
            self.id = id
            self.type = type
            self.config = config
            self.now = now
            self.delivery = delivery
            self.query = query
        }
    }

    /// A reply from the validator.
    public struct Reply: Codable, Sendable {
        public var id: Int
        /// `hello`, `ok`, `verdict`, `answer`, `error`.
        public var type: String
        public var name: String?
        public var `protocol`: Int?
        public var capabilities: [String]?
        /// `hello`: the answer fields the validator answers (``AnswerField`` names); absent: protocol v1's fields.
        public var answers: [String]?
        /// `hello`: the channels the validator takes facts from (protocol names); absent: all four.
        public var channels: [String]?
        /// `hello`: how exact the validator's dates are, in ms (1000: it keeps seconds); absent: 1.
        public var datePrecision: Int64?
        public var accepted: Bool?
        public var reason: String?
        public var answer: EntitlementAnswer?
        /// For `error`: `unknown-message`, `bad-request`, `internal`.
        public var code: String?
        public var message: String?
        public init(id: Int, type: String) {
            self.id = id
            self.type = type
        }
    }

    public static let encoder: JSONEncoder = JSONFormat.compact()

    /// Serves `validator` on stdin/stdout until stdin closes: the in-process reference (or a mutant) as a
    /// subprocess validator, and a model for implementers.
    ///
    /// With `journal`, every `reset` and `deliver` is appended to that file as a ``JournalEntry`` line and flushed to
    /// disk before the reply — a durable acknowledgement — and a restarted server replays the journal first, so nothing it acknowledged is
    /// lost. `ackBeforePersist > 1` is the deliberate bug for the `durable-ack` property: deliveries are written in
    /// batches of that size, after they were acknowledged.
    ///
    /// With `profile`, the `hello` declares it and answers carry only the lists and fields it declares (`serve
    /// --answers/--channels`): the reference or a mutant as a validator that answers in entitlements, say.
    // long by design: the server loop of the wire protocol, one case per message type, reads best whole.
    public static func serve(
        _ validator: any Validator, journal: String? = nil, ackBeforePersist: Int = 1, profile: ValidatorProfile? = nil,
        input: FileHandle = .standardInput, output: FileHandle = .standardOutput
    ) {
        let decoder = JSONDecoder()
        let encoder = JSONFormat.compact()
        if let profile { encoder.userInfo[ValidatorProfile.codingKey] = profile }
        var buffer = Data()
        var log: FileHandle?
        var pending: [Data] = []
        if let journal {
            let regular =
                (try? FileManager.default.attributesOfItem(atPath: journal)[.type] as? FileAttributeType)
                == .typeRegular
            if regular, let old = try? Data(contentsOf: URL(fileURLWithPath: journal)) {
                // Only whole lines: a last line without its newline was torn by a kill mid-write, so it was never
                // acknowledged (the reply is sent after the flush of the line and its newline).
                var lines = old.split(separator: 0x0A, omittingEmptySubsequences: false)
                lines.removeLast()  // after the last newline: empty, or torn
                for line in lines {
                    guard let entry = JournalEntry(line: String(decoding: line, as: UTF8.self)) else { continue }
                    try? entry.replay(into: validator)
                }
            }
            if !FileManager.default.fileExists(atPath: journal) {
                FileManager.default.createFile(atPath: journal, contents: nil)
            }
            log = FileHandle(forWritingAtPath: journal)
            _ = try? log?.seekToEnd()
        }
        /// Appends to the journal and flushes it to disk before the reply; a failure fails the request (an
        /// acknowledgement that would not survive a crash must not be sent).
        func persist(_ entry: JournalEntry, truncate: Bool = false) throws(JournalFailure) {
            guard let log else { return }
            do {
                if truncate {
                    pending = []
                    if (try? FileManager.default.attributesOfItem(atPath: journal ?? "")[.type] as? FileAttributeType)
                        == .typeRegular
                    {
                        try log.truncate(atOffset: 0)
                    }
                }
                pending.append(Data((entry.line + "\n").utf8))
                guard truncate || pending.count >= ackBeforePersist else { return }
                let batch = pending.reduce(Data(), +)
                pending = []
                try log.write(contentsOf: batch)
                try log.synchronize()
            } catch {
                throw JournalFailure(message: "journal \(journal ?? ""): \(StrictJSON.reason(error))")
            }
        }
        func reply(_ r: Reply) {
            var line = (try? encoder.encode(r)) ?? Data(#"{"type":"error","code":"internal","id":-1}"#.utf8)
            line.append(0x0A)
            output.write(line)
        }
        // Bytes at the start of `buffer` already known to hold no newline: a request of several megabytes (a long
        // history's API answer) arrives in many chunks, and rescanning it from the start for each would be quadratic.
        var scanned = 0
        while true {
            let chunk = input.availableData
            if chunk.isEmpty { return }
            buffer.append(chunk)
            while let nl = Self.newline(in: buffer, after: scanned) {
                scanned = 0
                let line = buffer[buffer.startIndex..<nl]
                buffer.removeSubrange(buffer.startIndex...nl)
                guard !line.isEmpty else { continue }
                guard let req = try? decoder.decode(Request.self, from: line) else {
                    var r = Reply(id: -1, type: "error")
                    r.code = "bad-request"
                    r.message = "not a request object"
                    reply(r)
                    continue
                }
                var r = Reply(id: req.id, type: "ok")
                do {
                    switch req.type {
                    case "hello":
                        r.type = "hello"
                        r.name = validator.name
                        r.protocol = version
                        r.capabilities = (profile?.channels ?? DeliveryChannel.allCases).map(\.protocolName)
                        r.answers = profile?.answers.map(\.rawValue)
                        r.channels = profile?.channels.map(\.protocolName)
                    case "reset":
                        guard let c = req.config else {
                            throw ValidatorFailure(.protocolViolation, "reset without config")
                        }
                        try validator.reset(c)
                        try persist(.reset(c), truncate: true)
                    case "deliver":
                        guard let d = req.delivery else {
                            throw ValidatorFailure(.protocolViolation, "deliver without delivery")
                        }
                        let v = try validator.deliver(d, now: req.now ?? 0)
                        try persist(.delivery(d, now: req.now ?? 0))
                        r.type = "verdict"
                        r.accepted = v.isAccepted
                        if case .rejected(let why) = v { r.reason = why }
                    case "query":
                        guard let q = req.query else {
                            throw ValidatorFailure(.protocolViolation, "query without query")
                        }
                        r.type = "answer"
                        r.answer = try validator.entitlements(q)
                    default:
                        r.type = "error"
                        r.code = "unknown-message"
                        r.message = "unknown message type \(req.type)"
                    }
                } catch let e as JournalFailure {
                    r = Reply(id: req.id, type: "error")
                    r.code = "internal"
                    r.message = "not persisted, so not acknowledged: \(e.message)"
                } catch {
                    r.type = "error"
                    r.code = "bad-request"
                    r.message = "\(error)"
                }
                reply(r)
            }
            scanned = buffer.count
        }
    }

    /// The index of the first newline of `data` at or after offset `from` (memchr over the bytes).
    static func newline(in data: Data, after from: Int) -> Data.Index? {
        guard from < data.count else { return nil }
        return data.withUnsafeBytes { raw -> Data.Index? in
            guard let base = raw.baseAddress, let hit = memchr(base + from, 0x0A, raw.count - from) else { return nil }
            return data.startIndex + (UnsafeRawPointer(hit) - base)
        }
    }
}

/// Writing or flushing `serve --journal` failed (a full disk, a read-only file system).
struct JournalFailure: Error {
    var message: String
}
