import ArgumentParser
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPSigning
import IAPSimulator
import IAPValidatorAPI

/// One `iapcheck send`: the state file read, the customer's next step placed on its clock, the history delivered
/// to the validator, the answers printed, the state written back (docs/send.md).
struct SendSession {
    let command: Send
    let statePath: String
    var state: SendState
    var customer: SendState.Customer
    let isNewCustomer: Bool
    /// The target's file, for an `http:` validator.
    let target: HTTPValidator.Target?
    /// The backend reads the real clock: every event is now.
    var wall: Bool { target?.clock == .wall }

    init(command: Send) throws {
        self.command = command
        statePath = command.statePath
        target = try command.spec.targetFile.map { path in
            do { return try HTTPValidator.Target.load(path: path) } catch {
                throw fail("error: \(error)", code: Exit.usage)
            }
        }
        let loaded: SendState?
        do { loaded = try SendState.load(path: statePath) } catch { throw fail("error: \(error)", code: Exit.usage) }
        if let s = loaded {
            guard s.validator == command.validatorKey else {
                throw fail(
                    "error: \(statePath) holds customers of \(s.validator): give --state another file for \(command.validator), or start over with --reset",
                    code: Exit.usage)
            }
            if command.app.given, let (c, p) = try? command.app.load(), c != s.catalog || p != s.policy {
                try? FileHandle.standardError.write(
                    contentsOf:
                        Data(
                            "note: \(statePath) keeps the catalog and policy it started with (\(s.catalog.bundleId)), not these; --reset to change them\n"
                                .utf8))
            }
            state = s
        } else {
            // A backend without a reset route is never told the app: the catalog must be the one it is configured
            // with, as for check.
            if let target, !target.resets, command.app.catalog == nil, !command.isDryRun {
                throw fail(
                    "error: \(command.validator) has no reset route, so iapcheck cannot tell the backend the app: give --catalog (and --bundle-id for a .storekit file) as the backend is configured",
                    code: Exit.usage)
            }
            var (catalog, policy) = try command.app.load()
            // A dry run's first send takes the app of the real customers' file, as a send without options would.
            if command.isDryRun, !command.app.given, let real = try? SendState.load(path: command.state),
                real.validator == command.validatorKey
            {
                (catalog, policy) = (real.catalog, real.policy)
            }
            state = SendState(validator: command.validatorKey, catalog: catalog, policy: policy)
        }
        isNewCustomer = state.customers[command.user] == nil
        customer =
            state.customers[command.user]
            ?? SendState.Customer(
                script: CustomerScript(start: 0, customerName: command.user), namespace: IDNamespace.next().value)
    }

    static var realNow: Millis { Millis((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The customer's clock: the instant of its last event (now, for a new customer).
    func clock() throws -> Millis? {
        guard !customer.script.steps.isEmpty else { return nil }
        return try scripted { try customer.script.clock(catalog: state.catalog, policy: state.policy) }
    }

    /// The step asked for, at its instant: `--advance`, `--at`, or a minute after the customer's clock (now on a
    /// real clock, and for a new customer).
    mutating func nextStep() throws -> ScriptStep {
        let now = Self.realNow
        let clock = try clock()
        var t: Millis
        if let advance = command.advance {
            guard !wall else {
                throw fail(
                    "error: the backend reads the real clock (\"clock\": \"wall\"): iapcheck cannot move it on; time passes as it does",
                    code: Exit.usage)
            }
            t = try SendTime.after(clock ?? now, advance, option: "--advance")
        } else if let at = command.at {
            t = try SendTime.instant(at, after: clock ?? now)
        } else if wall {
            t = max(now, (clock ?? 0) + 1)
        } else {
            t = clock.map { $0 + CivilTime.msPerMinute } ?? (now / 1000 * 1000)
        }
        if isNewCustomer { customer.script.start = t - CivilTime.msPerSecond }
        if command.advance != nil && command.scenario == nil { return ScriptStep(scenario: nil, at: t) }
        if command.advance != nil {
            throw ValidationError("--advance moves the clock alone: send the scenario after it")
        }
        if let clock, t <= clock {
            throw fail(
                "error: \(CivilTime.iso8601(t)) is not after the customer's clock (\(CivilTime.iso8601(clock))); events of one history follow each other",
                code: Exit.usage)
        }
        return command.step(at: t)
    }

    /// The script's answer, or exit 2 saying why the step cannot happen.
    func scripted<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as ScriptError {
            let what = command.scenario.map { "send \($0)" } ?? "send --advance"
            throw fail("error: \(what) for \(command.user): \(error.message)\(dryRunNote)", code: Exit.usage)
        }
    }

    /// `--ask-about`: the earlier instant the question is about, refused where it is not earlier than the send's
    /// question or the backend is asked about its present only (its route carries no `{at}`).
    func hindsight(_ askAt: Millis, profile: ValidatorProfile) throws -> Millis? {
        guard let text = command.askAbout else { return nil }
        let about: Millis
        do { about = try SendTime.instant(text, after: askAt) } catch {
            throw fail(
                "error: --ask-about \"\(text)\" is neither an instant (2027-02-05T00:00:00Z) nor a time before the customer's clock (--ask-about=-20d)",
                code: Exit.usage)
        }
        guard about <= askAt else {
            throw fail(
                "error: --ask-about \(CivilTime.iso8601(about)) is after the question (\(CivilTime.iso8601(askAt))): a question in hindsight is about an earlier instant",
                code: Exit.usage)
        }
        guard profile.questionsInHindsight else {
            throw fail(
                "error: \(command.validator) is asked about its present only (its entitlements route carries no {at}), so it cannot be asked about \(CivilTime.iso8601(about)) (docs/http-target.md)",
                code: Exit.usage)
        }
        return about
    }

    /// A dry run's customers live apart from the real ones: said when the one named is only a real customer.
    var dryRunNote: String {
        guard command.isDryRun, isNewCustomer, let real = try? SendState.load(path: command.state),
            real.customers[command.user] != nil
        else { return "" }
        return
            " (\(command.user) is a customer of \(command.state), not of the dry runs, which keep their own in \(statePath): send its history with --dry-run too, or leave out --dry-run and --format curl)"
    }

    /// Delivers the step; the exit code.
    mutating func send(_ step: ScriptStep) throws -> Int32 {
        var script = customer.script
        let first = script.steps.count
        script.steps.append(step)
        var sim = try scripted { try script.replay(catalog: state.catalog, policy: state.policy) }
        let now = Self.realNow
        if wall && max(sim.now, step.at) > now + CivilTime.msPerMinute {
            throw fail(
                "error: \(command.scenario ?? "this") happens at \(CivilTime.iso8601(max(sim.now, step.at))), ahead of the real clock a backend with \"clock\": \"wall\" reads; give it a clock header or run it under faketime (docs/send.md#clocks)",
                code: Exit.usage)
        }
        if wall && now > max(sim.now, step.at) {
            // On the real clock the store lives on to now: what fell due since the step is delivered too.
            script.steps.append(ScriptStep(scenario: nil, at: now))
            sim = try scripted { try script.replay(catalog: state.catalog, policy: state.policy) }
        }
        let askAt = max(sim.now, step.at)
        let run = SendRun(
            catalog: state.catalog, policy: state.policy, script: script,
            namespace: IDNamespace(value: customer.namespace), delivered: Set(customer.delivered))
        let sending = try SendTransport(session: self)
        let about = try hindsight(askAt, profile: sending.validator.profile)
        let c = try scripted { try run.plan(profile: sending.validator.profile, askAt: askAt, about: about) }
        let resets = sending.http != nil && target?.resets == true && !state.backendReset && !command.isDryRun
        try sending.prepare(c, run, at: askAt, resets: resets || (sending.replays && target?.resets == true))
        let outcome = run.run(
            c, against: sending.validator, replaysEarlier: sending.replays, resets: sending.http == nil,
            asks: !command.isDryRun, exchange: sending.exchange)
        var report = SendReport(
            command: command, c: c, outcome: outcome, actions: first..<script.steps.count,
            profile: sending.validator.profile)
        report.accepted = try acceptedDifference(outcome, in: c)
        if sending.validator.profile.accepts(.app) {
            report.awaitingTheApp = (try? run.awaitingTheApp(c, at: askAt)) ?? []
        }
        report.print(validatorName: sending.validator.name, statePath: statePath)
        try sending.finish(outcome, c, command: command)
        return try record(outcome, script: script, resets: resets, accepted: report.accepted != nil)
    }

    /// The baseline entry that accepts the send's difference (`--baseline`, or the target's), with its file.
    func acceptedDifference(_ outcome: SendRun.Outcome, in c: GeneratedCase) throws -> (Baseline.Entry, String)? {
        guard let d = outcome.discrepancy,
            let (baseline, file) = try acceptedDivergences(option: command.baseline, validator: command.spec),
            let entry = baseline.entry(for: FailureSignature.of(.discrepancy(d), in: c))
        else { return nil }
        return (entry, file)
    }

    /// The state after a send, and the exit code: nothing recorded when nothing arrived; a configuration problem
    /// the backend's answer shows (a pointer that finds nothing) is exit 2, as for check.
    mutating func record(
        _ outcome: SendRun.Outcome, script: CustomerScript, resets: Bool, accepted: Bool = false
    ) throws -> Int32 {
        let code: Int32 =
            outcome.failure.map {
                [.misconfigured, .unavailable].contains($0.kind) ? Exit.usage : Exit.validatorFailure
            }
            ?? (outcome.discrepancy == nil || accepted ? Exit.pass : Exit.discrepancy)
        if let f = outcome.failure, let fix = f.fix { print("  fix: \(fix)") }
        // A failure while asking comes after every delivery of the send; one while delivering leaves some to make.
        let atQuestion = outcome.question != nil
        guard outcome.failure == nil || !outcome.sent.isEmpty else {
            print(
                atQuestion
                    ? "the question failed and nothing new was delivered: \(statePath) is unchanged; send again once the backend answers"
                    : "nothing was delivered: \(statePath) is unchanged; send again once the backend answers")
            return code
        }
        if outcome.failure != nil {
            let n = outcome.sent.count
            print(
                atQuestion
                    ? "the send is recorded in \(statePath) with its \(n) \(n == 1 ? "delivery" : "deliveries"); only the question failed: `iapcheck send --advance 0m` with the same options asks again"
                    : "the send is recorded in \(statePath) with the \(n) \(n == 1 ? "delivery" : "deliveries") made; `iapcheck send --advance 0m` with the same options delivers the rest"
            )
        }
        customer.script = script
        customer.delivered = outcome.delivered.sorted()
        state.customers[command.user] = customer
        if resets { state.backendReset = true }
        try state.save(path: statePath)
        return code
    }
}

extension Send {
    var isDryRun: Bool { dryRun || format == "curl" }

    var spec: ValidatorSpec { (try? parseValidator(validator)) ?? .reference }

    /// The validator as a state file names it: a target file by its absolute path, so `http:target.json` and
    /// `http:/abs/target.json` are one backend.
    var validatorKey: String {
        guard let path = spec.targetFile else { return validator }
        return "http:" + URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// A dry run's customers are not the backend's: they live in a state file of their own (`send.json` →
    /// `send-dry-run.json`).
    var statePath: String {
        guard isDryRun else { return state }
        let base = state.hasSuffix(".json") ? String(state.dropLast(5)) : state
        return base + "-dry-run.json"
    }
}

/// `--at` and `--advance`: an instant, or a duration after (or before) a base. Errors exit 2, naming the option.
enum SendTime {
    /// `2027-01-31T10:00:00Z` (milliseconds optional, `Z` or an offset), `now`, or `+3d` / `-2h` from `base`. An
    /// instant the calendar does not have (`2027-02-29`, `24:00`) is refused, not moved to the next day: a send at a
    /// month's end must be at the instant asked for.
    static func instant(_ text: String, after base: Millis) throws -> Millis {
        if text == "now" { return SendSession.realNow }
        if text.hasPrefix("+") { return try after(base, String(text.dropFirst()), option: "--at") }
        if text.hasPrefix("-") { return try after(base, String(text.dropFirst()), option: "--at", sign: -1) }
        if let t = AnswerMapping.iso8601(text) { return t }
        throw fail(
            "error: --at \"\(text)\" is neither an instant of the calendar (2027-01-31T10:00:00Z) nor a time from the customer's clock (+3d, +2h, --at=-30d)",
            code: Exit.usage)
    }

    /// `base` plus (or, with `sign` -1, minus) `30d`, `12h`, `45m`, `10s`, `2w`, `3mo` or `1y` (months and years on
    /// the calendar).
    static func after(_ base: Millis, _ text: String, option: String, sign: Int = 1) throws -> Millis {
        let units: [(String, Millis)] = [
            ("ms", 1), ("mo", 0), ("y", 0), ("w", 7 * CivilTime.msPerDay), ("d", CivilTime.msPerDay),
            ("h", CivilTime.msPerHour), ("m", CivilTime.msPerMinute), ("s", CivilTime.msPerSecond),
        ]
        for (unit, ms) in units where text.hasSuffix(unit) {
            guard let n = Int(text.dropLast(unit.count)), n >= 0 else { break }
            switch unit {
            case "mo": return CivilTime.addingMonths(sign * n, to: base)
            case "y": return CivilTime.addingMonths(sign * 12 * n, to: base)
            default: return base + Millis(sign * n) * ms
            }
        }
        throw fail(
            "error: \(option) \"\(text)\" is not a duration such as 30d, 12h, 45m, 2w or 3mo", code: Exit.usage)
    }
}
