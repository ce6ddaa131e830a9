import Foundation

/// What `--validator` (and a load profile's `target`) names, parsed once (docs/check.md#validators): every command
/// asks this value what it is, never the text. Names inside (a mutant's, a program's command, a target file) are
/// kept as given; whether they exist is for the command that makes the validator to say.
public enum ValidatorSpec: Hashable, Sendable, CustomStringConvertible {
    /// The built-in reference validator.
    case reference
    /// A built-in deliberate mistake (`mutant:NAME`).
    case mutant(String)
    /// The reference making a reading Apple leaves open differently (`variant:NAME`).
    case variant(String)
    /// A program speaking the wire protocol (`exec:COMMAND`, run with `/bin/sh`).
    case exec(String)
    /// A running or managed HTTP backend described by a target file (`http:TARGET.json`).
    case http(String)

    /// Why a text is no validator.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The forms, as messages list them.
    public static let forms = "reference, variant:NAME, mutant:NAME, exec:'COMMAND' or http:TARGET.json"

    /// Parses `text`; the one place a validator's text is read.
    public init(parsing text: String) throws(ParseError) {
        if text == "reference" {
            self = .reference
            return
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw ParseError(description: "unknown validator \"\(text)\": use \(Self.forms)")
        }
        let kind = text[..<colon], rest = String(text[text.index(after: colon)...])
        let make: (String) -> ValidatorSpec
        switch kind {
        case "mutant": make = ValidatorSpec.mutant
        case "variant": make = ValidatorSpec.variant
        case "exec": make = ValidatorSpec.exec
        case "http": make = ValidatorSpec.http
        default: throw ParseError(description: "unknown validator \"\(text)\": use \(Self.forms)")
        }
        guard !rest.trimmingCharacters(in: .whitespaces).isEmpty else {
            let example =
                kind == "exec" ? "exec:'python3 my_validator.py'" : kind == "http" ? "http:target.json" : "\(kind):NAME"
            throw ParseError(
                description:
                    "\(kind): needs \(kind == "exec" ? "a command" : kind == "http" ? "a target file" : "a name"), e.g. \(example)"
            )
        }
        self = make(rest)
    }

    /// The text it was parsed from: what replay commands print.
    public var description: String {
        switch self {
        case .reference: "reference"
        case .mutant(let n): "mutant:" + n
        case .variant(let n): "variant:" + n
        case .exec(let c): "exec:" + c
        case .http(let f): "http:" + f
        }
    }

    /// A validator in this process (the reference, a mutant, a variant): cheap to copy per job, no program to start.
    public var isInProcess: Bool {
        switch self {
        case .reference, .mutant, .variant: true
        case .exec, .http: false
        }
    }

    /// A program or a backend: every call crosses a process boundary (shrinking then runs on a time budget, and the
    /// doctor checks it before the first case).
    public var isOutOfProcess: Bool { !isInProcess }

    /// A deliberate mistake: its failures are the point, never saved as counterexamples.
    public var isMutant: Bool { if case .mutant = self { true } else { false } }

    public var mutantName: String? { if case .mutant(let n) = self { n } else { nil } }

    /// The target file of an `http:` validator.
    public var targetFile: String? { if case .http(let f) = self { f } else { nil } }
}
