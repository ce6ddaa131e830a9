import ArgumentParser
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPSimulator
import IAPValidatorAPI

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one App Store event to a backend, for one customer whose history goes on across sends.",
        discussion: """
            For the days of writing a handler: `send buy`, then `send fail-billing`, `send --advance 30d`, `send \
            recover`, `send refund` go on with one customer's history (kept in --state, like a payment platform's \
            test clock), each delivering what the App Store would send — signed as `check` signs it, over the \
            channels the target declares — then asking the backend about the customer and printing its answer beside \
            the expected one, with the explanation a `check` failure gives. Exit 1 when they differ, 3 when the \
            backend fails (times out, closes, answers what cannot be read), 2 for a step the customer's state does \
            not allow, a usage error, or a backend that cannot be reached.

              iapcheck send buy --validator http:backend.json
              iapcheck send refund --prorated --validator http:backend.json
              iapcheck send --advance 30d --validator http:backend.json
              iapcheck send refund --dry-run --out fixtures/     (the signed JWS, payloads and request bodies)
              iapcheck send buy --format curl --validator http:backend.json

            Scenarios: iapcheck send --list. Instants: the customer's clock starts now and each send happens a minute \
            after the last (--at 2027-01-31T10:00:00Z or --at +3d to choose); renewals, billing failures and expiries \
            happen at the period's end. A backend on the real clock ("clock": "wall") gets every event now. See \
            docs/send.md.
            """)

    @Argument(help: ArgumentHelp("The event: buy, renew, refund, … (--list names them all).", valueName: "scenario"))
    var scenario: String?

    @Option(help: "reference, mutant:NAME, exec:'command' or http:target.json (as for check).")
    var validator = "reference"

    @Option(help: "The customer (a name of yours; the backend sees a user id of its own, printed).")
    var user = "u1"

    @Option(help: "A product id of the catalog, or a kind: auto-renewable, non-renewing, non-consumable, consumable.")
    var product: String?

    @Option(help: "Units of a consumable purchase.") var quantity: Int?

    @Option(
        help: ArgumentHelp(
            "When the event happens: an instant (2027-01-31T10:00:00Z), a time after the customer's clock (+3d, +2h, +30m), or before it with = (--at=-2d, a new customer's purchase in the past).",
            valueName: "instant"))
    var at: String?

    @Option(
        help: ArgumentHelp(
            "Ask about an earlier instant than the send's, in hindsight: an instant (2027-02-05T00:00:00Z) or a time before the customer's clock (--ask-about=-20d). The backend's route must carry {at}; the oracle answers with what it knows after the send.",
            valueName: "instant"))
    var askAbout: String?

    @Option(help: "extend: the days added (default 30).") var days: Int?
    @Flag(help: "refund: a prorated (partial) refund.") var prorated = false
    @Flag(help: "fail-billing: the app's grace period is off, so none is given.") var noGrace = false
    @Flag(help: "price-increase: one that needs no consent (PRICE_INCREASE/ACCEPTED at once).") var noConsentNeeded =
        false
    @Flag(help: "price-increase: the customer consents to the increase that awaits it.") var accept = false

    @Option(
        help: ArgumentHelp(
            "Move the customer's clock on (30d, 12h, 2mo), delivering what the App Store sends on the way: renewals, grace and retry ends, expiries.",
            valueName: "duration"))
    var advance: String?

    @Flag(help: "Forget every customer of the state file and start over (the next send resets the backend again).")
    var reset = false

    @Option(help: "The state file: each customer's history and what the backend has had.")
    var state = ".iapcheck/send.json"

    @Flag(help: "Send nothing: write the signed artifacts, payloads and requests to --out (or print curl commands).")
    var dryRun = false

    @Option(help: "With --dry-run: the folder for the signed JWS, decoded payloads and request bodies.")
    var out: String?

    @Option(help: "text, or curl: print each request as a curl command instead of sending it (a dry run).")
    var format = "text"

    @Flag(help: "List the scenarios and exit.") var list = false

    @OptionGroup var app: SendAppOptions

    @Option(help: "Seconds to wait for each answer of the validator.") var timeout: Double = 10

    @Option(
        help: ArgumentHelp(
            "Accepted divergences, as for check (default: the \"baseline\" of an http: target file): a difference whose failure signature the file accepts is said to be accepted, with its reason, and exits 0. See docs/check.md#baselines.",
            valueName: "FILE"))
    var baseline: String?

    func validate() throws {
        guard ["text", "curl"].contains(format) else { throw ValidationError("--format takes text or curl") }
        if let scenario, SendScenario(rawValue: scenario) == nil {
            throw ValidationError("no scenario \"\(scenario)\"; iapcheck send --list names them")
        }
        if out != nil && !dryRun && format != "curl" { throw ValidationError("--out goes with --dry-run") }
        if user.isEmpty { throw ValidationError("--user needs a name") }
        // An option the scenario does not read would be silently ignored: refused, naming the scenario it goes with.
        let given: [(Bool, String, [SendScenario])] = [
            (quantity != nil, "--quantity", [.buy]), (days != nil, "--days", [.extend]),
            (prorated, "--prorated", [.refund]), (noGrace, "--no-grace", [.failBilling]),
            (noConsentNeeded, "--no-consent-needed", [.priceIncrease]), (accept, "--accept", [.priceIncrease]),
        ]
        let asked = scenario.flatMap(SendScenario.init(rawValue:))
        for (isGiven, option, scenarios) in given where isGiven && !scenarios.contains(where: { $0 == asked }) {
            throw ValidationError("\(option) goes with \(scenarios.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        if list {
            for s in SendScenario.allCases { print(s.rawValue.column(20) + " " + s.summary) }
            return
        }
        if reset { try startOver() }
        guard scenario != nil || advance != nil else {
            if reset { return }
            throw ValidationError("name a scenario (iapcheck send --list), or give --advance or --reset")
        }
        var session = try SendSession(command: self)
        let step = try session.nextStep()
        let code = try session.send(step)
        if code != 0 { throw ExitCode(code) }
    }

    /// `--reset`: the state file goes (said, with what it held).
    func startOver() throws {
        let path = statePath
        guard FileManager.default.fileExists(atPath: path) else {
            print("reset: no state at \(path); the next send starts a new one")
            return
        }
        let held = (try? SendState.load(path: path))??.customers.count ?? 0
        try FileManager.default.removeItem(atPath: path)
        print("reset: \(path) removed (\(held) customer\(held == 1 ? "" : "s")); the next send starts over")
    }

    /// The step this invocation asks for, at its instant.
    func step(at t: Millis) -> ScriptStep {
        var flags: [String] = []
        if prorated { flags.append("prorated") }
        if noGrace { flags.append("no-grace") }
        if noConsentNeeded { flags.append("no-consent-needed") }
        if accept { flags.append("accept") }
        return ScriptStep(
            scenario: scenario.flatMap(SendScenario.init(rawValue:)), at: t, product: product, quantity: quantity,
            days: days, flags: flags)
    }
}

/// The app the customers buy from, as `check` takes it (read once, when the state file starts).
struct SendAppOptions: ParsableArguments {
    @Option(help: "Catalog: an iapcheck catalog JSON or an Xcode .storekit file (default: the built-in catalog).")
    var catalog: String?
    @Option(help: "The app's bundle id (required with a .storekit catalog).") var bundleId: String?
    @Option(help: "The app's App Store id (appAppleId).") var appAppleId: Int64?
    @Option(help: "Production or Sandbox.") var environment: String?
    @Option(help: "Entitlements file (docs/catalog.md#entitlements).") var entitlements: String?
    @Option(help: "Policy file (docs/policies.md).") var policy: String?

    func load() throws -> (Catalog, Policy) {
        do {
            return try CaseOptions.resolve(
                catalog: catalog, bundleId: bundleId, appAppleId: appAppleId, environment: environment,
                entitlements: entitlements, policy: policy)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    var given: Bool { catalog != nil || bundleId != nil || appAppleId != nil || environment != nil || policy != nil }
}
