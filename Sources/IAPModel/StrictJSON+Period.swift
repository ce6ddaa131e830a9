import IAPEncoding

/// Periods in configuration files: read by the strict reader, checked against what App Store Connect offers.
extension StrictJSON.Object {
    public func period(_ key: String, required: Bool = true) -> Period? {
        guard let s = string(key, required: required) else { return nil }
        guard let p = Period(iso8601: s) else {
            let zero = s.count >= 3 && s.first == "P" && Int(s.dropFirst().dropLast()) == 0
            reader.problem(
                keyPath(key),
                zero
                    ? "\"\(s)\" is a period of zero length: a product lasts at least one day (P1D)"
                    : "\"\(s)\" is not an ISO 8601 period such as P1W, P1M or P1Y")
            return nil
        }
        return p
    }

    /// An auto-renewable subscription's period: one of the durations App Store Connect offers (P1W, P1M, P2M,
    /// P3M, P6M, P1Y). Sandbox and Xcode accelerate renewals by their own settings, not by the period.
    public func renewalPeriod(_ key: String) -> Period? {
        guard let p = period(key) else { return nil }
        guard Period.appleRenewalPeriods.contains(p) else {
            reader.problem(
                keyPath(key),
                "\"\(p.iso8601)\" is not a period App Store Connect offers for auto-renewable subscriptions (\(Period.appleRenewalPeriods.map(\.iso8601).joined(separator: ", ")))"
            )
            return nil
        }
        return p
    }
}
