import Foundation
import IAPModel
import IAPValidatorAPI

/// `iapcheck mutants` as a library call: validators with one known bug each, checked side by side, one deterministic
/// ``Checker`` run per mutant; rows come back (and are emitted) in list order whatever the number of jobs.
public struct MutantsRun {
    /// A mutant as the runner sees it: its name, its mistake, and a way to make a fresh instance.
    public struct Entry: Sendable {
        public var name: String
        public var description: String
        /// The mistake's number in docs/mistakes.md (`J12`), or `race`.
        public var pitfall: String
        public var make: @Sendable () -> any Validator
        /// The policy the mutant is checked under, when its mistake only shows under one (a declared size limit).
        public var policy: Policy?

        public init(
            name: String, description: String, pitfall: String, make: @escaping @Sendable () -> any Validator,
            policy: Policy? = nil
        ) {
            self.name = name
            self.description = description
            self.pitfall = pitfall
            self.make = make
            self.policy = policy
        }
    }

    public var options: CheckOptions
    /// Mutants checked at once (each a thread with an 8 MiB stack, for deep shrinking).
    public var jobs = 1

    public init(options: CheckOptions) { self.options = options }

    /// Runs every entry; `row` receives each mutant's row, its report and the name its validator gave, in order.
    public func run(
        _ entries: [Entry], row: (Reports.MutantSummary, CheckReport, String) throws -> Void
    ) rethrows {
        let results = MutantResults(count: entries.count)
        let workers = max(1, min(jobs, entries.count))
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let t = Thread { [options] in
                defer { group.leave() }
                while let k = results.take() {
                    let v = entries[k].make()
                    var o = options
                    if let p = entries[k].policy { o.policy = p }
                    results.put(k, (Checker(options: o, validator: v).run(), v.name))
                }
            }
            t.stackSize = 8 << 20
            t.start()
        }
        do {
            for (k, m) in entries.enumerated() {
                let (report, foundWith) = results.wait(k)
                try row(Self.summary(m.name, m.description, m.pitfall, report), report, foundWith)
            }
        } catch {
            // The caller gave up (it could not save a row): the workers take no further mutant.
            results.cancel()
            group.wait()
            throw error
        }
        group.wait()
    }

    /// One mutant's row of the table.
    public static func summary(_ name: String, _ description: String, _ pitfall: String, _ report: CheckReport)
        -> Reports.MutantSummary
    {
        let f = report.failure
        return Reports.MutantSummary(
            name: name, description: description, pitfall: pitfall, killed: f != nil,
            casesToKill: f.map { $0.caseIndex + 1 }, shrunkEvents: f?.shrunk.actionCount,
            property: f?.discrepancy?.property.rawValue ?? f?.validatorFailure.map { _ in "validator-health" },
            seconds: report.seconds)
    }

    /// The median size of the shrunk counterexamples of the killed mutants.
    public static func medianShrunk(_ rows: [Reports.MutantSummary]) -> Double? {
        let sizes = rows.compactMap(\.shrunkEvents).sorted()
        guard !sizes.isEmpty else { return nil }
        return sizes.count % 2 == 1
            ? Double(sizes[sizes.count / 2]) : Double(sizes[sizes.count / 2 - 1] + sizes[sizes.count / 2]) / 2
    }
}

/// Mutant runs handed out to worker threads and collected in list order.
///
/// Sendable: `next` and `results` change under `condition` only.
final class MutantResults: @unchecked Sendable {
    private let condition = NSCondition()
    private var next = 0
    private let count: Int
    private var results: [Int: (CheckReport, String)] = [:]
    init(count: Int) { self.count = count }

    /// No mutant is handed out any more.
    func cancel() {
        condition.lock()
        next = count
        condition.unlock()
    }

    func take() -> Int? {
        condition.lock()
        defer { condition.unlock() }
        guard next < count else { return nil }
        next += 1
        return next - 1
    }

    func put(_ k: Int, _ r: (CheckReport, String)) {
        condition.lock()
        results[k] = r
        condition.broadcast()
        condition.unlock()
    }

    func wait(_ k: Int) -> (CheckReport, String) {
        condition.lock()
        defer { condition.unlock() }
        while results[k] == nil { condition.wait() }
        return results.removeValue(forKey: k)!
    }
}
