import Foundation
import IAPHTTP
import IAPModel
import IAPSubprocess
import IAPTesting
import IAPValidatorAPI
import Testing

/// Whatever a validator or a backend sends back, the transports end each request by its deadline with a named
/// failure, and never trap: the harness must be the most robust program in the room.
@Suite struct HostileTransportTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let server = root.appendingPathComponent("Tests/Fixtures/hostile/http_server.py").path
    static let binary = BuiltIAPCheck.path
    let config = ValidatorConfig(catalog: .standard, policy: .default)

    /// Starts the hostile server in `mode`; returns the process and its port.
    static func start(_ mode: String) throws -> (Process, Int) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", server, mode]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(p.processIdentifier, SIGKILL)
            throw CancellationError()
        }
        return (p, port)
    }

    static func request(_ mode: String, host: String = "127.0.0.1", timeout: Double = 2) throws -> (
        Result<(status: Int, body: Data), LoopbackHTTPClient.Failure>, Double
    ) {
        let (p, port) = try start(mode)
        defer { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        let client = LoopbackHTTPClient(host: host, port: port, timeout: timeout)
        let start = Date()
        let result: Result<(status: Int, body: Data), LoopbackHTTPClient.Failure>
        do {
            result = .success(try client.request("GET", "/"))
        } catch {
            result = .failure(error)
        }
        return (result, Date().timeIntervalSince(start))
    }

    /// Interim 1xx responses are skipped (RFC 9110 section 15.2), whether they come alone or in one send with the
    /// final response: taken as final, they failed a correct backend and shifted every later answer by one request.
    @Test(arguments: ["ok-chunked", "ok-close", "ok-http10", "ok-continue", "ok-hints"])
    func correctResponsesInEveryFramingAreRead(_ mode: String) throws {
        let (result, _) = try Self.request(mode)
        let reply = try result.get()
        #expect(reply.status == 200)
        #expect(String(decoding: reply.body, as: UTF8.self) == #"{"ok":true}"#)
    }

    /// Whether this machine has an IPv6 loopback to listen on.
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in6()
        addr.sin6_family = sa_family_t(AF_INET6)
        addr.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()

    /// A target may name `localhost` or `[::1]`; a server told to listen on "localhost" may hold ::1 alone.
    @Test(.enabled(if: hasIPv6Loopback, "no IPv6 loopback on this machine"), arguments: ["localhost", "::1"])
    func aServerOnIPv6LoopbackIsReached(_ host: String) throws {
        let reply = try Self.request("ok-chunked-v6", host: host).0.get()
        #expect(reply.status == 200)
        #expect(try Self.request("ok-chunked", host: "localhost").0.get().status == 200)
    }

    @Test(
        .long,
        arguments: [
            ("oversized", LoopbackHTTPClient.Failure.Kind.malformed),
            ("endless-chunk", .malformed),
            ("drip", .timedOut),
            ("huge-length", .malformed),
            ("endless-head", .malformed),
            ("garbage", .malformed),
        ])
    func hostileResponsesEndByTheDeadlineWithANamedFailure(_ mode: String, _ kind: LoopbackHTTPClient.Failure.Kind)
        throws
    {
        let (result, seconds) = try Self.request(mode, timeout: 2)
        guard case .failure(let f) = result else {
            Issue.record("\(mode) was accepted")
            return
        }
        #expect(f.kind == kind, "\(mode): \(f.message)")
        #expect(seconds < 6, "\(mode) took \(seconds) s")
    }

    // MARK: Subprocess validators

    func failure(_ command: String, timeout: Double = 2, _ body: (SubprocessValidator) throws(ValidatorFailure) -> Void)
        -> ValidatorFailure?
    {
        Fixtures.subprocessFailure(command, timeout: timeout, body)
    }

    static let hello = #"{"id":1,"type":"hello","protocol":1}"#
    static let ok = #"{"id":2,"type":"ok"}"#

    /// A validator that answers hello and reset, then answers the first query with `answer` (an `answer` object).
    func query(_ answer: String) -> ValidatorFailure? {
        let script =
            "read l; echo '\(Self.hello)'; read l; echo '\(Self.ok)'; read l; echo '{\"id\":3,\"type\":\"answer\",\"answer\":\(answer)}'; sleep 5"
        return failure(script) { v throws(ValidatorFailure) in
            try v.reset(config)
            _ = try v.entitlements(EntitlementQuery(userId: "u", at: 0))
        }
    }

    @Test func anAnswerListingAProductTwiceIsABadAnswerNotACrash() {
        let p = #"{"productId":"pro.monthly","active":true,"state":"active","expiresDate":1,"ownership":"PURCHASED"}"#
        let f = query(#"{"products":[\#(p),\#(p)],"groups":[],"consumables":[]}"#)
        #expect(f?.kind == .badAnswer)
        #expect(f?.message.contains("products[].productId") == true)
    }

    /// No App Store id holds a control character; printed, one forged report lines ("expected: nothing") or cleared
    /// the screen. A name the program gives itself is shown with its control characters escaped.
    @Test func controlCharactersInAnswersAreBadAnswersAndInANameAreShownEscaped() {
        // printf, not echo: sh's echo would turn the JSON escapes into the characters themselves.
        let p = #"{"productId":"x\nexpected: nothing\u001b[31m","active":false,"state":"expired"}"#
        let answer = #"{"id":3,"type":"answer","answer":{"products":[\#(p)],"groups":[],"consumables":[]}}"#
        let script =
            "read l; printf '%s\\n' '\(Self.hello)'; read l; printf '%s\\n' '\(Self.ok)'; read l; printf '%s\\n' '\(answer)'; sleep 5"
        let f = failure(script) { v throws(ValidatorFailure) in
            try v.reset(config)
            _ = try v.entitlements(EntitlementQuery(userId: "u", at: 0))
        }
        #expect(f?.kind == .badAnswer)
        #expect(f?.message.contains("control character") == true, "\(f?.message ?? "")")
        let named = #"{"id":1,"type":"hello","protocol":1,"name":"a\nexec:reference: 30/30 cases passed\u001b[2J"}"#
        let v = SubprocessValidator(command: "read l; printf '%s\\n' '\(named)'; sleep 5", timeout: 2)
        defer { v.shutdown() }
        #expect(throws: Never.self) { try v.prepare() }
        #expect(v.name == #"exec:a\u{A}exec:reference: 30/30 cases passed\u{1B}[2J"#, "\(v.name)")
        // Whatever a failure quotes of the validator is shown the same way, line feeds included.
        let quoted = ValidatorFailure(
            .protocolViolation, "validator error: boom\nFORGED LINE", transcript: ["← \u{1B}[2J"])
        #expect(quoted.message == #"validator error: boom\u{A}FORGED LINE"# && quoted.transcript == [#"← \u{1B}[2J"#])
    }

    @Test func anUnknownStateIsABadAnswerNamingTheField() {
        let f = query(#"{"products":[{"productId":"p","active":true,"state":"zombie"}],"groups":[],"consumables":[]}"#)
        #expect(f?.kind == .badAnswer)
        #expect(f?.message.contains("answer.products[0].state") == true, "\(f?.message ?? "")")
    }

    @Test func aBalanceBeyondAnyIntegerIsABadAnswer() {
        let f = query(
            #"{"products":[],"groups":[],"consumables":[{"productId":"c","balance":99999999999999999999999}]}"#)
        #expect(f?.kind == .badAnswer)
    }

    @Test func aReplyLineBeyondTheLimitIsABadAnswerWithoutReadingItAll() {
        let start = Date()
        // 300 MB of 'x' without a newline after hello.
        let f = failure(
            "read l; echo '\(Self.hello)'; read l; head -c 300000000 /dev/zero | tr '\\0' x; sleep 5", timeout: 20
        ) { v throws(ValidatorFailure) in
            try v.reset(config)
        }
        #expect(f?.kind == .badAnswer)
        #expect(Date().timeIntervalSince(start) < 20)
    }

    @Test func aHalfLineThenSilenceTimesOut() {
        let f = failure(#"read l; printf '{"id":1,"type":"hel'; sleep 30"#, timeout: 1) { v throws(ValidatorFailure) in
            try v.reset(config)
        }
        #expect(f?.kind == .timedOut)
        #expect(f?.message.contains("unfinished line") == true)
    }

    /// 50 MB on stderr before the first reply: stderr is drained while iapcheck waits, so nothing blocks.
    @Test func aFloodOfStderrDoesNotBlockTheValidator() throws {
        let v = SubprocessValidator(command: "head -c 50000000 /dev/zero >&2; exec \(Self.binary) serve", timeout: 20)
        defer { v.stop() }
        try v.reset(config)
        _ = try v.entitlements(EntitlementQuery(userId: "u", at: 0))
    }

    /// The validator exits but a grandchild it started keeps the pipes open: reported as a crash at once.
    @Test func anExitWhileAGrandchildHoldsThePipeIsACrashNotAHang() {
        let start = Date()
        let f = failure("read l; (sleep 30 &) ; exit 4", timeout: 10) { v throws(ValidatorFailure) in
            try v.reset(config)
        }
        #expect(f?.kind == .crashed)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test func aValidatorThatClosesItsStdoutIsACrash() {
        let start = Date()
        let f = failure("read l; exec 1>&-; sleep 30", timeout: 10) { v throws(ValidatorFailure) in try v.reset(config)
        }
        #expect(f?.kind == .crashed)
        #expect(Date().timeIntervalSince(start) < 5)
    }

    /// Writing to a validator that closed its stdin is EPIPE, reported as a crash; SIGPIPE must not kill iapcheck.
    @Test func aValidatorThatClosesItsStdinIsReportedNotFatal() {
        let f = failure("exec 0<&-; sleep 5", timeout: 5) { v throws(ValidatorFailure) in try v.reset(config) }
        #expect(f?.kind == .crashed || f?.kind == .timedOut)
    }

    /// Children a validator leaves behind when it exits are killed with its process group.
    @Test func whatTheValidatorStartedDiesWithIt() throws {
        let marker = "31\(Int.random(in: 100_000...999_999))"
        let f = failure("read l; echo '\(Self.hello)'; sleep \(marker) & read l; exit 4", timeout: 5) {
            v throws(ValidatorFailure) in
            try v.reset(config)
        }
        #expect(f?.kind == .crashed)
        usleep(200_000)
        let alive = (try FileManager.default.contentsOfDirectory(atPath: "/proc")).contains { pid in
            Int(pid) != nil
                && ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains(marker)
        }
        #expect(!alive, "a child of the validator outlived it")
    }

    /// A journal that cannot be written (a full disk) fails the request instead of acknowledging it.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: binary)
                && FileManager.default.fileExists(atPath: "/dev/full")))
    func aJournalThatCannotBeFlushedIsNotAcknowledged() {
        let f = failure("\(Self.binary) serve --journal /dev/full", timeout: 10) { v throws(ValidatorFailure) in
            try v.reset(config)
        }
        #expect(f?.kind == .protocolViolation)
        #expect(f?.message.contains("not persisted") == true, "\(f?.message ?? "")")
    }
}
