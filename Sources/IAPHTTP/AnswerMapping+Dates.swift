import Foundation
import IAPEncoding
import IAPModel

/// How a mapped answer's dates read: epoch numbers in the declared unit, and ISO 8601 instants the calendar has
/// (docs/http-target.md#profile-and-response-mapping).
extension AnswerMapping {
    static func date(_ v: Any, format: DateFormat) -> Millis? {
        switch format {
        case .iso8601:
            guard let s = v as? String else { return nil }
            return Self.iso8601(s)
        case .epochMs, .epochS:
            let n: Double?
            if let x = v as? NSNumber, !StrictJSON.isBool(x) {
                n = x.doubleValue
            } else if let s = v as? String {
                n = Double(s)
            } else {
                n = nil
            }
            // Bounded after the scaling: 9.5e15 seconds is in range as a number and far past Int64 in milliseconds.
            guard let n, case let ms = format == .epochS ? n * 1000 : n, ms.isFinite, abs(ms) < 1e16 else { return nil }
            return Millis(ms)
        }
    }

    /// `2026-03-01T00:00:00Z` (or a space for the `T`, as RFC 3339 allows), with optional fractional seconds and a `Z`
    /// or an offset (`±HH:MM`, `±HHMM`, `±HH`); nil for anything else, a day the month does not have included
    /// (`2027-02-29` is not quietly March 1st) and an offset past 23:59.
    package static func iso8601(_ s: String) -> Millis? {
        let c = Array(s.utf8)
        func num(_ from: Int, _ n: Int) -> Int? {
            guard from + n <= c.count else { return nil }
            var v = 0
            for b in c[from..<from + n] {
                guard b >= 48 && b <= 57 else { return nil }
                v = v * 10 + Int(b - 48)
            }
            return v
        }
        guard c.count >= 20, c[4] == 45, c[7] == 45, c[10] == 84 || c[10] == 116 || c[10] == 32, c[13] == 58,
            c[16] == 58,
            let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
            let sec = num(17, 2), (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, sec < 60
        else { return nil }
        var i = 19
        var ms = 0
        if i < c.count && c[i] == 46 {
            i += 1
            var digits = 0
            while i < c.count, c[i] >= 48 && c[i] <= 57 {
                if digits < 3 { ms = ms * 10 + Int(c[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { ms *= 10 } }
        }
        var offset = 0
        guard i < c.count else { return nil }
        if c[i] == 90 || c[i] == 122 {
            i += 1
        } else if c[i] == 43 || c[i] == 45, let oh = num(i + 1, 2), oh < 24 {
            // `+05:30`, `+0530` or `+05` (ISO 8601's basic forms, as PHP's DATE_ISO8601 and strftime's %z write).
            let colon = i + 3 < c.count && c[i + 3] == 58
            let om = i + 3 == c.count ? 0 : num(i + (colon ? 4 : 3), 2)
            guard let om, om < 60 else { return nil }
            offset = (oh * 60 + om) * (c[i] == 43 ? 1 : -1)
            i += i + 3 == c.count ? 3 : colon ? 6 : 5
        } else {
            return nil
        }
        guard i == c.count, Int64(d) <= CivilTime.daysInMonth(Int64(y), Int64(mo)) else { return nil }
        let days = CivilTime.days(fromCivil: Int64(y), Int64(mo), Int64(d))
        return ((days * 24 + Millis(h)) * 60 + Millis(mi) - Millis(offset)) * 60_000 + Millis(sec) * 1000 + Millis(ms)
    }

    static func bool(_ v: Any) -> Bool? {
        if let n = v as? NSNumber {
            if StrictJSON.isBool(n) { return n.boolValue }
            if n == 0 || n == 1 { return n == 1 }
            return nil
        }
        if let s = v as? String {
            switch s.lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        }
        return nil
    }
}
