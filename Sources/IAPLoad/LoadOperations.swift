import Foundation
import Histogram
import IAPModel
import IAPValidatorAPI

/// One operation type's share of a load run (app transactions, notifications, questions, legacy receipts): its
/// requests, latency and errors by reason, each reason with the first request that met it.
public struct OperationResult: Sendable {
    public var corrected = LoadResults.latencyHistogram()
    public var requests = 0
    public var dropped = 0
    /// Reason → count (`refused: notification-conflict …`, `timeout: …`, `wrong answer: …`).
    public var errors: [String: Int] = [:]
    /// Reason → the first request that met it: its place in the run and what it carried.
    public var errorSamples: [String: String] = [:]

    public init() {}

    /// Distinct reasons kept per operation; beyond them, reasons are counted under ``otherReasons``.
    static let maxReasons = 24
    static let otherReasons = "other reasons"

    mutating func error(_ reason: String, sample: @autoclosure () -> String) {
        let key = errors[reason] != nil || errors.count < Self.maxReasons ? reason : Self.otherReasons
        errors[key, default: 0] += 1
        if errorSamples[key] == nil { errorSamples[key] = sample() }
    }

    mutating func add(_ o: OperationResult) {
        corrected.add(o.corrected)
        requests += o.requests
        dropped += o.dropped
        for (k, v) in o.errors {
            let key = errors[k] != nil || errors.count < Self.maxReasons ? k : Self.otherReasons
            errors[key, default: 0] += v
            if errorSamples[key] == nil { errorSamples[key] = o.errorSamples[k] }
        }
    }

    /// A reason as it is counted: the first 160 characters, with UUIDs and long numbers (ids, instants) replaced,
    /// so one kind of failure is one reason whatever ids it names.
    public static func reason(_ text: String) -> String {
        var s = String(text.prefix(400))
        s = s.replacingOccurrences(
            of: #"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"#, with: "<uuid>",
            options: .regularExpression)
        s = s.replacingOccurrences(of: #"\d{5,}"#, with: "<n>", options: .regularExpression)
        s = s.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
        return s.count > 160 ? String(s.prefix(159)) + "…" : s
    }

    /// The error a failed request counts as: its class (the run's `errors`) and its reason (per operation).
    static func classify(_ error: ValidatorFailure) -> (kind: String, reason: String) {
        switch error.kind {
        case .timedOut: ("timeout", "timeout: " + reason(error.message))
        case .badAnswer, .protocolViolation: ("malformed-answer", "malformed answer: " + reason(error.message))
        default: ("transport-error", "\(error.kind.rawValue): " + reason(error.message))
        }
    }
}

extension LoadResults {
    /// One operation's row of `summary.json` (`operations`).
    public struct OperationSummary: Codable, Sendable {
        public var operation: String
        public var requests: Int
        public var dropped: Int
        public var throughputPerSecond: Double
        /// From the intended send (coordinated omission corrected), microseconds: p50 … p99.99 and max.
        public var latencyMicros: [String: UInt64]
        public var errorRate: Double
        /// Reason → count.
        public var errors: [String: Int]
        /// Reason → the first request that met it.
        public var errorSamples: [String: String]
    }

    static func operationSummaries(_ ops: [OperationResult], seconds: Double) -> [OperationSummary] {
        LoadProfile.Operation.allCases.compactMap { op in
            let o = ops[op.index]
            guard o.requests + o.dropped > 0 else { return nil }
            let errors = o.errors.values.reduce(0, +)
            return OperationSummary(
                operation: op.rawValue, requests: o.requests, dropped: o.dropped,
                throughputPerSecond: Double(o.requests) / seconds, latencyMicros: spectrum(o.corrected),
                errorRate: o.requests > 0 ? Double(errors) / Double(o.requests) : 0, errors: o.errors,
                errorSamples: o.errorSamples)
        }
    }

    /// p50 … p99.99 and max of a histogram, microseconds (zeros when it is empty).
    static func spectrum(_ h: Histogram<UInt64>) -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        for (k, p) in percentiles { out[k] = h.totalCount > 0 ? h.valueAtPercentile(p) : 0 }
        out["max"] = h.totalCount > 0 ? h.max : 0
        return out
    }
}
