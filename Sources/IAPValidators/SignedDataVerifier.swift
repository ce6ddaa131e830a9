import Crypto
import Foundation
import IAPModel
import SwiftASN1
import X509

/// Verifies App Store JWS the way Apple's `SignedDataVerifier` does offline (reference/validators.md §1.2), with a
/// bounded cache of verified chains so the hot path is one ECDSA verification plus decoding.
///
/// Steps: size limit; three base64url segments; payload decoded strictly by type (unknown fields and enum values
/// tolerated); header `alg` must be ES256 and `x5c` hold three certificates; the leaf and intermediate chain to a
/// configured root, both Apple OIDs present, no unhandled critical extension, CA flags right, every certificate
/// valid at the payload's `signedDate`; ES256 signature by the leaf's P-256 key. `x5c[2]` is never trusted.
public final class SignedDataVerifier: @unchecked Sendable {
    /// Switches that exist only so mutants can get verification wrong in one specific way.
    public struct Options: Sendable {
        public var verifySignature = true
        public var verifyChain = true
        /// Trust whatever root the token carries in `x5c[2]` (a real-world mistake).
        public var trustEmbeddedRoot = false
        public var checkOIDs = true
        public var checkValidityDates = true
        public var maxTokenBytes = 256 * 1024
        public init() {}
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: String, Sendable { case invalidFormat = "INVALID_JWT_FORMAT", invalidCertificate = "INVALID_CERTIFICATE", verificationFailure = "VERIFICATION_FAILURE" }
        public var kind: Kind
        public var message: String
        public var description: String { "\(kind.rawValue): \(message)" }
        init(_ kind: Kind, _ message: String) {
            self.kind = kind
            self.message = message
        }
    }

    struct VerifiedChain {
        let key: P256.Signing.PublicKey
        /// The chain is valid at instants in [notBefore, notAfter] (every certificate's window intersected).
        let notBefore: Millis
        let notAfter: Millis
    }

    public let options: Options
    let roots: [Certificate]
    private var cache: [Substring: VerifiedChain] = [:]
    private let lock = NSLock()
    public static let cacheCapacity = 64
    public private(set) var cacheHits = 0

    static let decoder = JSONDecoder()

    public init(trustedRoots: [Data], options: Options = Options()) {
        self.options = options
        self.roots = trustedRoots.compactMap { try? Certificate(derEncoded: Array($0)) }
    }

    /// Verifies `jws` and decodes its payload as `T`; `signedDate` reads the instant to validate the chain at.
    public func verify<T: Decodable>(_ jws: String, as: T.Type, signedDate: (T) -> Millis?) -> Result<T, Failure> {
        guard jws.utf8.count <= options.maxTokenBytes else {
            return .failure(Failure(.invalidFormat, "token of \(jws.utf8.count) bytes exceeds \(options.maxTokenBytes)"))
        }
        let parts = jws.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(Failure(.invalidFormat, "expected 3 segments, found \(parts.count)")) }
        guard let payloadBytes = Base64URL.decode(parts[1]) else { return .failure(Failure(.invalidFormat, "payload is not base64url")) }
        let value: T
        do {
            value = try Self.decoder.decode(T.self, from: Data(payloadBytes))
        } catch {
            return .failure(Failure(.invalidFormat, "payload does not decode: \(error)"))
        }
        let instant = signedDate(value)

        let chain: VerifiedChain
        switch verifiedChain(header: parts[0]) {
        case .success(let c): chain = c
        case .failure(let f): return .failure(f)
        }
        if options.checkValidityDates, let t = instant, t < chain.notBefore || t > chain.notAfter {
            return .failure(Failure(.verificationFailure, "certificate chain not valid at signedDate \(CivilTime.iso8601(t))"))
        }
        if options.verifySignature {
            guard let sigBytes = Base64URL.decode(parts[2]), sigBytes.count == 64,
                let sig = try? P256.Signing.ECDSASignature(rawRepresentation: sigBytes)
            else { return .failure(Failure(.invalidFormat, "signature is not a 64-byte ES256 signature")) }
            let input = jws.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count)
            guard chain.key.isValidSignature(sig, for: Data(input)) else {
                return .failure(Failure(.invalidFormat, "ES256 signature does not verify"))
            }
        }
        return .success(value)
    }

    struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    /// The verified chain of a header segment, from the cache or verified now.
    func verifiedChain(header: Substring) -> Result<VerifiedChain, Failure> {
        lock.lock()
        if let hit = cache[header] {
            cacheHits += 1
            lock.unlock()
            return .success(hit)
        }
        lock.unlock()
        let result = verifyChain(header: header)
        if case .success(let c) = result {
            lock.lock()
            if cache.count >= Self.cacheCapacity { cache.removeAll(keepingCapacity: true) }
            cache[header] = c
            lock.unlock()
        }
        return result
    }

    static let handledCriticalExtensions: Set<ASN1ObjectIdentifier> = [
        .X509ExtensionID.basicConstraints, .X509ExtensionID.keyUsage, .X509ExtensionID.nameConstraints,
    ]
    static let receiptSigningOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let wwdrIntermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    func verifyChain(header segment: Substring) -> Result<VerifiedChain, Failure> {
        guard let bytes = Base64URL.decode(segment), let header = try? Self.decoder.decode(Header.self, from: Data(bytes)) else {
            return .failure(Failure(.invalidFormat, "header is not base64url JSON"))
        }
        guard header.alg == "ES256" else { return .failure(Failure(.invalidFormat, "alg \(header.alg ?? "missing") is not ES256")) }
        guard let x5c = header.x5c else { return .failure(Failure(.invalidFormat, "x5c is missing")) }
        guard x5c.count == 3 else { return .failure(Failure(.invalidFormat, "x5c has \(x5c.count) certificates, expected 3")) }
        var certs: [Certificate] = []
        for (i, b64) in x5c.prefix(options.trustEmbeddedRoot ? 3 : 2).enumerated() {
            guard let der = Data(base64Encoded: b64), let c = try? Certificate(derEncoded: Array(der)) else {
                return .failure(Failure(.invalidCertificate, "x5c[\(i)] is not a DER certificate in base64"))
            }
            certs.append(c)
        }
        let leaf = certs[0], intermediate = certs[1]
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else {
            return .failure(Failure(.verificationFailure, "leaf key is not P-256"))
        }
        var root: Certificate?
        if options.verifyChain {
            let anchors = options.trustEmbeddedRoot ? roots + [certs[2]] : roots
            root = anchors.first { $0.subject == intermediate.issuer && $0.publicKey.isValidSignature(intermediate.signature, for: intermediate) }
            guard let root else { return .failure(Failure(.verificationFailure, "intermediate is not issued by a trusted root")) }
            guard leaf.issuer == intermediate.subject, intermediate.publicKey.isValidSignature(leaf.signature, for: leaf) else {
                return .failure(Failure(.verificationFailure, "leaf is not issued by the intermediate"))
            }
            for (name, c) in [("leaf", leaf), ("intermediate", intermediate), ("root", root)] {
                for e in c.extensions where e.critical && !Self.handledCriticalExtensions.contains(e.oid) {
                    return .failure(Failure(.verificationFailure, "\(name) has an unhandled critical extension \(e.oid)"))
                }
            }
            guard Self.isCA(intermediate), Self.isCA(root) else {
                return .failure(Failure(.verificationFailure, "an issuer in the chain is not a CA"))
            }
            if Self.isCA(leaf) { return .failure(Failure(.verificationFailure, "leaf is a CA")) }
            if options.checkOIDs {
                guard leaf.extensions[oid: Self.receiptSigningOID] != nil else {
                    return .failure(Failure(.verificationFailure, "leaf certificate does not contain the Receipt Signing OID"))
                }
                guard intermediate.extensions[oid: Self.wwdrIntermediateOID] != nil else {
                    return .failure(Failure(.verificationFailure, "intermediate certificate does not contain the WWDR OID"))
                }
            }
        }
        let chain = [leaf, intermediate] + (root.map { [$0] } ?? [])
        let notBefore = chain.map { Millis($0.notValidBefore.timeIntervalSince1970 * 1000) }.max()!
        let notAfter = chain.map { Millis($0.notValidAfter.timeIntervalSince1970 * 1000) }.min()!
        return .success(VerifiedChain(key: key, notBefore: notBefore, notAfter: notAfter))
    }

    static func isCA(_ c: Certificate) -> Bool {
        guard let bc = try? c.extensions.basicConstraints else { return false }
        if case .isCertificateAuthority = bc { return true }
        return false
    }
}
