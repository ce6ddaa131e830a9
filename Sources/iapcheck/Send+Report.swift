import Foundation
import IAPConformance
import IAPModel
import IAPSimulator
import IAPValidatorAPI

/// What a send prints (docs/send.md#reading-a-send): what the App Store did, every delivery with the backend's
/// verdict, then the backend's answer about the customer beside the expected one, and on a difference the
/// explanation a `check` failure gives.
struct SendReport {
    let command: Send
    let c: GeneratedCase
    let outcome: SendRun.Outcome
    /// The script steps of this send (their events carry their numbers).
    let actions: Range<Int>
    let profile: ValidatorProfile
    /// The customer's transactions made outside the app that it has not submitted yet.
    var awaitingTheApp: [String] = []
    /// The baseline entry that accepts the difference, and its file (`--baseline`).
    var accepted: (Baseline.Entry, String)?

    /// A line of the report: on stdout, or on stderr when stdout carries curl commands.
    func say(_ line: String) {
        if command.format == "curl" {
            try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
        } else {
            Swift.print(line)
        }
    }

    func print(validatorName: String, statePath: String) {
        let who = c.persons[CustomerScript.customer]
        let what = command.scenario ?? "--advance \(command.advance ?? "")"
        say("send \(what) → \(validatorName): customer \(command.user) (user id \(who.accountId))")
        let events = c.events.filter { $0.action.map(actions.contains) ?? false }
        say("  the App Store:")
        if events.isEmpty {
            say(
                command.scenario == SendScenario.openApp.rawValue
                    ? "    \(CivilTime.iso8601(outcome.sent.first?.delivery.arrival ?? outcome.question?.query.at ?? 0))  \(command.user) opens the app; it submits the transactions it has not sent"
                    : "    nothing happens")
        }
        for e in events {
            // The simulator says its dates as offsets from the first purchase; here every line has an instant.
            let summary = CivilTime.absolute(in: e.summary.trimmingCharacters(in: .whitespaces), from: c.origin)
            say("    \(CivilTime.iso8601(e.time))  \(summary)")
        }
        let names = Dictionary(c.persons.map { ($0.accountId, $0.name) }, uniquingKeysWith: { a, _ in a })
        resent(names: names)
        say(outcome.sent.isEmpty ? "  delivered: nothing" : "  delivered:")
        for s in outcome.sent { say(delivery(s, names: names)) }
        if let f = outcome.failure {
            say("  the validator failed: \(f.message)")
            for line in f.transcript.suffix(6) { say("    \(line)") }
            return
        }
        answers()
        for id in awaitingTheApp {
            say(
                "  note: the app has not submitted transaction \(id) (made outside it): a backend cannot tell it is \(command.user)'s until it does (send open-app)"
            )
        }
    }

    /// Earlier sends' deliveries sent again first (the validator remembers nothing between sends): a count, and
    /// each one the validator judged otherwise than expected, in full.
    func resent(names: [String: String]) {
        guard !outcome.resent.isEmpty else { return }
        let wrong = outcome.resent.filter { !$0.asExpected }
        let n = outcome.resent.count
        say(
            "  sent again first, as the validator remembers nothing between sends: \(n) earlier deliver\(n == 1 ? "y" : "ies")"
                + (wrong.isEmpty ? ", each judged as expected" : ", \(wrong.count) judged otherwise:"))
        for s in wrong { say(delivery(s, names: names)) }
    }

    /// One delivery: what it was, its ids, the verdict (and the expected one when they differ), the exchange.
    func delivery(_ s: SendRun.Sent, names: [String: String]) -> String {
        let verdict: String =
            switch s.verdict {
            case .accepted: "accepted"
            case .rejected(let why): "rejected (\(why))"
            }
        let wrong = s.asExpected ? "" : "   ✗ expected: \(s.expected)"
        return
            "    \(CivilTime.iso8601(s.delivery.arrival))  \(Timeline.describe(s.delivery, names: names)) → \(command.isDryRun ? "written" : verdict)\(wrong)\n"
            + "        \(Self.ids(s.delivery.delivery))\(s.exchange.map { "   [\($0)]" } ?? "")"
    }

    /// The ids a backend keys on.
    static func ids(_ d: Delivery) -> String {
        func tx(_ t: JWSTransactionDecodedPayload) -> String {
            "transactionId \(t.transactionId), originalTransactionId \(t.originalTransactionId)"
        }
        switch d {
        case .notification(let n):
            return "notificationUUID \(n.notificationUUID)" + (n.data?.transactionInfo.map { ", " + tx($0) } ?? "")
        case .appTransaction(let a): return tx(a.transaction) + ", userId \(a.userId)"
        case .apiSnapshot(let s): return "originalTransactionId \(s.originalTransactionId)"
        case .legacyReceipt(let l): return "userId \(l.userId)"
        }
    }

    /// The declared expiries of what `a` holds, as instants: a passing send shows them too, so a backend's end date
    /// can be read against the expected one before anything fails.
    /// An expiry the facts leave open (a refund known ahead of the instant asked about) is said to be not compared.
    func ends(_ a: EntitlementAnswer, open: Set<AnswerDifference.Key> = []) -> String {
        var held: [(String, Millis?, AnswerSubject)] = []
        if profile.declares(.productsExpiresDate) {
            held += a.products.filter(\.active).map { ($0.productId, $0.expiresDate, .product($0.productId)) }
        }
        if profile.declares(.entitlementsExpiresDate) {
            held += a.entitlements.filter(\.active).map {
                ($0.entitlementId, $0.expiresDate, .entitlement($0.entitlementId))
            }
        }
        guard !held.isEmpty else { return "" }
        return "; "
            + held.map { id, end, subject in
                "\(id) until \(end.map(CivilTime.iso8601) ?? "never")"
                    + (open.contains(.init(subject: subject, field: .expiresDate))
                        ? " (or an end known ahead: not compared)" : "")
            }.joined(separator: ", ")
    }

    func answers() {
        guard let q = outcome.question else { return }
        say(
            "  asked about \(command.user) at \(CivilTime.iso8601(q.query.at))"
                + (q.isHindsight ? " (in hindsight, after the send at \(CivilTime.iso8601(q.appleTime)))" : "") + ":")
        if let e = outcome.expected {
            say("    expected: \(CaseRunner.summary(e, profile: profile))\(ends(e, open: outcome.open))")
        }
        guard !command.isDryRun else { return }
        if let o = outcome.observed { say("    observed: \(CaseRunner.summary(o, profile: profile))\(ends(o))") }
        guard let d = outcome.discrepancy else {
            say("  agree: the backend's answer is the expected one")
            return
        }
        if let (entry, file) = accepted {
            say("  DIFFERS, an accepted divergence (\(file)): \(d.finding)")
            say("    accepted: \(entry.signature): \(entry.reason)")
        } else {
            say("  DIFFERS: \(d.finding)")
        }
        if d.kind == .verdict { say("    expected \(d.expected); observed \(d.observed)") }
        for line in d.differences { say("    \(line)") }
        for line in Explanation.lines(d, in: c) { say("  \(line)") }
    }
}
