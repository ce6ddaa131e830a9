import ArgumentParser
import Foundation
import IAPModel
import IAPSubprocess

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Serve a built-in validator over the subprocess wire protocol (stdin/stdout), for exec: checks and as a model for implementers.",
        discussion: """
            Example: iapcheck check --validator exec:'iapcheck serve --validator reference'

            With --answers or --channels the validator declares that profile in its hello and answers only the \
            declared fields, like a backend that answers in entitlements and takes no legacy receipts:
              iapcheck check --catalog Examples/entitlements.json \\
                --validator exec:'iapcheck serve --answers entitlements.active,entitlements.expiresDate --channels app-transaction,notification'
            Answer fields: \(AnswerField.allCases.map(\.rawValue).joined(separator: ", ")).
            Channels: \(DeliveryChannel.allCases.map(\.protocolName).joined(separator: ", ")).
            """)

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

    @Option(
        help: ArgumentHelp(
            "Declare and answer only these answer fields (comma-separated, e.g. entitlements.active,entitlements.expiresDate).",
            valueName: "fields"))
    var answers: String?

    @Option(
        help: ArgumentHelp(
            "Declare that only these channels are taken (comma-separated: app-transaction, notification, api-snapshot, legacy-receipt).",
            valueName: "channels"))
    var channels: String?

    func run() throws {
        var profile: ValidatorProfile?
        if answers != nil || channels != nil {
            do {
                profile = try ValidatorProfile.parse(
                    answers: answers.map(commaList), channels: channels.map(commaList), prefix: "--")
            } catch {
                throw ValidationError(error.message)
            }
        }
        let v = try makeValidator(validator)
        guard !(v is SubprocessValidator) else { throw ValidationError("serve runs a built-in validator, not exec:") }
        WireProtocol.serve(v, journal: journal, ackBeforePersist: max(1, ackBeforePersist), profile: profile)
    }
}
