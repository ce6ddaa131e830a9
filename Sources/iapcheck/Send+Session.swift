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
        // A dry run's customers are not the backend's: they live in a state of their own unless --state says.
        statePath =
            command.isDryRun && command.state == ".iapcheck/send.json" ? ".iapcheck/send-dry-run.json" : command.state
        let spec = try parseValidator(command.validator)
        target = try spec.targetFile.map { path in
            do { return try HTTPValidator.Target.load(path: path) } catch {
                throw fail("error: \(error)", code: Exit.usage)
            }
        }
        let loaded: SendState?
        do { loaded = try SendState.load(path: statePath) } catch { throw fail("error: \(error)", code: Exit.usage) }
        if let s = loaded {
            guard s.validator == command.validator else {
                throw fail(
                    "error: \(statePath) holds customers of \(s.validator): give --state another file for \(command.validator), or start over with --reset",
                    code: Exit.usage)
            }
            if command.app.given {
                FileHandle.standardError.write(
                    Data(
                        "note: \(statePath) keeps the catalog and policy it started with; --reset to change them\n".utf8
                    ))
            }
            state = s
        } else {
            let (catalog, policy) = try command.app.load()
            state = SendState(validator: command.validator, catalog: catalog, policy: policy)
        }
        isNewCustomer = state.customers[command.user] == nil
        customer =
            state.customers[command.user]
            ?? SendState.Customer(script: CustomerScript(start: 0), namespace: IDNamespace.next().value)
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
            throw fail("error: \(what) for \(command.user): \(error.message)", code: Exit.usage)
        }
    }

    /// Delivers the step; the exit code.
    mutating func send(_ step: ScriptStep) throws -> Int32 {
        var script = customer.script
        script.steps.append(step)
        let sim = try scripted { try script.replay(catalog: state.catalog, policy: state.policy) }
        let newClock = max(sim.now, step.at)
        if wall && newClock > Self.realNow + CivilTime.msPerMinute {
            throw fail(
                "error: \(command.scenario ?? "this") happens at \(CivilTime.iso8601(newClock)), ahead of the real clock a backend with \"clock\": \"wall\" reads; give it a clock header or run it under faketime (docs/send.md#clocks)",
                code: Exit.usage)
        }
        let run = SendRun(
            catalog: state.catalog, policy: state.policy, script: script,
            namespace: IDNamespace(value: customer.namespace), delivered: Set(customer.delivered))
        let sending = try SendTransport(session: self)
        let askAt = wall ? Self.realNow : newClock
        let c = try scripted { try run.plan(profile: sending.validator.profile, askAt: askAt) }
        let resets = sending.http != nil && target?.resets == true && !state.backendReset && !command.isDryRun
        try sending.prepare(c, run, at: askAt, resets: resets)
        let outcome = run.run(
            c, against: sending.validator, replaysEarlier: sending.http == nil, resets: false,
            asks: !command.isDryRun, exchange: sending.exchange)
        var report = SendReport(
            command: command, c: c, outcome: outcome, action: script.steps.count - 1,
            profile: sending.validator.profile)
        if sending.validator.profile.accepts(.app) {
            report.awaitingTheApp = (try? run.awaitingTheApp(c, at: askAt)) ?? []
        }
        report.print(validatorName: sending.validator.name, statePath: statePath)
        try sending.finish(outcome, c, command: command)
        guard outcome.failure == nil || !outcome.sent.isEmpty else {
            print("nothing was delivered: \(statePath) is unchanged")
            return Exit.validatorFailure
        }
        customer.script = script
        customer.delivered = outcome.delivered.sorted()
        state.customers[command.user] = customer
        if resets { state.backendReset = true }
        try state.save(path: statePath)
        if outcome.failure != nil { return Exit.validatorFailure }
        return outcome.discrepancy == nil ? Exit.pass : Exit.discrepancy
    }
}

extension Send {
    var isDryRun: Bool { dryRun || format == "curl" }
}

/// `--at` and `--advance`: an instant, or a duration after a base.
enum SendTime {
    /// `2027-01-31T10:00:00Z` (seconds and milliseconds optional), `now`, or `+3d` / `-2h` from `base`.
    static func instant(_ text: String, after base: Millis) throws -> Millis {
        if text == "now" { return SendSession.realNow }
        if text.hasPrefix("+") { return try after(base, String(text.dropFirst()), option: "--at") }
        if text.hasPrefix("-") { return base - (try after(0, String(text.dropFirst()), option: "--at")) }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let g = ISO8601DateFormatter()
        if let d = f.date(from: text) ?? g.date(from: text) {
            return Millis((d.timeIntervalSince1970 * 1000).rounded())
        }
        throw ValidationError(
            "--at \"\(text)\" is neither an instant (2027-01-31T10:00:00Z) nor a time after the clock (+3d, +2h, +30m)")
    }

    /// `base` plus `30d`, `12h`, `45m`, `10s`, `2w`, `3mo` or `1y` (months and years on the calendar).
    static func after(_ base: Millis, _ text: String, option: String) throws -> Millis {
        let units: [(String, Millis)] = [
            ("ms", 1), ("mo", 0), ("y", 0), ("w", 7 * CivilTime.msPerDay), ("d", CivilTime.msPerDay),
            ("h", CivilTime.msPerHour), ("m", CivilTime.msPerMinute), ("s", CivilTime.msPerSecond),
        ]
        for (unit, ms) in units where text.hasSuffix(unit) {
            guard let n = Int(text.dropLast(unit.count)), n >= 0 else { break }
            switch unit {
            case "mo": return CivilTime.addingMonths(n, to: base)
            case "y": return CivilTime.addingMonths(12 * n, to: base)
            default: return base + Millis(n) * ms
            }
        }
        throw ValidationError("\(option) \"\(text)\" is not a duration such as 30d, 12h, 45m, 2w or 3mo")
    }
}
