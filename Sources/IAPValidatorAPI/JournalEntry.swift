import Foundation
import IAPEncoding
import IAPModel

/// One entry of a durable journal: what a validator acknowledged (a reset, or a delivery at the validator's clock),
/// so that a validator killed and started again rebuilds exactly the state it acknowledged. Both journals iapcheck
/// ships use it: `iapcheck serve --journal FILE` (a file, flushed before each reply) and the example backend
/// (an SQLite table). Where the entries are kept is each one's business; what an entry says and how it is replayed
/// is decided here.
///
/// An entry is one line of tab-separated fields, cheap to write on the hot path: signed artifacts are already text
/// and are not encoded again.
///
///     R  0    {config JSON}
///     A  now  userId  deviceTime|-  signedTransaction
///     N  now  signedPayload
///     L  now  userId  verifyReceipt body
///     S  now  {any other delivery, or one whose text holds a tab or a line break, as JSON}
public enum JournalEntry: Sendable, Equatable {
    case reset(ValidatorConfig)
    case delivery(SignedDelivery, now: Millis)

    static let encoder = JSONFormat.compact()

    /// The entry as one line (no newline; the fields contain none: JSON and JWS are single-line).
    public var line: String {
        switch self {
        case .reset(let c):
            return "R\t0\t" + String(decoding: (try? Self.encoder.encode(c)) ?? Data(), as: UTF8.self)
        case .delivery(let d, let now):
            let t = String(now)
            func plain(_ fields: String...) -> Bool {
                !fields.contains { $0.utf8.contains { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D } }
            }
            switch d {
            case let .appTransaction(userId, jws, deviceTime) where plain(userId, jws):
                return "A\t\(t)\t\(userId)\t\(deviceTime.map(String.init) ?? "-")\t\(jws)"
            case .notification(let jws) where plain(jws): return "N\t\(t)\t\(jws)"
            case let .legacyReceipt(userId, body) where plain(userId, body):
                return "L\t\(t)\t\(userId)\t\(body)"
            default:
                return "S\t\(t)\t" + String(decoding: (try? Self.encoder.encode(d)) ?? Data(), as: UTF8.self)
            }
        }
    }

    /// The entry a line holds, or nil for a line that is not one (a torn last write, another format).
    public init?(line: String) {
        let f = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
        guard f.count >= 3, let t = Millis(f[1]) else { return nil }
        let decoder = JSONDecoder()
        switch f[0] {
        case "R":
            guard let c = try? decoder.decode(ValidatorConfig.self, from: Data(f[2...].joined(separator: "\t").utf8))
            else { return nil }
            self = .reset(c)
        case "A" where f.count == 5:
            self = .delivery(.appTransaction(userId: f[2], signedTransaction: f[4], deviceTime: Millis(f[3])), now: t)
        case "N": self = .delivery(.notification(signedPayload: f[2...].joined(separator: "\t")), now: t)
        case "L" where f.count >= 4:
            self = .delivery(.legacyReceipt(userId: f[2], responseBody: f[3...].joined(separator: "\t")), now: t)
        case "S":
            guard
                let d = try? decoder.decode(SignedDelivery.self, from: Data(f[2...].joined(separator: "\t").utf8))
            else { return nil }
            self = .delivery(d, now: t)
        default: return nil
        }
    }

    /// Applies the entry to `validator` as when it was acknowledged.
    public func replay(into validator: any Validator) throws(ValidatorFailure) {
        switch self {
        case .reset(let c): try validator.reset(c)
        case .delivery(let d, let now): _ = try validator.deliver(d, now: now)
        }
    }
}
