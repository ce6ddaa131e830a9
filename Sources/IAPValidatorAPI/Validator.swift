import Foundation
import IAPEncoding
import IAPModel

/// A validator under test, whatever transport reaches it (in-process, subprocess, HTTP).
///
/// The calls are synchronous: the harness drives one case at a time and needs each answer before it can go on.
/// A wrong answer is not an error: it comes back as a value and the harness compares it. Errors are reserved for
/// the validator failing as a program (crash, hang, garbage), reported as ``ValidatorFailure``.
public protocol Validator: AnyObject {
    /// A short name for reports (`reference`, `mutant:no-grace`, `exec:…`).
    var name: String { get }
    /// Forget everything and start a case with this catalog and these policies.
    func reset(_ config: ValidatorConfig) throws(ValidatorFailure)
    /// Deliver a signed artifact; `now` is the validator's clock.
    func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict
    /// Ask what a user may use at an instant.
    func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer
    /// The name the validator gave itself, when its transport lets it say one (an `exec:` validator's `hello`).
    var selfReportedName: String? { get }
    /// Let go of what the validator holds outside this process (a subprocess); it is not used again afterwards.
    func shutdown()
    /// What the validator answers and which channels it takes facts from (``ValidatorProfile``): the harness
    /// delivers only over those channels and compares only those fields. Known once ``prepare()`` has run.
    var profile: ValidatorProfile { get }
    /// Gets ready for the first case so that ``profile`` is known: a subprocess is started and says `hello`. A
    /// failure here is not reported by itself: the first case's `reset` meets it again and reports it.
    func prepare() throws(ValidatorFailure)
    /// How one case is kept from the next: a `reset`, or (a backend without one) ids of its own for every case.
    var isolation: CaseIsolation { get }
    /// How long the validator may take to apply what it acknowledged (a backend whose webhook queues its work,
    /// docs/http-target.md#asynchronous-backends): an answer that differs is asked again until it agrees or this
    /// has passed. 0: answers are final at once.
    var settleSeconds: Double { get }
    /// Whether an accepting answer on `channel` says only that the delivery was received (the validator verifies it
    /// later, from a queue): a delivery it must refuse is then judged by its effect on the answers, not by the
    /// verdict (docs/http-target.md#asynchronous-backends).
    func verifiesLater(_ channel: DeliveryChannel) -> Bool
    /// Whether the validator's backend may call the App Store Server API of its own accord (an HTTP target with a
    /// mock App Store): the harness then has the API answer as Apple would at each step (``serveAPI(_:)``) and its
    /// oracle learns what was served (``takeServedByAPI()``).
    var mayAskTheAPI: Bool { get }
    /// From now on the API answers a transaction id it was not given by a reconciliation with what `source` makes
    /// (nil: only what reconciliations publish).
    func serveAPI(_ source: APIAnswerSource?)
    /// The signed transactions and renewal infos the API served from the source since the last call.
    func takeServedByAPI() -> [String]
}

/// How a validator keeps cases apart (docs/http-target.md#backends-without-a-reset-route).
public enum CaseIsolation: Sendable, Equatable {
    /// `reset` forgets everything before each case; every case numbers its ids from the same start.
    case reset
    /// The validator keeps its state (it has no reset): every run of a case gets user, transaction and notification
    /// ids no earlier case or run used, and the catalog is the validator's own, fixed one.
    case namespace
}

extension Validator {
    public var selfReportedName: String? { nil }
    public func shutdown() {}
    public var profile: ValidatorProfile { .undeclared }
    public func prepare() throws(ValidatorFailure) {}
    public var isolation: CaseIsolation { .reset }
    public var settleSeconds: Double { 0 }
    public func verifiesLater(_ channel: DeliveryChannel) -> Bool { false }
    public var mayAskTheAPI: Bool { false }
    public func serveAPI(_ source: APIAnswerSource?) {}
    public func takeServedByAPI() -> [String] { [] }
}

/// A validator failing as a program rather than answering wrongly.
public struct ValidatorFailure: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable, Codable {
        case crashed, timedOut = "timed-out", badAnswer = "bad-answer", protocolViolation = "protocol-violation",
            unavailable
        /// What iapcheck was told about the validator does not fit it (an HTTP target's answer mapping finds
        /// nothing in the backend's response): a configuration error, exit code 2.
        case misconfigured
    }
    public var kind: Kind
    public var message: String
    /// The last messages exchanged before the failure, newest last.
    public var transcript: [String]
    /// What to change, when the failure says (a target file's key and what it should hold).
    public var fix: String?

    public init(_ kind: Kind, _ message: String, transcript: [String] = [], fix: String? = nil) {
        self.kind = kind
        // The message and transcript quote what the validator wrote: a line feed or an escape sequence in it is
        // shown, so it can neither start a forged report line nor clear the screen.
        self.message = Terminal.visible(message)
        self.transcript = transcript.map { Terminal.visible($0) }
        self.fix = fix
    }

    public var description: String { "\(kind.rawValue): \(message)" }

    /// Where a reply failed to decode, as a field path (`answer.products[1].state: …`).
    public static func decodingProblem(_ error: Error, in data: Data? = nil) -> String {
        func path(_ p: [CodingKey]) -> String {
            var out = ""
            for k in p {
                if let i = k.intValue { out += "[\(i)]" } else { out += (out.isEmpty ? "" : ".") + k.stringValue }
            }
            return out.isEmpty ? "the top level" : out
        }
        switch error as? DecodingError {
        case .typeMismatch(let t, let c)?: return "\(path(c.codingPath)): expected \(t)"
        case .valueNotFound(let t, let c)?: return "\(path(c.codingPath)): missing \(t)"
        case .keyNotFound(let k, let c)?: return "\(path(c.codingPath + [k])): missing"
        case .dataCorrupted(let c)?:
            let why =
                (c.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? c.debugDescription
            if let data, why.contains("not valid JSON"),
                (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
            {
                // Well-formed JSON that JSONDecoder refuses: a number that does not fit its field.
                return
                    "\(path(c.codingPath)): a number does not fit its field (a fraction or exponent where an integer belongs, or an integer beyond 64 bits)"
            }
            return "\(path(c.codingPath)): \(why)"
        default: return "\(error)"
        }
    }
}

/// An in-process validator that can also take facts already decoded, skipping signature verification: the fast
/// path for `check --unsigned` and for shrinking failures that do not depend on signatures.
public protocol DecodedDeliveryValidator: Validator {
    func deliver(decoded delivery: Delivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict
}

/// A validator that may be called from several threads at once (the parallel-delivery property): concurrent
/// clients, as a real backend has.
public protocol ConcurrentValidator: Validator {}

/// A validator behind a connection (a team's backend over HTTP) whose concurrent clients are other connections to
/// the same backend: the parallel-delivery property races two of them.
public protocol RaceableValidator: Validator {
    /// A client of the same backend and state for one side of the race: its own connection, closed after every
    /// request, so a backend that serves one connection at a time takes both sides in turn instead of hanging.
    func raceCaller() -> any Validator
    /// Closes the connection this validator keeps open between calls, before the race: a backend that serves one
    /// connection at a time would wait on it and never take the race's.
    func releaseConnection()
}

/// A validator that runs as a process of its own and can be killed and started again — without `reset`, so what it
/// persisted is all it has (the `durable-ack` fault profile).
public protocol RestartableValidator: Validator {
    func killAndRestart() throws(ValidatorFailure)
}
