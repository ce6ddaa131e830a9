import Crypto
import Foundation
import IAPModel

/// Builds JWS compact serializations by hand (not through a JWT library), so the forgery kit can produce every
/// malformed variant on purpose.
public struct JWSSigner: Sendable {
    public let pki: TestPKI

    public init(pki: TestPKI) { self.pki = pki }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    /// `{"alg":…,"x5c":[…]}` (x5c omitted when nil), base64url-encoded.
    public static func header(alg: String, x5c: [String]?, extra: String = "") -> String {
        var json = "{\"alg\":\"\(alg)\""
        if let x5c { json += ",\"x5c\":[" + x5c.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
        json += extra + "}"
        return Base64URL.encode(Array(json.utf8))
    }

    public static func payload<T: Encodable>(_ value: T) -> String {
        Base64URL.encode(Array(try! encoder.encode(value)))
    }

    /// ES256 over `header.payload` with `key`.
    public static func es256(_ header: String, _ payload: String, key: P256.Signing.PrivateKey) -> String {
        let input = header + "." + payload
        let sig = try! key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(Array(sig.rawRepresentation))
    }

    /// A genuine JWS: signed by the leaf in rotation at `signedDate`, with the full chain in `x5c`.
    public func sign<T: Encodable>(_ value: T, signedDate: Millis) -> String {
        let leaf = pki.leaf(at: signedDate)
        return Self.es256(Self.header(alg: "ES256", x5c: leaf.chain), Self.payload(value), key: leaf.key)
    }
}
