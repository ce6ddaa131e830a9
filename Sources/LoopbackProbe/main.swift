// iapcheck's loopback HTTP server alone in a process, for its abuse tests (Tests/ValidatorTransportTests/
// LoopbackAbuseTests.swift): attacked from the test process, its threads and memory are its own to measure, and it
// builds quickly under ThreadSanitizer (it needs no crypto), as .ci/run builds it.
//
//     iapcheck-loopback-probe [--max-connections N] [--request-seconds S] [--max-body BYTES]
//
// Prints the port it listens on (127.0.0.1, a free one), followed by " tsan" when it runs under ThreadSanitizer
// (whose memory the tests do not hold to the plain build's figures), serves until its standard input closes, then
// stops and exits 0. `GET /` answers "ok"; any other request answers the length of the body it read.
import Foundation
import IAPHTTP

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard name.hasPrefix("--"), let value = arguments.popFirst() else {
        try? FileHandle.standardError.write(
            contentsOf:
                Data(
                    "usage: iapcheck-loopback-probe [--max-connections N] [--request-seconds S] [--max-body BYTES]\n"
                        .utf8)
        )
        exit(2)
    }
    options[String(name.dropFirst(2))] = value
}
let server: LoopbackHTTPServer
do {
    server = try LoopbackHTTPServer(
        port: 0,
        maxBody: options["max-body"].flatMap { Int($0) } ?? 8 << 20,
        maxConnections: options["max-connections"].flatMap { Int($0) } ?? 256,
        requestSeconds: options["request-seconds"].flatMap { Double($0) } ?? LoopbackHTTPServer.requestSeconds
    ) { request in
        request.method == "GET" && request.path == "/"
            ? .init(status: 200, text: "ok") : .init(status: 200, text: "\(request.body.count)")
    }
} catch {
    try? FileHandle.standardError.write(contentsOf: Data("iapcheck-loopback-probe: \(error)\n".utf8))
    exit(1)
}
server.start()
let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
try? FileHandle.standardOutput.write(contentsOf: Data("\(server.port)\(sanitized ? " tsan" : "")\n".utf8))
while readLine() != nil {}
server.stop()
exit(0)
