import IAPModel
import PropertyEngine

/// The day a history starts (docs/check.md#the-calendar). Period arithmetic goes wrong at the edges of the calendar
/// — a purchase on the 29th to 31st whose next month is shorter, 29 February, the turn of a year — so starts are
/// drawn across eight years with those days made common: month ends, leap days and year ends each come up in a few
/// cases of every hundred, and the first purchase falls on the start. Deterministic per seed; choice 0 is the
/// epoch (2026-03-01), where a shrunk history goes back to when its start does not matter.
extension HistoryGenerator {
    /// The first and last years a history may start in: the test PKI is valid from 2025-03-01 to 2046-03-01, and a
    /// history lasts at most six years past its start.
    static let startYears: ClosedRange<Int64> = 2026...2033

    enum StartKind: Int, CaseIterable {
        case epoch, monthEnd, leapDay, yearTurn, anyDay
        /// Relative weights: a month end in about one history in three, a leap day and a year turn in one in ten.
        var weight: Int { [25, 35, 10, 10, 20][rawValue] }
    }

    /// The start day (days since 1970-01-01, UTC).
    static func startDay(_ src: ChoiceSource) -> Int64 {
        let epochDay = CivilTime.days(fromCivil: 2026, 3, 1)
        let years = Int(startYears.upperBound - startYears.lowerBound + 1)
        func onOrAfterEpoch(_ day: Int64) -> Int64 { day < epochDay ? day + 365 * 4 + 1 : day }
        switch StartKind(rawValue: src.weighted(StartKind.allCases.map(\.weight)))! {
        case .epoch:
            return epochDay
        case .monthEnd:
            // One of the last three days of a month (the 26th to 31st), the last most often, so "the same day next
            // month" may not exist.
            let y = startYears.lowerBound + Int64(src.int(below: years)), m = Int64(1 + src.int(below: 12))
            let day = CivilTime.daysInMonth(y, m) - Int64(src.weighted([3, 1, 1]))
            return onOrAfterEpoch(CivilTime.days(fromCivil: y, m, day))
        case .leapDay:
            let leapYears = startYears.filter { CivilTime.daysInMonth($0, 2) == 29 }
            return CivilTime.days(fromCivil: leapYears[src.int(below: leapYears.count)], 2, 29)
        case .yearTurn:
            // 30 or 31 December, or 1 January: a year boundary inside the first period.
            let y = startYears.lowerBound + Int64(src.int(below: years - 1))
            return CivilTime.days(fromCivil: y, 12, 31) + Int64(src.int(below: 3)) - 1
        case .anyDay:
            return epochDay + Int64(src.int(below: 365 * (years - 1)))
        }
    }

    /// The same time of day on the last day of `t`'s month.
    static func lastDayOfMonth(_ t: Millis) -> Millis {
        let day = CivilTime.floorDiv(t, CivilTime.msPerDay)
        let (y, m, _) = CivilTime.civil(fromDays: day)
        return (CivilTime.days(fromCivil: y, m, CivilTime.daysInMonth(y, m)) - day) * CivilTime.msPerDay + t
    }
}
