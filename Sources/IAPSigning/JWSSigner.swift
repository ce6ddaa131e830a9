import Crypto
import Foundation
import IAPEncoding
import IAPModel
import IAPSupport

/// Builds JWS compact serializations by hand (not through a JWT library), so the forgery kit can produce every
/// malformed variant on purpose.
public struct JWSSigner: Sendable {
    public let pki: TestPKI

    public init(pki: TestPKI) { self.pki = pki }

    /// Keys sorted: the encoder's own key order is not stable between encodings of one value, and the same fact
    /// must render to the same bytes every time (a retry is byte-identical to its first attempt, as Apple's are).
    static let encoder: JSONEncoder = JSONFormat.compact()

    /// `{"alg":…,"x5c":[…]}` (x5c omitted when nil), base64url-encoded.
    public static func header(alg: String, x5c: [String]?, extra: String = "") -> String {
        var json = "{\"alg\":\"\(alg)\""
        if let x5c { json += ",\"x5c\":[" + x5c.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
        json += extra + "}"
        return Base64URL.encode(Array(json.utf8))
    }

    public static func payload<T: Encodable>(_ value: T) -> String {
        Base64URL.encode(json(value))
    }

    /// The value as `encoder` encodes it; a transaction, renewal info or notification by hand (the same bytes, a fifth
    /// of the time).
    static func json<T: Encodable>(_ value: T) -> [UInt8] {
        if let v = value as? any FlatJSONCodable, let bytes = v.compactJSON { return bytes }
        return [UInt8](try! encoder.encode(value))
    }

    /// ES256 over `header.payload` with `key`, the token written into one string.
    public static func es256(_ header: String, _ payload: String, key: P256.Signing.PrivateKey) -> String {
        var header = header, payload = payload
        return header.withUTF8 { h in
            payload.withUTF8 { p in
                let input = h.count + 1 + p.count
                return String(unsafeUninitializedCapacity: input + 1 + Base64URL.encodedLength(64)) { out in
                    _ = UnsafeMutableBufferPointer(rebasing: out[..<h.count]).initialize(from: h)
                    out[h.count] = UInt8(ascii: ".")
                    _ = UnsafeMutableBufferPointer(rebasing: out[(h.count + 1)..<input]).initialize(from: p)
                    return signed(out, input: input, key: key)
                }
            }
        }
    }

    /// The beginning that many signing inputs share, with SHA-256's state after it: a token that starts with it is
    /// hashed from there on (the same digest, without hashing the shared bytes again). Held in parts, so that a large
    /// part can be one array shared by many prefixes (the oversized forgery's padding, after each header).
    public struct SigningPrefix: Sendable {
        let parts: [[UInt8]]
        /// The prefix's length in bytes.
        public let count: Int
        let hasher: SHA256

        /// Hashes the parts once (counted as hashed bytes, for `bench check`'s pricing).
        public init(_ parts: [[UInt8]]) {
            self.parts = parts
            var h = SHA256()
            for part in parts { part.withUnsafeBytes { h.update(bufferPointer: $0) } }
            hasher = h
            count = parts.reduce(0) { $0 + $1.count }
            CryptoCounters.signedBytes.add(count, ordering: .relaxed)
        }

        /// Writes the prefix at the start of `out`.
        func write(into out: UnsafeMutableBufferPointer<UInt8>) {
            var at = 0
            for part in parts {
                _ = UnsafeMutableBufferPointer(rebasing: out[at..<at + part.count]).initialize(from: part)
                at += part.count
            }
        }
    }

    /// ES256 over `prefix` followed by the already encoded `rest` of the signing input, hashed from the prefix's
    /// state on.
    public static func es256(_ prefix: SigningPrefix, _ rest: String, key: P256.Signing.PrivateKey) -> String {
        var rest = rest
        return rest.withUTF8 { r in
            let input = prefix.count + r.count
            return String(unsafeUninitializedCapacity: input + 1 + Base64URL.encodedLength(64)) { out in
                prefix.write(into: out)
                _ = UnsafeMutableBufferPointer(rebasing: out[prefix.count..<input]).initialize(from: r)
                return signed(out, input: input, key: key, after: prefix)
            }
        }
    }

    /// Signs the signing input at the start of `out` (`input` bytes) and writes `.` and the signature after it;
    /// returns the token's length. With a `prefix` (which the input starts with), hashing resumes after it.
    static func signed(
        _ out: UnsafeMutableBufferPointer<UInt8>, input: Int, key: P256.Signing.PrivateKey,
        after prefix: SigningPrefix? = nil
    ) -> Int {
        let sig = signature(
            UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: out[..<input])), key: key, after: prefix)
        out[input] = UInt8(ascii: ".")
        let written = sig.withUnsafeBytes {
            Base64URL.encode(raw: $0, into: UnsafeMutableBufferPointer(rebasing: out[(input + 1)...]))
        }
        return input + 1 + written
    }

    /// The raw r‖s ES256 signature of a signing input: the digest, the signature and its raw bytes, which is what
    /// `bench check` prices as one signature (and times here, when its timing is on).
    /// With a `prefix`, only the bytes after it are hashed (and counted as hashed).
    static func signature(
        _ signingInput: UnsafeRawBufferPointer, key: P256.Signing.PrivateKey, after prefix: SigningPrefix? = nil
    ) -> Data {
        let clock = CryptoCounters.start()
        let skipped = prefix?.count ?? 0
        var hasher = prefix?.hasher ?? SHA256()
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: signingInput[skipped...]))
        let raw = try! key.signature(for: hasher.finalize()).rawRepresentation
        CryptoCounters.stop(clock, into: CryptoCounters.signNanoseconds)
        CryptoCounters.signatures.add(1, ordering: .relaxed)
        CryptoCounters.signedBytes.add(signingInput.count - skipped, ordering: .relaxed)
        return raw
    }

    /// SHA-256 of a buffer through the hasher's own buffer entry point: `signature(for:)` on bytes goes through
    /// swift-crypto's generic `DataProtocol` path, which showed in profiles of the signed check beside the hash
    /// itself. (`bench check` prices signatures the same way.)
    @inline(__always) public static func sha256(_ bytes: UnsafeRawBufferPointer) -> SHA256.Digest {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        return hasher.finalize()
    }

    /// A genuine JWS: signed by the leaf in rotation at `signedDate`, with the full chain in `x5c`.
    public func sign<T: Encodable>(_ value: T, signedDate: Millis) -> String {
        sign(json: Self.json(value), signedDate: signedDate)
    }

    /// A genuine JWS over payload bytes already encoded as JSON.
    public func sign(json: [UInt8], signedDate: Millis) -> String {
        let leaf = pki.leaf(at: signedDate)
        return Self.es256(leaf.es256Prefix, json: json, key: leaf.key)
    }

    /// ES256 over `prefix` (a header and its dot) and the base64url of `json`, the token written into one string:
    /// the payload is encoded in place, hashed from the prefix's digest state on, signed, and the signature encoded
    /// after it (no intermediate payload string, no regrowth).
    static func es256(_ prefix: SigningPrefix, json: [UInt8], key: P256.Signing.PrivateKey) -> String {
        let start = prefix.count
        let input = start + Base64URL.encodedLength(json.count)
        return json.withUnsafeBytes { j in
            String(unsafeUninitializedCapacity: input + 1 + Base64URL.encodedLength(64)) { out in
                prefix.write(into: out)
                _ = Base64URL.encode(raw: j, into: UnsafeMutableBufferPointer(rebasing: out[start...]))
                return signed(out, input: input, key: key, after: prefix)
            }
        }
    }
}
