import ArgumentParser
import Foundation
import IAPConformance
import IAPModel
import IAPSupport
import IAPValidatorAPI

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check, before any case, that a validator can be checked, and say how to fix what stops it.",
        discussion: """
            Starts (or reaches) the validator, resets it (or notes that every case will run in ids of its own, for a \
            backend without a reset route), sends one genuine purchase on every channel it declares and one forged \
            artifact, asks about the purchase a minute either side of its expiry (the validator must read the clock \
            iapcheck sets) and a day into it (the answer must read as its mapping says), and times each operation. \
            Prints a checklist: ✓ fine, ✗ a configuration problem with its fix, ! a wrong answer the check itself \
            will report with a shrunk history, - not checked. `check` runs the same checks first for exec: and http: \
            validators and stops on a ✗. See docs/doctor.md.

            Exit codes: 0 the validator can be checked; 2 it cannot (a ✗ line), or a usage error.
            """)

    @Option(help: "The validator: exec:'COMMAND' or http:TARGET.json (or any check --validator).") var validator: String
    @Option(help: "Seconds per request before the validator is reported as hanging.") var timeout = Check.defaultTimeout
    @OptionGroup var options: CaseOptions

    func run() throws {
        let (catalog, loaded) = try options.loadOrExit()
        let policy = try adoptingMeaning(loaded, try parseValidator(validator))
        let v = try makeValidator(validator, timeout: timeout)
        defer { v.shutdown() }
        if v.isolation == .namespace && options.catalog == nil {
            throw fail(
                "error: \(validator) has no reset route, so the backend keeps its own products: name them with --catalog (and --bundle-id, --entitlements), as the backend is configured",
                code: Exit.usage)
        }
        print("iapcheck doctor \(validator)")
        let report = preflight(validator, v, catalog: catalog, policy: policy)
        print(report.text)
        if report.usable {
            var selection = options.selection(validator: validator)
            selection.timeout = timeout == Check.defaultTimeout ? nil : timeout
            print("usable: \(selection.check)")
        } else {
            print("not usable: fix the ✗ lines above")
            throw ExitCode(Exit.usage)
        }
    }
}

/// The doctor's checklist for a validator, with the fixes its transport can name (an HTTP target's file, routes and
/// clock; a program's protocol).
func preflight(_ spec: String, _ v: any Validator, catalog: Catalog, policy: Policy) -> Doctor.Report {
    Doctor(validator: v, catalog: catalog, policy: policy).run()
}
