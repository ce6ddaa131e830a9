import Dispatch
import IAPModel
import IAPOracle
import IAPSigning
import IAPValidatorAPI

/// `iapcheck doctor`: before any case, whether a validator can be checked at all — it answers, resets (or is run
/// in ids of its own), accepts a genuine artifact on each channel it declares, refuses a forged one, reads the
/// clock iapcheck sets and answers a known question as its mapping says — each with the fix when it does not
/// (docs/doctor.md). `check` runs the same checks first and stops on a configuration problem.
public struct Doctor {
    public var validator: any Validator
    /// The catalog and policy the check will use (for a validator without a reset: the ones it is configured with).
    public var catalog: Catalog
    public var policy: Policy
    /// What the transport adds to a fix: where an operation is configured, how the clock is set.
    public var hints: DoctorHints

    public init(validator: any Validator, catalog: Catalog, policy: Policy) {
        self.validator = validator
        self.catalog = catalog
        self.policy = policy
        hints = (validator as? any DoctorHinting)?.doctorHints ?? DoctorHints()
    }

    /// One line of the checklist.
    public struct Item: Sendable {
        public enum Status: String, Sendable {
            /// As it should be.
            case ok = "✓"
            /// The target cannot be checked as it is configured: the fix is in the target file, the options or the
            /// backend's setup.
            case misconfigured = "✗"
            /// A wrong answer or verdict the check itself will report, with a shrunk history.
            case finding = "!"
            /// Not checked, and why.
            case skipped = "-"
        }
        public var name: String
        public var status: Status
        public var detail: String
        public var fix: String?
    }

    /// The item that says requests are slow enough to time out in a check: not a wrong answer.
    public static let speedItem = "speed"

    /// The checklist, and whether the target can be checked (no ``Item/Status/misconfigured`` item).
    public struct Report: Sendable {
        public var items: [Item] = []
        /// Median milliseconds per operation.
        public var latency: [(String, Double)] = []
        public var usable: Bool { !items.contains { $0.status == .misconfigured } }

        public var text: String {
            var previousFix: String?
            var lines = items.map { item in
                defer { previousFix = item.fix ?? previousFix }
                let fix = item.fix.map { $0 == previousFix ? "as above" : $0 }
                return "  \(item.status.rawValue) \(item.name): \(item.detail)"
                    + (fix.map { "\n      fix: \($0)" } ?? "")
            }
            if !latency.isEmpty {
                lines.append(
                    "  latency: "
                        + latency.map { "\($0.0) \(String(format: $0.1 < 10 ? "%.1f" : "%.0f", $0.1)) ms" }.joined(
                            separator: ", "))
            }
            return lines.joined(separator: "\n")
        }
    }

    /// Runs every check; the validator is left as any case would leave it.
    public func run() -> Report {
        var session = DoctorSession(doctor: self)
        session.run()
        return session.report
    }
}

/// One doctor run: a purchase of one product, delivered on each declared channel, then questions about it.
struct DoctorSession {
    let doctor: Doctor
    var report = Doctor.Report()
    var v: any Validator { doctor.validator }
    var timings: [String: [Double]] = [:]
    /// The channels whose genuine artifact the backend accepted: only there does a refused forgery say anything.
    var genuineAccepted: Set<DeliveryChannel> = []
    /// The API, for a backend that asks it of its own accord: it knows the doctor's purchase.
    var api: APIService?

    init(doctor: Doctor) { self.doctor = doctor }

    mutating func add(_ name: String, _ status: Doctor.Item.Status, _ detail: String, fix: String? = nil) {
        report.items.append(.init(name: name, status: status, detail: detail, fix: fix))
    }

    mutating func timed<T>(_ op: String, _ body: (any Validator) throws(ValidatorFailure) -> T) throws(ValidatorFailure)
        -> T
    {
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try body(doctor.validator)
        // Only what the validator answered: a refused connection's microseconds are no latency of a backend.
        timings[op, default: []].append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        return result
    }

    /// A request that took a third of `--timeout` or more: a check sends thousands, and the slowest of them will
    /// time out at a case of its own, which reads as the backend's failure. Said before any case, with the way out.
    mutating func warnIfSlow() {
        guard let limit = doctor.hints.timeout else { return }
        let slowest = timings.filter { $0.key != "start" }.compactMap { op, xs in xs.max().map { (op, $0) } }
            .max { $0.1 < $1.1 }
        guard let (op, ms) = slowest, ms >= limit * 1000 / 3 else { return }
        add(
            Doctor.speedItem, .finding,
            "the slowest request (\(op)) took \(String(format: "%.1f", ms / 1000)) s of the \(String(format: "%g", limit)) s --timeout: among the thousands of requests of a check, some may time out and fail their case",
            fix:
                "find what makes the backend slow (under \"clock\": \"faketime\", compare with the header clock), or give check a larger --timeout"
        )
    }

    /// A validator failure as a checklist line: unreachable and misconfigured validators are configuration. A crash,
    /// a hang or garbage on a forgery is what the check reports too (a `!`); on the simplest genuine purchase or its
    /// answer (`blocking`) it is a ✗, since `check` would stop at its first case the same way.
    mutating func failed(_ name: String, _ f: ValidatorFailure, during what: String, blocking: Bool = true) {
        switch f.kind {
        case .unavailable: add(name, .misconfigured, f.message, fix: f.fix ?? doctor.hints.unreachableFix)
        case .misconfigured:
            add(
                name, .misconfigured, f.message,
                fix: f.fix ?? "make the target file describe the backend (the key named above)")
        default:
            if case let (request, status?)? = doctor.hints.lastExchange(), status == 404 || status == 405 {
                add(
                    name, .misconfigured, "\(request) answered \(status) during \(what)",
                    fix: "the route is not there: check \(doctor.hints.whereIs(what) ?? "its method and path")")
            } else if blocking {
                add(
                    name, .misconfigured, "\(f.kind.rawValue) during \(what): \(f.message)",
                    fix: Self.blockingFix(f, doctor.hints))
            } else {
                add(name, .finding, "\(f.kind.rawValue) during \(what): \(f.message)")
            }
        }
    }

    /// A mapping that reads a response about one entry the file names (`"one": "premium"`) cannot answer for the
    /// catalog's other entries, which check asks about: a ✗ before any request (the Go trial's flat tier answer got a
    /// `!` about `plus` and a FAIL in check, as if the backend were wrong).
    mutating func namesOneEntryOfSeveral(_ catalog: Catalog, _ profile: ValidatorProfile) -> Bool {
        for (list, id, key) in doctor.hints.namedAlone {
            let ids =
                list == "entitlements"
                ? (catalog.entitlements ?? []).map(\.id) : catalog.products.filter { $0.kind != .consumable }.map(\.id)
            let asked = profile.answers.contains { $0.list == (list == "entitlements" ? .entitlements : .products) }
            let others = ids.filter { $0 != id }
            guard asked, !others.isEmpty else { continue }
            add(
                "mapping", .misconfigured,
                "\(key) reads every answer as about \(list == "entitlements" ? "entitlement" : "product") \(id) alone, but the catalog has \(others.count) more (\(others.prefix(3).joined(separator: ", "))\(others.count > 3 ? ", …" : "")), which check asks about",
                fix:
                    "give iapcheck a catalog of \(id) alone (\(list == "entitlements" ? "--entitlements" : "--catalog") with that one), or map the response as a list (\"each\" and \"key\"), or name the entry from the response (\"one\": {\"pointer\": …})"
            )
            return true
        }
        return false
    }

    /// What to look at when the doctor's one purchase already fails as a program or a backend fails.
    static func blockingFix(_ f: ValidatorFailure, _ hints: DoctorHints) -> String {
        let stop =
            "this fails on the doctor's one simple purchase, so check would stop at its first case the same way: "
        if f.kind == .timedOut {
            return stop
                + "does the validator wait on something (a lock, a call to Apple's servers; over HTTP, is this the route that answers?), or does it need a longer --timeout?"
        }
        return stop + hints.failureFix
    }

    mutating func run() {
        let profile: ValidatorProfile
        do {
            try timed("start") { (v: any Validator) throws(ValidatorFailure) in try v.prepare() }
            profile = v.profile
            add("answers", .ok, "\(v.selfReportedName ?? v.name) — \(profile)")
        } catch {
            failed("starts", error, during: "start")
            return
        }
        var catalog = profile.answersEntitlements ? doctor.catalog.withEntitlements() : doctor.catalog
        if profile.answersEntitlements && (catalog.entitlements ?? []).isEmpty { catalog = doctor.catalog }
        if namesOneEntryOfSeveral(catalog, profile) { return }
        var config = ValidatorConfig(catalog: catalog, policy: doctor.policy)
        config.trustedRoots = TestPKI.harness.trustedRoots
        do {
            try timed("reset") { (v: any Validator) throws(ValidatorFailure) in try v.reset(config) }
            // Without a reset route nothing was sent: no latency to show for one.
            if v.isolation != .reset { timings["reset"] = nil }
            add(
                "isolation", .ok,
                v.isolation == .reset
                    ? "reset answered: every case starts from nothing"
                    : "no reset route: every case gets user, transaction and notification ids of its own; the backend is taken to be configured for \(catalog.bundleId) (\(catalog.environment.rawValue), App Store id \(catalog.appAppleId)) with \(catalog.products.count) products"
            )
        } catch {
            failed("reset", error, during: "reset")
            return
        }
        defer {
            report.latency = timings.keys.sorted().compactMap { op in
                let xs = timings[op]!.sorted()
                // A start with nothing to start (the backend already runs) says nothing about the backend.
                return op == "start" && xs[xs.count / 2] < 0.05 ? nil : (op, xs[xs.count / 2])
            }
            warnIfSlow()
        }
        guard let scenario = DoctorScenario(catalog: catalog, profile: profile, isolation: v.isolation) else {
            add("purchase", .skipped, "the catalog has no product to buy")
            return
        }
        var knowledge = Knowledge(config: config)
        // A backend that asks the API of its own accord finds the purchase there, as at Apple.
        api = APIService(config: config, [.app, .notification].map(scenario.delivery(on:)), for: v)
        api?.serve(v, at: DoctorScenario.start + 1000)
        defer { api?.serve(nil, on: v) }
        guard deliverGenuine(scenario, profile: profile, knowledge: &knowledge) else {
            for probe in ["forgery", "clock", "answer"] {
                add(probe, .skipped, "not checked: no genuine artifact was accepted above")
            }
            return
        }
        // Forgeries last: one accepted (a forged purchase that never ends) would change the answers the clock and
        // answer checks read, and blame the clock for it.
        defer { deliverForged(scenario, profile: profile) }
        // The answer first (a mapping that does not fit shows there), judged once the clock is known to be read.
        guard let answer = askDayOne(scenario) else {
            add("clock", .skipped, "not checked: the answer above could not be read")
            return
        }
        // A date read in the wrong unit would look like a clock that is not read: name the format first.
        if formatIsWrong(answer, scenario, knowledge: knowledge) { return }
        if checkClock(scenario, knowledge: knowledge, profile: profile) {
            judgeAnswer(answer, scenario, knowledge: knowledge, profile: profile)
        } else {
            add("answer", .skipped, "not judged while the validator does not read the clock")
        }
    }
}
