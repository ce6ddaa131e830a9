/// A subscription or offer period in ISO 8601 form (`P1W`, `P1M`, `P3D`, `P1Y`), as Apple and `.storekit` files
/// write it.
///
/// Only the store simulator adds periods to dates. The oracle and the reference validator never do: Apple says not
/// to compute expiry as purchase + duration (docs/semantics.md#product-types), and they use `expiresDate`.
public struct Period: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Unit: String, Sendable, Codable { case day = "D", week = "W", month = "M", year = "Y" }
    public var count: Int
    public var unit: Unit

    public init(_ count: Int, _ unit: Unit) {
        self.count = count
        self.unit = unit
    }

    /// Parses `P<n><D|W|M|Y>`; nil for anything else.
    public init?(iso8601 text: String) {
        guard text.count >= 3, text.first == "P", let u = text.last.flatMap({ Unit(rawValue: String($0)) }),
            let n = Int(text.dropFirst().dropLast()), n > 0, n <= 1000
        else { return nil }
        self.init(n, u)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let p = Period(iso8601: s) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 period like P1M: \(s)")
        }
        self = p
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    public var description: String { "P\(count)\(unit.rawValue)" }
    public var iso8601: String { description }

    /// The durations App Store Connect offers for auto-renewable subscriptions.
    /// The durations App Store Connect offers for a subscription offer's period (`SubscriptionOfferDuration`).
    public static let appleOfferPeriods: [Period] = [
        Period(3, .day), Period(1, .week), Period(2, .week), Period(1, .month), Period(2, .month), Period(3, .month),
        Period(6, .month), Period(1, .year),
    ]

    public static let appleRenewalPeriods: [Period] = [
        Period(1, .week), Period(1, .month), Period(2, .month), Period(3, .month), Period(6, .month), Period(1, .year),
    ]

    /// Rough length in days, for ordering periods (weekly < monthly < yearly) and for sizing generated gaps.
    public var approximateDays: Int {
        switch unit {
        case .day: count
        case .week: 7 * count
        case .month: 30 * count
        case .year: 365 * count
        }
    }

    /// `start` plus this period on the UTC calendar; months follow the anniversary, clamped to the month's end
    /// (Jan 31 + P1M = Feb 28/29), as observed for App Store renewals.
    public func added(to start: Millis) -> Millis {
        switch unit {
        case .day: return start + Int64(count) * CivilTime.msPerDay
        case .week: return start + Int64(7 * count) * CivilTime.msPerDay
        case .month: return CivilTime.addingMonths(count, to: start)
        case .year: return CivilTime.addingMonths(12 * count, to: start)
        }
    }
}

/// Gregorian calendar arithmetic on UTC epoch milliseconds (Howard Hinnant's days-from-civil algorithms),
/// so that periods are exact and deterministic without Foundation's Calendar.
public enum CivilTime {
    public static let msPerSecond: Int64 = 1000
    public static let msPerMinute: Int64 = 60_000
    public static let msPerHour: Int64 = 3_600_000
    public static let msPerDay: Int64 = 86_400_000

    public static func civil(fromDays z0: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    public static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    public static func addingMonths(_ months: Int, to t: Millis) -> Millis {
        let dayNumber = floorDiv(t, msPerDay)
        let timeOfDay = t - dayNumber * msPerDay
        let (y, m, d) = civil(fromDays: dayNumber)
        let total = y * 12 + (m - 1) + Int64(months)
        let ny = floorDiv(total, 12)
        let nm = total - ny * 12 + 1
        let nd = min(d, daysInMonth(ny, nm))
        return days(fromCivil: ny, nm, nd) * msPerDay + timeOfDay
    }

    public static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// `2026-03-01T12:00:00.000Z`
    public static func iso8601(_ t: Millis) -> String {
        // Total on any Int64 (a validator may send anything): beyond years 0–9999 the raw number is shown.
        guard t >= -62_167_219_200_000 && t <= 253_402_300_799_999 else { return "epoch-ms \(t)" }
        let dayNumber = floorDiv(t, msPerDay)
        var rest = t - dayNumber * msPerDay
        let (y, m, d) = civil(fromDays: dayNumber)
        let hh = rest / msPerHour
        rest -= hh * msPerHour
        let mm = rest / msPerMinute
        rest -= mm * msPerMinute
        let ss = rest / 1000
        let ms = rest % 1000
        func p(_ v: Int64, _ w: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, w - s.count)) + s
        }
        return "\(p(y, 4))-\(p(m, 2))-\(p(d, 2))T\(p(hh, 2)):\(p(mm, 2)):\(p(ss, 2)).\(p(ms, 3))Z"
    }

    /// `text` with each offset ``relative(_:)`` wrote in it (`until +381d 00:00:00`) made the instant it is from
    /// `origin` (`until 2028-02-16T10:00:00.000Z`): for a report whose lines carry instants, not offsets.
    public static func absolute(in text: String, from origin: Millis) -> String {
        let pattern = /([+-])(?:(\d+)d )?(\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?/
        return text.replacing(pattern) { m in
            let o = m.output
            func n(_ s: Substring?) -> Int64 { s.flatMap { Int64($0) } ?? 0 }
            let delta = ((n(o.2) * 24 + n(o.3)) * 60 + n(o.4)) * 60_000 + n(o.5) * 1000 + n(o.6)
            return iso8601(origin + (o.1 == "-" ? -delta : delta))
        }
    }

    /// A signed offset in a compact human form: `+0`, `+3d 04:00:00.001`, `-1ms`.
    public static func relative(_ delta: Int64) -> String {
        let sign = delta < 0 ? "-" : "+"
        var v = abs(delta)
        if v == 0 { return "+0" }
        if v < 1000 { return "\(sign)\(v)ms" }
        let d = v / msPerDay
        v -= d * msPerDay
        let h = v / msPerHour
        v -= h * msPerHour
        let m = v / msPerMinute
        v -= m * msPerMinute
        let s = v / 1000
        let ms = v % 1000
        func two(_ x: Int64) -> String { x < 10 ? "0\(x)" : "\(x)" }
        var out = sign
        if d > 0 { out += "\(d)d " }
        out += "\(two(h)):\(two(m)):\(two(s))"
        if ms > 0 { out += ".\(ms < 10 ? "00" : ms < 100 ? "0" : "")\(ms)" }
        return out
    }
}
