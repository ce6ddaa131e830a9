import ArgumentParser
import IAPModel

/// Exit codes, documented in `--help` and the README.
enum Exit {
    static let pass: Int32 = 0
    static let discrepancy: Int32 = 1
    static let usage: Int32 = 2
    static let validatorFailure: Int32 = 3
    /// `merge-reports`: a shard is missing or was interrupted (and none of those present failed).
    static let incomplete: Int32 = 5
}

struct IAPCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iapcheck",
        abstract: "Property-based conformance checking of App Store purchase validators.",
        discussion: """
            iapcheck generates random App Store histories (purchases, renewals, billing retry and grace, upgrades, \
            refunds, Family Sharing, offers, …), delivers them to a validator as Apple would (late, twice, out of \
            order), and compares the validator's entitlement answers with a reference oracle. Failures are shrunk to a \
            minimal history and printed as a timeline with the command that replays them.

            Exit codes: 0 all properties hold; 1 a discrepancy was found; 2 usage or configuration error; \
            3 the validator failed as a program (crash, timeout, malformed answer); 4 a load threshold failed; \
            5 merge-reports found a shard missing or interrupted; 130 interrupted (Ctrl-C), after printing what the run had found.
            """,
        version: IAPCheckVersion.current + (buildCommit.map { " (commit \($0))" } ?? " (built from source)"),
        subcommands: [
            Check.self, DoctorCommand.self, MutantsCommand.self, Replay.self, Diff.self, Certify.self, Load.self,
            Store.self, Send.self,
            PKI.self, Bench.self,
            Serve.self, MergeReports.self,
        ],
        defaultSubcommand: Check.self)
}
