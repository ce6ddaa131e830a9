import ArgumentParser
import Foundation

// ArgumentParser exits 64 on a usage error; iapcheck documents 2 for every usage or configuration error (README,
// `--help`), so a CI gate can tell "the command was wrong" from "the validator failed" with one code.
do {
    var command = try IAPCheck.parseAsRoot()
    try command.run()
} catch {
    if IAPCheck.exitCode(for: error) == .validationFailure {
        FileHandle.standardError.write(Data((IAPCheck.fullMessage(for: error) + "\n").utf8))
        exit(Exit.usage)
    }
    IAPCheck.exit(withError: error)
}
