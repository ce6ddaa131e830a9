import IAPEncoding

/// Periods in configuration files: read by the strict reader, checked against what App Store Connect offers.
extension StrictJSON.Object {
    public func period(_ key: String, required: Bool = true) -> Period? {
        guard let s = string(key, required: required) else { return nil }
        guard let p = Period(iso8601: s) else {
            // P<digits><unit> that does not parse is zero or too long; anything else is no period at all.
            let digits = s.count >= 3 && s.first == "P" && "DWMY".contains(s.last!) ? s.dropFirst().dropLast() : ""
            let counted = !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
            reader.problem(
                keyPath(key),
                counted && digits.allSatisfy { $0 == "0" }
                    ? "\"\(s)\" is a period of zero length: a product lasts at least one day (P1D)"
                    : counted
                        ? "\"\(s)\" is longer than any App Store period (iapcheck takes at most 1000 of a unit)"
                        : "\"\(s)\" is not an ISO 8601 period such as P1W, P1M or P1Y")
            return nil
        }
        return p
    }

    /// An offer's period (a free trial's length, or one period of a pay-up-front or pay-as-you-go price): one of the
    /// durations App Store Connect offers for them (P3D, P1W, P2W, P1M, P2M, P3M, P6M, P1Y). A longer one is no
    /// offer the App Store sells, and would carry histories years past what any check needs.
    public func offerPeriod(_ key: String) -> Period? {
        period(
            key, among: Period.appleOfferPeriods, "is not a duration App Store Connect offers for a subscription offer")
    }

    /// An auto-renewable subscription's period: one of the durations App Store Connect offers (P1W, P1M, P2M,
    /// P3M, P6M, P1Y). Sandbox and Xcode accelerate renewals by their own settings, not by the period.
    public func renewalPeriod(_ key: String) -> Period? {
        period(
            key, among: Period.appleRenewalPeriods,
            "is not a period App Store Connect offers for auto-renewable subscriptions")
    }

    /// The period at `key` when it is one of `allowed`; otherwise a problem saying `why` and listing them.
    func period(_ key: String, among allowed: [Period], _ why: String) -> Period? {
        guard let p = period(key) else { return nil }
        guard allowed.contains(p) else {
            reader.problem(keyPath(key), "\"\(p.iso8601)\" \(why) (\(allowed.map(\.iso8601).joined(separator: ", ")))")
            return nil
        }
        return p
    }
}
