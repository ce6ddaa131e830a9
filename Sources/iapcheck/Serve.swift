import ArgumentParser
import Foundation
import IAPSubprocess

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Serve a built-in validator over the subprocess wire protocol (stdin/stdout), for exec: checks and as a model for implementers.",
        discussion: "Example: iapcheck check --validator exec:'iapcheck serve --validator reference'")

    @Option(help: "reference, variant:NAME (a correct alternative reading, e.g. variant:keeps-history) or mutant:NAME.")
    var validator = "reference"

    @Option(
        help:
            "Append every reset and delivery to this file, flushed before the reply, and replay it on start: acknowledgements survive a kill (check --faults kill)."
    )
    var journal: String?

    @Option(
        help: "Deliberate bug for the durable-ack property: write the journal in batches of N, after acknowledging.")
    var ackBeforePersist: Int = 1

    func run() throws {
        let v = try makeValidator(validator)
        guard !(v is SubprocessValidator) else { throw ValidationError("serve runs a built-in validator, not exec:") }
        WireProtocol.serve(v, journal: journal, ackBeforePersist: max(1, ackBeforePersist))
    }
}
