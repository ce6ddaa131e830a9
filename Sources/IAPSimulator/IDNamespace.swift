import Foundation
import IAPModel
import IAPSupport

/// Ids of their own for one run of a case against a validator that keeps its state (a backend without a `reset`
/// route, docs/http-target.md#backends-without-a-reset-route), and for each history of a load run's pool: user ids
/// and `appAccountToken`s, transaction, original-transaction and `webOrderLineItemId`s, `notificationUUID`s. State an
/// earlier case or an earlier run left in the backend then never meets a new case, a shrink's every attempt is a new
/// purchase history, and no two histories of a load pool share an id.
///
/// Only the ids change: the case means the same (the timeline, the oracle's answer and every verdict are those of
/// the case as generated). Ids keep Apple's shapes: a transaction id stays a 16-digit number below 2^53 (the size
/// of Apple's; a backend may hold it in a double), a UUID stays a version-4 UUID with its last fields (so
/// timelines' `…0001` still names the same transaction).
public struct IDNamespace: Sendable, Hashable {
    /// Below 10^10: the ten digits between a transaction id's leading 2 and its case-local five.
    public let value: Int64

    public init(value: Int64) {
        precondition(value >= 0 && value < Self.size)
        self.value = value
    }

    static let size: Int64 = 10_000_000_000
    /// Where a case numbers its ids from (``StoreSimulator``): 2000000000000000 + n.
    static let caseBase: Int64 = 2_000_000_000_000_000
    static let caseLocal: Int64 = 100_000

    /// The namespaces a process hands out: a clock in hundredths of a second since 2026 that never repeats a value
    /// (each run starts at the wall clock's count, each further case takes the next, ahead of the clock if need
    /// be), so a later run against the same backend starts past an earlier one unless that one ran ahead by more
    /// than the time between them; it wraps after about three years. `--shard i/N` runs take the values ≡ i mod N,
    /// so shards checking one backend at the same time never share one.
    static let allocator = Locked<(last: Int64, slot: Int64, of: Int64)>((-1, 0, 1))

    /// Shards of one run share a backend safely: this process takes only values ≡ `index` mod `count`.
    public static func configure(shard index: Int, of count: Int) {
        allocator.withLock { $0 = ($0.last, Int64(index), Int64(max(1, count))) }
    }

    /// A namespace no earlier call in this process returned (nor, in all likelihood, an earlier run).
    public static func next() -> IDNamespace {
        let since2026 = Int64(Date().timeIntervalSince1970 * 100) - 1_767_225_600 * 100
        return allocator.withLock { state in
            var candidate = max(state.last + 1, since2026)
            // The shard's residue class.
            let r = ((candidate % state.of) + state.of) % state.of
            if r != state.slot { candidate += (state.slot - r + state.of) % state.of }
            state.last = candidate
            return IDNamespace(value: ((candidate % size) + size) % size)
        }
    }

    /// `2000000000000042` → `2` + ten digits of the namespace + `00042`. Other ids (a case's ids are all of that
    /// form) stay as they are.
    public func transactionId(_ id: String) -> String {
        guard let n = Int64(id), n >= Self.caseBase, n < Self.caseBase + Self.caseLocal * 10_000 else { return id }
        let local = n - Self.caseBase
        guard local < Self.caseLocal else {
            // Beyond any case seen so far (100,000 ids): longer, still within a signed 64-bit integer.
            return "2" + Self.digits(value, 10) + Self.digits(local, 8)
        }
        return "2" + Self.digits(value, 10) + Self.digits(local, 5)
    }

    /// A UUID with its first two fields (48 bits) replaced by the namespace and 12 bits of what they were (so two ids
    /// of a case that differ only there, such as a forged copy's, stay apart); its version, variant and last field
    /// (where a case's counters are) kept.
    public func uuid(_ id: String) -> String {
        let u = Array(id.utf8)
        guard u.count == 36, u[8] == 0x2D, u[13] == 0x2D, u[18] == 0x2D, u[23] == 0x2D else { return id }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in u[0..<13] { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        let bits = UInt64(value) << 12 | (h & 0xfff)
        var hex = String(bits, radix: 16)
        hex = String(repeating: "0", count: 12 - hex.count) + hex
        return String(hex.prefix(8)) + "-" + String(hex.suffix(4)) + String(decoding: u[13...], as: UTF8.self)
    }

    /// `text` with this namespace's part of every id it made replaced by `<run>`: what a validator said about one run
    /// (a refusal naming a transaction id), comparable with what it said about another run of the same case.
    public func generalizing(_ text: String) -> String {
        let hex = String(UInt64(value) << 12, radix: 16)
        let padded = String(repeating: "0", count: 12 - hex.count) + hex
        return
            text
            .replacingOccurrences(of: "2" + Self.digits(value, 10), with: "2<run>")
            .replacingOccurrences(of: padded.prefix(8) + "-" + padded.dropFirst(8).prefix(1), with: "<run>-")
    }

    static func digits(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    public func apply(_ tx: JWSTransactionDecodedPayload) -> JWSTransactionDecodedPayload {
        var t = tx
        t.transactionId = transactionId(tx.transactionId)
        t.originalTransactionId = transactionId(tx.originalTransactionId)
        if let w = tx.webOrderLineItemId { t.webOrderLineItemId = transactionId(w) }
        if let a = tx.appAccountToken { t.appAccountToken = uuid(a) }
        if let a = tx.appTransactionId { t.appTransactionId = transactionId(a) }
        return t
    }

    public func apply(_ r: JWSRenewalInfoDecodedPayload) -> JWSRenewalInfoDecodedPayload {
        var t = r
        t.originalTransactionId = transactionId(r.originalTransactionId)
        if let a = r.appAccountToken { t.appAccountToken = uuid(a) }
        if let a = r.appTransactionId { t.appTransactionId = transactionId(a) }
        return t
    }

    public func apply(_ n: ResponseBodyV2DecodedPayload) -> ResponseBodyV2DecodedPayload {
        var t = n
        t.notificationUUID = uuid(n.notificationUUID)
        if var d = n.data {
            d.transactionInfo = d.transactionInfo.map(apply)
            d.renewalInfo = d.renewalInfo.map(apply)
            t.data = d
        }
        if var s = n.summary, let id = s.requestIdentifier {
            s.requestIdentifier = uuid(id)
            t.summary = s
        }
        return t
    }

    public func apply(_ s: APISnapshot) -> APISnapshot {
        APISnapshot(
            originalTransactionId: transactionId(s.originalTransactionId), transactions: s.transactions.map(apply),
            renewalInfos: s.renewalInfos.map(apply))
    }

    public func apply(_ d: Delivery) -> Delivery {
        switch d {
        case .appTransaction(let s):
            return .appTransaction(
                AppTransactionSubmission(
                    userId: uuid(s.userId), transaction: apply(s.transaction), deviceTime: s.deviceTime))
        case .notification(let n): return .notification(apply(n))
        case .apiSnapshot(let s): return .apiSnapshot(apply(s))
        case .legacyReceipt(let l):
            var r = l
            r.userId = uuid(l.userId)
            r.chains = l.chains.map(apply)
            r.inApp = l.inApp.map { $0.map(apply) }
            return .legacyReceipt(r)
        }
    }
}
