import Crypto
import Dispatch
import Foundation
import IAPEncoding
import IAPModel
import IAPReference
import IAPSigning
import IAPValidatorAPI
import IAPVerification

/// `iapcheck bench verify`: the reference's JWS verification (warm chain cache, and none) beside raw P-256 ECDSA
/// verification of the same signing inputs, on one thread and on several, in one run.
public enum VerifyBench {
    public struct Row: Codable, Sendable {
        public var name: String
        public var threads: Int
        public var opsPerSecond: Double
        public var microsecondsPerOp: Double

        /// `name  threads  ops/s  µs/op`, aligned.
        var line: String {
            "\(name.column(44)) \(String(threads).leftPad(2)) thread\(threads == 1 ? " " : "s") \(String(Int(opsPerSecond)).leftPad(8)) ops/s  \(String(format: "%7.1f", microsecondsPerOp)) µs/op"
        }
    }

    /// Measures each path for `seconds` over a pool of `tokens` StoreKit 2-shaped transactions signed by one leaf;
    /// `emit` receives the table's lines and the warm-cache / raw ratios.
    public static func run(seconds: Double, tokens: Int, threads: Int, emit: (String) -> Void) throws -> [Row] {
        let pki = TestPKI.harness
        let (p, r, key) = tokenPool(tokens)
        emit("token: \(p[0].utf8.count) bytes, x5c of 3 (P-384 root and intermediate, P-256 leaf); pool of \(tokens)")
        let reference = ReferenceValidator()
        try reference.reset(ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: pki.trustedRoots))
        let warm = reference.verifier  // the reference validator's own verifier, shared by the threads
        var coldOptions = SignedDataVerifier.Options()
        coldOptions.cacheChains = false
        let cold = SignedDataVerifier(trustedRoots: pki.trustedRoots, options: coldOptions)
        let poolCount = p.count
        // Raw: hashed as the reference hashes (the hasher's buffer entry point), so the two differ only by what the
        // reference does besides the cryptography.
        let rawOp: @Sendable (Int) -> Bool = { i in
            let (input, sig) = r[i % poolCount]
            let s = try! P256.Signing.ECDSASignature(rawRepresentation: sig)
            return input.withUnsafeBytes { key.isValidSignature(s, for: JWSSigner.sha256($0)) }
        }
        let warmOp: @Sendable (Int) -> Bool = { i in
            (try? warm.verify(p[i % poolCount], as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()) != nil
        }
        let coldOp: @Sendable (Int) -> Bool = { i in
            (try? cold.verify(p[i % poolCount], as: JWSTransactionDecodedPayload.self) { $0.signedDate }.get()) != nil
        }
        var rows: [Row] = []
        for n in Set([1, max(1, threads)]).sorted() {
            for (name, op) in [
                ("raw P-256 ECDSA verify (same signing input)", rawOp), ("reference verify, warm chain cache", warmOp),
                ("reference verify, no cache", coldOp),
            ] {
                rows.append(measure(name, threads: n, seconds: seconds, op))
                emit(rows.last!.line)
            }
        }
        rows += steps(of: p, verifier: warm, seconds: seconds, emit: emit)
        for n in Set([1, max(1, threads)]).sorted() {
            let rawOps = rows.first { $0.threads == n && $0.name.hasPrefix("raw") }!.opsPerSecond
            let warmOps = rows.first { $0.threads == n && $0.name.contains("warm") }!.opsPerSecond
            if n == 1 {
                let interleaved = Self.interleavedRatio(seconds: seconds, raw: rawOp, warm: warmOp)
                emit(
                    "ratio warm-cache / raw, 1 thread: \(String(format: "%.2f", interleaved)) (in alternating bursts of 100; the rows above, measured one after the other: \(String(format: "%.2f", warmOps / rawOps)))"
                )
            } else {
                emit("ratio warm-cache / raw, \(n) threads: \(String(format: "%.2f", warmOps / rawOps))")
            }
        }
        return rows
    }

    /// `tokens` StoreKit 2-shaped transactions signed by one leaf (a warm cache holds one chain); the same signing
    /// inputs and signatures for the raw verification; the leaf's public key.
    static func tokenPool(_ tokens: Int) -> ([String], [(Data, [UInt8])], P256.Signing.PublicKey) {
        let pki = TestPKI.harness
        let signer = JWSSigner(pki: pki)
        let t0 = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay
        let pool: [String] = (0..<tokens).map { i in
            var tx = JWSTransactionDecodedPayload(
                transactionId: String(2_000_000_000_000_000 + i),
                originalTransactionId: String(2_000_000_000_000_000 + i),
                webOrderLineItemId: String(3_000_000_000_000_000 + i), bundleId: Catalog.standard.bundleId,
                productId: "pro.monthly",
                subscriptionGroupIdentifier: "21000001", purchaseDate: t0 + Int64(i) * 1000,
                originalPurchaseDate: t0,
                expiresDate: t0 + 30 * CivilTime.msPerDay, quantity: 1, type: .autoRenewable,
                appAccountToken: "a1b2c3d4-0000-4000-8000-000000000001", signedDate: t0 + Int64(i) * 1000,
                environment: .production, transactionReason: .purchase)
            tx.storefront = "USA"; tx.storefrontId = "143441"; tx.currency = "USD"; tx.price = 4990
            tx.originalPurchaseDate = t0; tx.offerType = nil
            return signer.sign(tx, signedDate: t0)
        }
        let raw: [(Data, [UInt8])] = pool.map { jws in
            let parts = jws.split(separator: ".")
            return (Data("\(parts[0]).\(parts[1])".utf8), Base64URL.decode(parts[2])!)
        }
        return (pool, raw, pki.leaf(at: t0).key.publicKey)
    }

    /// `op` on `n` threads for `seconds`, in batches of 64 (each must succeed): operations per second and µs each.
    static func measure(_ name: String, threads n: Int, seconds: Double, _ op: @escaping @Sendable (Int) -> Bool) -> Row
    {
        let deadline = Measure.now() + UInt64(seconds * 1e9)
        // Safe: thread k writes only `counts[k]`; they are read after every thread has joined.
        nonisolated(unsafe) let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: n)
        counts.initialize(repeating: 0)
        let start = Measure.now()
        DispatchQueue.concurrentPerform(iterations: n) { w in
            var i = w * 7919, done = 0
            while Measure.now() < deadline {
                for _ in 0..<64 {
                    precondition(op(i), "\(name): verification failed")
                    i += 1
                }
                done += 64
            }
            counts[w] = done
        }
        let elapsed = Measure.seconds(since: start)
        let total = Double(counts.reduce(0, +))
        counts.deallocate()
        let ops = total / elapsed
        return Row(name: name, threads: n, opsPerSecond: ops, microsecondsPerOp: 1e6 * Double(n) / ops)
    }

    /// Warm-cache against raw verification on one thread, in alternating bursts of 100 of each for `seconds`: on a
    /// machine whose speed drifts within a second, two rows measured one after the other compare two machines.
    static func interleavedRatio(seconds: Double, raw: (Int) -> Bool, warm: (Int) -> Bool) -> Double {
        var rawTime: UInt64 = 0, warmTime: UInt64 = 0, i = 0
        let deadline = Measure.now() + UInt64(seconds * 1e9)
        while Measure.now() < deadline {
            var t = Measure.now()
            for k in 0..<100 { precondition(raw(i + k), "raw verification failed") }
            rawTime += Measure.now() - t
            t = Measure.now()
            for k in 0..<100 { precondition(warm(i + k), "reference verification failed") }
            warmTime += Measure.now() - t
            i += 100
        }
        // The same number of each: the ratio of throughputs is the inverse ratio of the times.
        return Double(rawTime) / Double(max(1, warmTime))
    }

    /// The warm-cache path taken apart, one thread: what each step costs besides the signature check, so the gap
    /// between a cached verification and a raw one can be attributed.
    static func steps(of pool: [String], verifier: SignedDataVerifier, seconds: Double, emit: (String) -> Void) -> [Row]
    {
        var rows: [Row] = []
        func step(_ name: String, _ op: (String) -> Bool) {
            let deadline = Measure.now() + UInt64(seconds / 2 * 1e9)
            let start = Measure.now()
            var n = 0
            while Measure.now() < deadline {
                for _ in 0..<64 {
                    precondition(op(pool[n % pool.count]), "\(name) failed")
                    n += 1
                }
            }
            let us = Measure.seconds(since: start) * 1e6 / Double(n)
            rows.append(Row(name: name, threads: 1, opsPerSecond: 1e6 / us, microsecondsPerOp: us))
            emit("  step: \(name.column(44)) \(String(format: "%7.2f", us)) µs")
        }
        func segments(_ jws: String) -> [Substring] { jws.split(separator: ".", omittingEmptySubsequences: false) }
        emit("warm-cache path by step (one thread):")
        let encoded = pool.map { Array(segments($0)[1].utf8) }
        var k = 0
        step("base64url-decode the payload") { _ in
            k += 1
            return encoded[k % encoded.count].withUnsafeBufferPointer { Base64URL.decode(utf8: $0) } != nil
        }
        let payloads = pool.map { Data(Base64URL.decode(segments($0)[1])!) }
        step("JSON-decode the payload (JSONDecoder)") { _ in
            k += 1
            return
                (try? SignedDataVerifier.decoder.decode(
                    JWSTransactionDecodedPayload.self, from: payloads[k % payloads.count])) != nil
        }
        let payloadBytes = payloads.map { [UInt8]($0) }
        step("JSON-decode the payload (FlatJSON)") { _ in
            k += 1
            return payloadBytes[k % payloadBytes.count].withUnsafeBufferPointer {
                JWSTransactionDecodedPayload(flatJSON: $0)
            } != nil
        }
        // The header segments as bytes, found before the clock starts (the verifier finds them with memchr).
        let headers = pool.map { Array(segments($0)[0].utf8) }
        step("chain cache lookup (hash + compare header)") { _ in
            k += 1
            return headers[k % headers.count].withUnsafeBytes { verifier.chainVerifies(header: $0) }
        }
        return rows
    }
}
