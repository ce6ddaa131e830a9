import IAPEncoding

extension ResponseBodyV2SignedPayload {
    /// The envelope read by ``FlatJSON`` (see ``JWSTransactionDecodedPayload/init(flatJSON:)``), or nil: then
    /// `JSONDecoder` decides. Only `data` may be an object here; an envelope with a `summary` or an
    /// `externalPurchaseToken` goes to JSONDecoder.
    public init?(flatJSON bytes: UnsafeBufferPointer<UInt8>) {
        var seen = 0
        var type: String?, uuid: String?, signed: Int64?
        var n = ResponseBodyV2SignedPayload(
            notificationType: .test, subtype: nil, notificationUUID: "", version: nil, signedDate: 0, data: nil)
        let read = FlatJSON.members(bytes, keys: Self.flatKeys) { _, index, value in
            guard let index else { return true }  // a newer field: ignored
            guard seen & (1 << index) == 0 else { return false }
            seen |= 1 << index
            switch (FlatField(rawValue: index)!, value) {
            case (.notificationType, .string(let s)): type = s
            case (.notificationUUID, .string(let s)): uuid = s
            case (.signedDate, .int(let t)): signed = t
            case (.subtype, .string(let s)): n.subtype = Subtype(rawValue: s)
            case (.subtype, .null), (.version, .null), (.data, .null): break
            case (.version, .string(let s)): n.version = s
            case (.data, .object(let range)):
                guard let d = Data(flatJSON: UnsafeBufferPointer(rebasing: bytes[range])) else { return false }
                n.data = d
            default: return false  // a wrong type, or summary / externalPurchaseToken: JSONDecoder's
            }
            return true
        }
        guard read, let type, let uuid, let signed else { return nil }
        n.notificationType = NotificationTypeV2(rawValue: type)
        n.notificationUUID = uuid
        n.signedDate = signed
        self = n
    }

    package enum FlatField: Int, CaseIterable {
        case notificationType, subtype, notificationUUID, version, signedDate, data, summary, externalPurchaseToken
    }

    static let flatKeys = FlatJSON.Keys(FlatField.allCases.map { "\($0)" })

    /// The envelope as `JSONFormat.compact()` encodes it, by hand; nil when it has a summary or an external
    /// purchase token, or a string would need an escape (then JSONEncoder writes it).
    public var compactJSON: [UInt8]? {
        guard summary == nil, externalPurchaseToken == nil else { return nil }
        // Room for the nested tokens (kilobytes each) and the rest, so the buffer never grows.
        var w = FlatJSON.Writer(
            capacity: 512 + (data?.signedRenewalInfo?.utf8.count ?? 0) + (data?.signedTransactionInfo?.utf8.count ?? 0))
        if let d = data {
            w.key("data")
            var inner = FlatJSON.Writer(continuing: w.out)
            w.out = []
            inner.int("appAppleId", d.appAppleId)
            guard inner.string("bundleId", d.bundleId), inner.string("bundleVersion", d.bundleVersion),
                inner.string("consumptionRequestReason", d.consumptionRequestReason?.rawValue),
                inner.string("environment", d.environment?.rawValue),
                inner.string("signedRenewalInfo", d.signedRenewalInfo),
                inner.string("signedTransactionInfo", d.signedTransactionInfo)
            else { return nil }
            inner.int("status", d.status.map { Int64($0.rawValue) })
            w.out = inner.finish()
        }
        guard w.string("notificationType", notificationType.rawValue),
            w.string("notificationUUID", notificationUUID)
        else { return nil }
        w.int("signedDate", signedDate)
        guard w.string("subtype", subtype?.rawValue), w.string("version", version) else { return nil }
        return w.finish()
    }
}

extension ResponseBodyV2SignedPayload.Data {
    /// The `data` object read by ``FlatJSON``, or nil (JSONDecoder decides).
    init?(flatJSON bytes: UnsafeBufferPointer<UInt8>) {
        var seen = 0
        var d = Self(
            appAppleId: nil, bundleId: nil, environment: nil, signedTransactionInfo: nil, signedRenewalInfo: nil,
            status: nil)
        let read = FlatJSON.members(bytes, keys: Self.flatKeys) { _, index, value in
            guard let index else { return true }
            guard seen & (1 << index) == 0 else { return false }
            seen |= 1 << index
            switch (FlatField(rawValue: index)!, value) {
            case (_, .null): break
            case (.appAppleId, .int(let n)): d.appAppleId = n
            case (.bundleId, .string(let s)): d.bundleId = s
            case (.bundleVersion, .string(let s)): d.bundleVersion = s
            case (.environment, .string(let s)): d.environment = Environment(rawValue: s)
            case (.signedTransactionInfo, .string(let s)): d.signedTransactionInfo = s
            case (.signedRenewalInfo, .string(let s)): d.signedRenewalInfo = s
            case (.status, .int(let n)): d.status = SubscriptionStatus(rawValue: Int(n))
            case (.consumptionRequestReason, .string(let s)):
                d.consumptionRequestReason = ConsumptionRequestReason(rawValue: s)
            default: return false
            }
            return true
        }
        guard read else { return nil }
        self = d
    }

    package enum FlatField: Int, CaseIterable {
        case appAppleId, bundleId, bundleVersion, environment, signedTransactionInfo, signedRenewalInfo, status
        case consumptionRequestReason
    }

    static let flatKeys = FlatJSON.Keys(FlatField.allCases.map { "\($0)" })
}

extension ResponseBodyV2SignedPayload: FlatJSONCodable {}
