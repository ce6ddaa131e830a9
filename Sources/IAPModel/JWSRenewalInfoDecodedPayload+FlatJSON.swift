import IAPEncoding

extension JWSRenewalInfoDecodedPayload {
    /// The payload read by ``FlatJSON`` (see ``JWSTransactionDecodedPayload/init(flatJSON:)``), or nil: then
    /// `JSONDecoder` decides. A renewal info with `eligibleWinBackOfferIds` (an array) always goes to JSONDecoder.
    public init?(flatJSON bytes: UnsafeBufferPointer<UInt8>) {
        var r = JWSRenewalInfoDecodedPayload(
            originalTransactionId: "", productId: "", autoRenewProductId: nil, autoRenewStatus: nil, signedDate: 0,
            environment: .production)
        let read = FlatJSON.read(bytes, Self.flat) { index, text, number, flag in
            switch FlatField(rawValue: index)! {
            case .originalTransactionId: r.originalTransactionId = text!
            case .productId: r.productId = text!
            case .signedDate: r.signedDate = number!
            case .environment: r.environment = Environment(rawValue: text!)
            case .autoRenewProductId: r.autoRenewProductId = text
            case .autoRenewStatus: r.autoRenewStatus = number.map { AutoRenewStatus(rawValue: Int($0)) }
            case .gracePeriodExpiresDate: r.gracePeriodExpiresDate = number
            case .expirationIntent: r.expirationIntent = number.map { ExpirationIntent(rawValue: Int($0)) }
            case .priceIncreaseStatus: r.priceIncreaseStatus = number.map { PriceIncreaseStatus(rawValue: Int($0)) }
            case .offerType: r.offerType = number.map { OfferType(rawValue: Int($0)) }
            case .offerIdentifier: r.offerIdentifier = text
            case .offerDiscountType: r.offerDiscountType = text.map(OfferDiscountType.init(rawValue:))
            case .offerPeriod: r.offerPeriod = text
            case .renewalDate: r.renewalDate = number
            case .recentSubscriptionStartDate: r.recentSubscriptionStartDate = number
            case .renewalPrice: r.renewalPrice = number
            case .currency: r.currency = text
            case .appAccountToken: r.appAccountToken = text
            case .appTransactionId: r.appTransactionId = text
            case .isInBillingRetryPeriod: r.isInBillingRetryPeriod = flag
            case .eligibleWinBackOfferIds: return false  // an array: JSONDecoder's
            }
            return true
        }
        guard read else { return nil }
        self = r
    }

    /// The fields FlatJSON reads, named as in the JSON. `eligibleWinBackOfferIds` is an array: listed so that it is
    /// recognised (an unknown field would be skipped) and then left to JSONDecoder.
    package enum FlatField: Int, CaseIterable {
        case originalTransactionId, productId, signedDate, environment, autoRenewProductId, autoRenewStatus
        case isInBillingRetryPeriod, gracePeriodExpiresDate, expirationIntent, priceIncreaseStatus, offerType
        case offerIdentifier, offerDiscountType, offerPeriod, renewalDate, recentSubscriptionStartDate
        case renewalPrice, currency, appAccountToken, appTransactionId, eligibleWinBackOfferIds
    }

    /// Each field's kind and whether it is required.
    static let flat = FlatJSON.Table(
        FlatField.allCases.map { f -> (String, FlatJSON.Kind) in
            switch f {
            case .signedDate, .autoRenewStatus, .gracePeriodExpiresDate, .expirationIntent, .priceIncreaseStatus,
                .offerType, .renewalDate, .recentSubscriptionStartDate, .renewalPrice:
                ("\(f)", .number)
            case .isInBillingRetryPeriod: ("\(f)", .flag)
            default: ("\(f)", .text)
            }
        },
        required: ["originalTransactionId", "productId", "signedDate", "environment"])

    /// The payload as `JSONFormat.compact()` encodes it, by hand (see ``JWSTransactionDecodedPayload/compactJSON``);
    /// nil when a string would need an escape.
    public var compactJSON: [UInt8]? {
        var w = FlatJSON.Writer()
        guard w.string("appAccountToken", appAccountToken), w.string("appTransactionId", appTransactionId),
            w.string("autoRenewProductId", autoRenewProductId)
        else { return nil }
        w.int("autoRenewStatus", autoRenewStatus.map { Int64($0.rawValue) })
        guard w.string("currency", currency) else { return nil }
        if let ids = eligibleWinBackOfferIds {
            w.key("eligibleWinBackOfferIds")
            w.out.append(0x5B)
            for (i, id) in ids.enumerated() {
                if i > 0 { w.out.append(0x2C) }
                guard w.quoted(id) else { return nil }
            }
            w.out.append(0x5D)
        }
        guard w.string("environment", environment.rawValue) else { return nil }
        w.int("expirationIntent", expirationIntent.map { Int64($0.rawValue) })
        w.int("gracePeriodExpiresDate", gracePeriodExpiresDate)
        w.bool("isInBillingRetryPeriod", isInBillingRetryPeriod)
        guard w.string("offerDiscountType", offerDiscountType?.rawValue), w.string("offerIdentifier", offerIdentifier),
            w.string("offerPeriod", offerPeriod)
        else { return nil }
        w.int("offerType", offerType.map { Int64($0.rawValue) })
        guard w.string("originalTransactionId", originalTransactionId) else { return nil }
        w.int("priceIncreaseStatus", priceIncreaseStatus.map { Int64($0.rawValue) })
        guard w.string("productId", productId) else { return nil }
        w.int("recentSubscriptionStartDate", recentSubscriptionStartDate)
        w.int("renewalDate", renewalDate)
        w.int("renewalPrice", renewalPrice)
        w.int("signedDate", signedDate)
        return w.finish()
    }
}

extension FlatJSON {
    /// Writes a sorted-key compact object the way JSONEncoder writes it: keys are given in order; a string that
    /// would need an escape fails the write (the caller falls back to JSONEncoder).
    struct Writer {
        var out: [UInt8]
        var first = true

        /// `capacity`: the bytes the object is expected to take (a transaction's is under 1 KB; a notification's
        /// holds two nested tokens of kilobytes, and growing the buffer copies what was written).
        init(capacity: Int = 1024) {
            out = []
            out.reserveCapacity(capacity)
        }

        /// A nested object written at the end of `out` (taken over, so appending does not copy it): its text is
        /// `out` again after ``finish()``.
        init(continuing out: consuming [UInt8]) { self.out = out }

        mutating func key(_ k: StaticString) {
            out.append(first ? 0x7B : 0x2C)
            first = false
            out.append(0x22)
            out.append(contentsOf: UnsafeBufferPointer(start: k.utf8Start, count: k.utf8CodeUnitCount))
            out.append(0x22)
            out.append(0x3A)
        }

        mutating func quoted(_ v: String) -> Bool {
            var v = v
            return v.withUTF8 { utf8 in
                // Checked first, copied in one go: a notification's nested JWS strings are kilobytes long.
                if FlatJSON.needsEscape(utf8) { return false }
                out.append(0x22)
                out.append(contentsOf: utf8)
                out.append(0x22)
                return true
            }
        }

        mutating func string(_ k: StaticString, _ v: String?) -> Bool {
            guard let v else { return true }
            key(k)
            return quoted(v)
        }

        mutating func int(_ k: StaticString, _ v: Int64?) {
            guard let v else { return }
            key(k)
            // Digits written straight into the buffer: `String(v)` allocated a string for each of a payload's
            // dozen integers.
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: Int64.min has 20 characters
            withUnsafeMutableBytes(of: &digits) { buf in
                var m = v.magnitude, i = buf.count
                repeat {
                    i -= 1
                    buf[i] = UInt8(truncatingIfNeeded: m % 10) &+ 0x30
                    m /= 10
                } while m != 0
                if v < 0 {
                    i -= 1
                    buf[i] = 0x2D  // -
                }
                out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[i...]))
            }
        }

        mutating func bool(_ k: StaticString, _ v: Bool?) {
            guard let v else { return }
            key(k)
            out.append(contentsOf: (v ? "true" : "false").utf8)
        }

        /// The text, moved out (the writer is left empty), so that the caller holds the only reference to it.
        mutating func finish() -> [UInt8] {
            if first { out.append(0x7B) }
            out.append(0x7D)
            var text: [UInt8] = []
            swap(&text, &out)
            return text
        }
    }
}

extension JWSRenewalInfoDecodedPayload: FlatJSONCodable {}
