/// What a transport adds to the fixes `iapcheck doctor` prints: where an operation is configured (an HTTP target's
/// file and route), what the last request was, how the validator is given "now".
public struct DoctorHints {
    /// `routes.appTransaction in backend.json` for an operation; nil when the transport has no such place.
    public var whereIs: (String) -> String? = { _ in nil }
    /// The last request (`POST /purchases`) and the status of its reply, for an HTTP target.
    public var lastExchange: () -> (request: String, status: Int?)? = { nil }
    /// What to change when the validator does not read the clock iapcheck sets.
    public var clockFix =
        "the validator must answer for the instant it is asked about (the query's `at`) and take `now` from each request, never from its own clock"
    /// What to change when the validator cannot be reached.
    public var unreachableFix = "start the validator, and check how iapcheck reaches it"
    /// Where to look when a simple purchase already fails: the validator's own words, by transport.
    public var failureFix =
        "the validator's reply above, or its stderr, says why (a message or a field it does not read: docs/wire-protocol.md lists them)"
    /// Whether iapcheck reads `active` off the answer's expiry (a target's mapping without an `active` field): the
    /// answers then change at an expiry whether or not the backend reads the clock.
    public var activeFromExpiry = false
    /// The transport's limit per request (`--timeout`), in seconds; nil when it has none.
    public var timeout: Double?
    /// A response about one entry whose id the target file fixes (`"one": "premium"`), per list (`entitlements`,
    /// `products`), with the key naming it: such an answer says nothing of the catalog's other entries.
    public var namedAlone: [(list: String, id: String, key: String)] = []
    public init() {}
}

/// A validator whose transport can say where its configuration lives (``DoctorHints``).
public protocol DoctorHinting {
    var doctorHints: DoctorHints { get }
}
