import Crypto
import Foundation
import IAPModel

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

    /// ES256 over `header.payload` with `key`.
    public static func es256(_ header: String, _ payload: String, key: P256.Signing.PrivateKey) -> String {
        es256(header, payload: [payload], key: key)
    }

    /// ES256 over `header.` followed by the payload's already encoded `payload` pieces (an oversized forgery joins a
    /// padding encoded once to its content), written into the token in one go.
    public static func es256(_ header: String, payload: [String], key: P256.Signing.PrivateKey) -> String {
        var pieces = [header] + payload
        let input = pieces.reduce(1) { $0 + $1.utf8.count }
        let total = input + 1 + Base64URL.encodedLength(64)
        return String(unsafeUninitializedCapacity: total) { out in
            var at = 0
            for k in pieces.indices {
                pieces[k].withUTF8 { p in
                    _ = UnsafeMutableBufferPointer(rebasing: out[at..<at + p.count]).initialize(from: p)
                    at += p.count
                }
                if k == 0 {
                    out[at] = UInt8(ascii: ".")
                    at += 1
                }
            }
            return signed(out, input: input, key: key)
        }
    }

    /// Signs the signing input at the start of `out` (`input` bytes) and writes `.` and the signature after it;
    /// returns the token's length.
    static func signed(_ out: UnsafeMutableBufferPointer<UInt8>, input: Int, key: P256.Signing.PrivateKey) -> Int {
        let sig = signature(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: out[..<input])), key: key)
        out[input] = UInt8(ascii: ".")
        let written = sig.withUnsafeBytes {
            Base64URL.encode(raw: $0, into: UnsafeMutableBufferPointer(rebasing: out[(input + 1)...]))
        }
        return input + 1 + written
    }

    /// The raw r‖s ES256 signature of a signing input: the digest, the signature and its raw bytes, which is what
    /// `bench check` prices as one signature (and times here, when its timing is on).
    static func signature(_ signingInput: UnsafeRawBufferPointer, key: P256.Signing.PrivateKey) -> Data {
        let clock = CryptoCounters.start()
        let raw = try! key.signature(for: sha256(signingInput)).rawRepresentation
        CryptoCounters.stop(clock, into: CryptoCounters.signNanoseconds)
        CryptoCounters.signatures.add(1, ordering: .relaxed)
        CryptoCounters.signedBytes.add(signingInput.count, ordering: .relaxed)
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
        return Self.es256(leaf.es256Header, json: json, key: leaf.key)
    }

    /// ES256 over `header` and the base64url of `json`, the token written into one string: the payload is encoded
    /// in place, signed there, and the signature encoded after it (no intermediate payload string, no regrowth).
    static func es256(_ header: String, json: [UInt8], key: P256.Signing.PrivateKey) -> String {
        var header = header
        let payloadLength = Base64URL.encodedLength(json.count)
        return header.withUTF8 { h in
            json.withUnsafeBytes { j in
                let input = h.count + 1 + payloadLength
                let total = input + 1 + Base64URL.encodedLength(64)
                return String(unsafeUninitializedCapacity: total) { out in
                    _ = UnsafeMutableBufferPointer(rebasing: out[..<h.count]).initialize(from: h)
                    out[h.count] = UInt8(ascii: ".")
                    _ = Base64URL.encode(raw: j, into: UnsafeMutableBufferPointer(rebasing: out[(h.count + 1)...]))
                    return signed(out, input: input, key: key)
                }
            }
        }
    }
}
