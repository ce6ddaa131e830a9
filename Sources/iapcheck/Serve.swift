import ArgumentParser
import Foundation
import IAPValidators

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a built-in validator over the subprocess wire protocol (stdin/stdout), for exec: checks and as a model for implementers.",
        discussion: "Example: iapcheck check --validator exec:'iapcheck serve --validator reference'")

    @Option(help: "reference or mutant:NAME.")
    var validator = "reference"

    func run() throws {
        let v = try makeValidator(validator)
        guard !(v is SubprocessValidator) else { throw ValidationError("serve runs a built-in validator, not exec:") }
        WireProtocol.serve(v)
    }
}
