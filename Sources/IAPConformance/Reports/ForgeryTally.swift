import Dispatch
import Foundation
import IAPModel
import IAPOracle
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// How each forgery class fared: how many were sent and how many the validator rejected, in all and per channel.
public struct ForgeryTally: Codable, Hashable, Sendable {
    public struct Count: Codable, Hashable, Sendable {
        public var sent = 0
        public var rejected = 0
    }
    public var sent: [String: Int] = [:]
    public var rejected: [String: Int] = [:]
    /// Class → channel → count.
    public var channels: [String: [DeliveryChannel: Count]] = [:]
    /// Not a forgery count, but counted on the same path: the parallel-delivery race's deliveries that failed
    /// there and were taken when sent again alone.
    public var race = RaceTally()
    public init() {}

    public mutating func record(_ f: ForgeryClass, on channel: DeliveryChannel, rejected wasRejected: Bool) {
        sent[f.rawValue, default: 0] += 1
        channels[f.rawValue, default: [:]][channel, default: Count()].sent += 1
        if wasRejected { reject(f, on: channel) }
    }

    public mutating func reject(_ f: ForgeryClass, on channel: DeliveryChannel) {
        rejected[f.rawValue, default: 0] += 1
        channels[f.rawValue, default: [:]][channel, default: Count()].rejected += 1
    }

    public mutating func merge(_ o: ForgeryTally) {
        race.merge(o.race)
        for (k, v) in o.sent { sent[k, default: 0] += v }
        for (k, v) in o.rejected { rejected[k, default: 0] += v }
        for (k, byChannel) in o.channels {
            for (ch, c) in byChannel {
                channels[k, default: [:]][ch, default: Count()].sent += c.sent
                channels[k, default: [:]][ch, default: Count()].rejected += c.rejected
            }
        }
    }
}

/// Deliveries that failed in the two-client race of `--parallel` (a 5xx of a backend that lost a write conflict, a
/// dropped connection) and were taken when sent again alone: no failure, as Apple sends again, but worth a line.
public struct RaceTally: Codable, Hashable, Sendable {
    public var sentAlone = 0
    /// The first of those failures, as the validator gave it.
    public var first: String?

    public mutating func merge(_ o: RaceTally) {
        sentAlone += o.sentAlone
        if first == nil { first = o.first }
    }

    public func merged(_ o: RaceTally) -> RaceTally {
        var m = self
        m.merge(o)
        return m
    }

    /// The line a run prints when the race had any (nil when none).
    public var line: String? {
        guard sentAlone > 0 else { return nil }
        let example = first.map { " (the first: \($0.prefix(160)))" } ?? ""
        return
            "parallel-delivery: \(sentAlone) deliveries were sent again alone after failing in the two-client race (or after a failure stopped it), and were taken then, as when Apple or an app sends again\(example)"
    }
}
