import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPLoad
import IAPModel
import IAPSigning
import IAPSubprocess
import IAPVerification

/// The inputs iapcheck takes from outside, each behind one function that must never trap, hang or leak: a libFuzzer
/// target per reader (`Fuzz/run.sh TARGET SECONDS`), and a replay of saved inputs without the fuzzer (`swift run
/// iapcheck-fuzz TARGET FILE…`, what CI runs over the committed corpus and every crash found so far).
enum FuzzTarget: String, CaseIterable {
    /// JWS verification on arbitrary bytes: transactions, renewal info and notification envelopes.
    case verifier
    /// A wire-protocol reply line from a subprocess validator, then the answer's validation and comparison.
    case reply
    /// Every configuration reader: catalog, .storekit, policy, load profile (JSON and YAML), corpus, HTTP target,
    /// load baseline.
    case readers
    /// The loopback HTTP client's response parser (status line, headers, Content-Length, chunked bodies).
    case http

    func run(_ data: [UInt8]) {
        switch self {
        case .verifier: Self.verify(data)
        case .reply: Self.reply(data)
        case .readers: Self.readers(data)
        case .http: Self.http(data)
        }
    }

    static let jwsVerifier = SignedDataVerifier(trustedRoots: TestPKI.shared(seed: 1).trustedRoots)

    static func verify(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        _ = jwsVerifier.verify(text, as: JWSTransactionDecodedPayload.self) { $0.signedDate }
        _ = jwsVerifier.verify(text, as: JWSRenewalInfoDecodedPayload.self) { $0.signedDate }
        _ = jwsVerifier.verify(text, as: ResponseBodyV2SignedPayload.self) { $0.signedDate }
        // The hand-written readers never disagree with JSONDecoder: on the bytes as they are, and on a JWS's payload.
        agree(data)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 3, let payload = Base64URL.decode(parts[1]) { agree(payload) }
    }

    static func agree(_ bytes: [UInt8]) {
        func same<T: FlatJSONCodable & Equatable>(_: T.Type) {
            guard let fast = bytes.withUnsafeBufferPointer({ T(flatJSON: $0) }) else { return }
            let slow = try? JSONDecoder().decode(T.self, from: Data(bytes))
            precondition(fast == slow, "FlatJSON read \(T.self) otherwise than JSONDecoder")
        }
        same(JWSTransactionDecodedPayload.self)
        same(JWSRenewalInfoDecodedPayload.self)
        same(ResponseBodyV2SignedPayload.self)
    }

    static let expected = EntitlementAnswer(
        products: [
            ProductEntitlement(
                productId: "pro.monthly", active: true, state: .active, expiresDate: 1_774_915_200_000,
                ownership: .purchased)
        ],
        groups: [GroupEntitlement(groupId: "21000001", effectiveProductId: "pro.monthly", introEligible: false)],
        consumables: [ConsumableBalance(productId: "coins.100", balance: 3)])

    static func reply(_ data: [UInt8]) {
        guard let reply = try? JSONDecoder().decode(WireProtocol.Reply.self, from: Data(data)) else { return }
        guard let a = reply.answer else { return }
        let answer = a.sorted
        _ = answer.problems
        _ = answer.differences(from: expected)
        _ = expected.differences(from: answer)
        _ = CaseRunner.summary(answer)
    }

    static let scratch: String = {
        let dir = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        return (dir as NSString).appendingPathComponent("iapcheck-fuzz-\(getpid())")
    }()

    static func readers(_ data: [UInt8]) {
        for ext in ["json", "storekit", "yaml"] {
            let path = "\(scratch).\(ext)"
            FileManager.default.createFile(atPath: path, contents: Data(data))
            defer { try? FileManager.default.removeItem(atPath: path) }
            _ = try? CatalogLoader.load(path: path)
            guard ext != "storekit" else { continue }
            _ = try? LoadProfile.load(path: path)
            guard ext == "json" else { continue }
            _ = try? Policy.load(path: path)
            _ = try? Corpus.load(path: path)
            _ = try? HTTPValidator.Target.load(path: path)
            _ = try? LoadResults.loadBaseline(path: path)
        }
    }

    static func http(_ data: [UInt8]) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return }
        // The input is the whole response; the writer closes, so the parser sees the end of the connection.
        let written = data.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        close(fds[1])
        let client = LoopbackHTTPClient(connectedSocket: fds[0], timeout: 1)  // owns and closes fds[0]
        guard written == data.count else { return }
        _ = try? client.readOneResponse()
    }
}

#if IAPCHECK_FUZZ
    /// libFuzzer's driver (in the fuzzer runtime that `-sanitize=fuzzer` links). SwiftPM makes an executable's `main`
    /// an alias of its Swift entry point, so the driver is started from there instead of from libFuzzer's own `main`.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// The target, from IAPCHECK_FUZZ_TARGET (Fuzz/run.sh sets it); read once, before the first input.
    let fuzzTarget: FuzzTarget = {
        guard let t = FuzzTarget(rawValue: ProcessInfo.processInfo.environment["IAPCHECK_FUZZ_TARGET"] ?? "") else {
            print(
                "set IAPCHECK_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")) (Fuzz/run.sh does)"
            )
            exit(2)
        }
        return t
    }()

    /// libFuzzer calls this for every input (whichever `main` the linker keeps: libFuzzer's, or ours below).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
        fuzzTarget.run(count == 0 || bytes == nil ? [] : Array(UnsafeBufferPointer(start: bytes, count: count)))
        return 0
    }

    @main
    enum FuzzMain {
        static func main() {
            _ = fuzzTarget
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(runFuzzerDriver(&argc, &argv) { bytes, count in fuzzOneInput(bytes, count) })
        }
    }
#else
    @main
    enum FuzzReplay {
        static func main() {
            let args = CommandLine.arguments.dropFirst()
            guard let name = args.first, let target = FuzzTarget(rawValue: name) else {
                print(
                    "usage: iapcheck-fuzz TARGET FILE|DIR…   (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
                print("Replays saved inputs through a fuzz target; Fuzz/run.sh TARGET SECONDS runs the fuzzer itself.")
                exit(2)
            }
            var files: [String] = []
            for arg in args.dropFirst() {
                var isDir: ObjCBool = false
                if FileManager.default.fileExists(atPath: arg, isDirectory: &isDir), isDir.boolValue {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: arg)) ?? []
                    files += names.sorted().filter { !$0.hasPrefix(".") }.map {
                        (arg as NSString).appendingPathComponent($0)
                    }
                } else {
                    files.append(arg)
                }
            }
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    print("cannot read \(file)")
                    exit(2)
                }
                target.run(Array(data))
            }
            print("\(target.rawValue): \(files.count) inputs replayed, no crash")
        }
    }
#endif
