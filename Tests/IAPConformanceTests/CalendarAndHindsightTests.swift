import IAPConformance
import IAPModel
import IAPMutants
import IAPSimulator
import IAPTesting
import Testing

/// Histories across the calendar (docs/check.md#the-calendar) and questions in hindsight
/// (docs/answers.md#questions-about-the-past), each shown to catch the mistake it exists for.
@Suite struct CalendarAndHindsightTests {
    static func firstFailure(_ mutant: String, seed: UInt64, cases: Int) -> (Int, GeneratedCase, Int?)? {
        var o = CheckOptions()
        (o.seed, o.cases, o.drawsCatalogs, o.signed) = (seed, cases, true, false)
        guard let f = Checker(options: o, validator: Mutants.named(mutant)!.make()).run().failure else { return nil }
        return (f.caseIndex, f.shrunk, f.failingStep)
    }

    /// Month ends, leap days and year turns are common starts, and the first purchase falls on the start day.
    @Test func historiesStartAcrossTheCalendar() {
        var monthEnds = 0, leapDays = 0, yearTurns = 0, years: Set<Int64> = []
        let n = 400
        for seed in 0..<UInt64(n) {
            let (c, _) = Fixtures.generated(seed: seed, drawsCatalogs: true)
            let day = CivilTime.floorDiv(c.origin, CivilTime.msPerDay)
            let (y, m, d) = CivilTime.civil(fromDays: day)
            years.insert(y)
            if d >= CivilTime.daysInMonth(y, m) - 2 { monthEnds += 1 }
            if m == 2 && d == 29 { leapDays += 1 }
            if (m == 12 && d >= 30) || (m == 1 && d == 1) { yearTurns += 1 }
        }
        #expect(monthEnds * 100 >= 25 * n, "\(monthEnds) of \(n) start on a month end")
        #expect(leapDays * 100 >= 5 * n, "\(leapDays) of \(n) start on 29 February")
        #expect(yearTurns * 100 >= 5 * n, "\(yearTurns) of \(n) start at the turn of a year")
        #expect(years.count >= 6, "\(years.sorted())")
    }

    /// Months added without clamping (31 January + 1 month = 3 March) are caught within 200 cases on seeds 1 to 3.
    @Test(.long, arguments: [UInt64(1), 2, 3])
    func monthOverflowIsCaughtWithin200Cases(_ seed: UInt64) throws {
        let (index, shrunk, _) = try #require(Self.firstFailure("month-overflow", seed: seed, cases: 200))
        #expect(index < 200)
        let days = shrunk.events.map { CivilTime.civil(fromDays: CivilTime.floorDiv($0.time, CivilTime.msPerDay)).day }
        #expect(days.contains { $0 >= 29 }, "no event of the shrunk history falls on the 29th to 31st: \(days)")
    }

    /// Questions in hindsight follow the delivery that revealed their instant and ask about an earlier one; the
    /// mutant that answers the past from its current state is caught within 500 cases, at such a question.
    @Test(.long, arguments: [UInt64(1), 2, 3])
    func thePastFromTheCurrentStateIsCaughtInHindsight(_ seed: UInt64) throws {
        let (index, shrunk, step) = try #require(Self.firstFailure("past-from-current-state", seed: seed, cases: 500))
        #expect(index < 500)
        guard case .query(let q) = shrunk.steps[try #require(step)] else {
            Issue.record("the failure is not at a question")
            return
        }
        #expect(q.isHindsight && q.query.at < q.appleTime)
    }

    @Test func hindsightQuestionsComeRightAfterADeliveryAboutAnEarlierInstant() {
        var seen = 0
        for seed in 0..<UInt64(40) {
            let (c, _) = Fixtures.generated(seed: seed, drawsCatalogs: true)
            var lastArrival: Millis?
            for step in c.steps {
                switch step {
                case .deliver(let d): lastArrival = d.arrival
                case .query(let q) where q.isHindsight:
                    seen += 1
                    #expect(q.query.at < q.appleTime && q.appleTime == lastArrival && q.query.deviceTime == nil)
                case .query: break
                }
            }
        }
        #expect(seen > 100, "only \(seen) questions in hindsight in 40 cases")
    }

    /// A validator asked about its present only (an HTTP route without {at}) gets every other question, and none in
    /// hindsight: in production its clock never goes back behind what it was told.
    @Test func aValidatorOfThePresentIsAskedNothingInHindsight() {
        var present = ValidatorProfile.undeclared
        present.questionsInHindsight = false
        var dropped = 0
        for seed in 0..<UInt64(20) {
            let (c, _) = Fixtures.generated(seed: seed, drawsCatalogs: true)
            func questions(_ c: GeneratedCase) -> [PlannedQuery] {
                c.steps.compactMap { if case .query(let q) = $0 { q } else { nil } }
            }
            let kept = questions(c.holdingQuestions(at: 1, profile: present))
            #expect(kept == questions(c).filter { !$0.isHindsight })
            #expect(questions(c.holdingQuestions(at: 1, profile: .undeclared)) == questions(c))
            dropped += questions(c).count - kept.count
        }
        #expect(dropped > 50, "only \(dropped) questions in hindsight dropped in 20 cases")
    }
}
