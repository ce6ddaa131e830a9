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
