import Crypto
import Foundation
import IAPEncoding
import IAPModel
import IAPSupport
import SwiftASN1
import X509

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Verifies App Store JWS the way Apple's `SignedDataVerifier` does offline (docs/verifiers.md#verification-steps-in-order), with a
/// bounded cache of verified chains so the hot path is one ECDSA verification plus decoding.
///
/// Steps: size limit; three base64url segments; payload decoded strictly by type (unknown fields and enum values
/// tolerated); header `alg` must be ES256 and `x5c` hold three certificates; the leaf and intermediate chain to a
/// configured root under swift-certificates' `Verifier` (RFC 5280 and Apple's OID policy: `ChainVerification`),
/// every certificate valid at the payload's `signedDate`; ES256 signature by the leaf's P-256 key. `x5c[2]` is never
/// trusted. Statuses follow Apple's Swift library (a bad signature is `INVALID_JWT_FORMAT` there too); `reason` says
/// precisely which step refused.
public final class SignedDataVerifier: Sendable {
    /// Switches that exist only so mutants can get verification wrong in one specific way.
    public struct Options: Sendable {
        public var verifySignature = true
        public var verifyChain = true
        /// Trust whatever root the token carries in `x5c[2]` (a real-world mistake).
        public var trustEmbeddedRoot = false
        public var checkOIDs = true
        public var checkValidityDates = true
        /// The instant certificate validity is checked at, given the token's `signedDate`: that date itself (Apple's
        /// rule) unless a mutant puts another clock here.
        public var validityInstant: (@Sendable (Millis?) -> Millis?)?
        public var maxTokenBytes = 256 * 1024
        /// Keep verified chains (the hot path then costs one signature check); off only for benchmarks.
        public var cacheChains = true
        public init() {}
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: String, Sendable {
            case invalidFormat = "INVALID_JWT_FORMAT", invalidCertificate = "INVALID_CERTIFICATE", verificationFailure =
                "VERIFICATION_FAILURE"
        }
        /// The step that refused, finer than Apple's status.
        public enum Reason: String, Sendable { case format, certificate, chain, date, signature }
        public var kind: Kind
        public var reason: Reason
        public var message: String
        public var description: String { "\(kind.rawValue) (\(reason.rawValue)): \(message)" }
        init(_ kind: Kind, _ message: String, reason: Reason? = nil) {
            self.kind = kind
            self.message = message
            switch kind {
            case .invalidFormat: self.reason = reason ?? .format
            case .invalidCertificate: self.reason = reason ?? .certificate
            case .verificationFailure: self.reason = reason ?? .chain
            }
        }
    }

    struct VerifiedChain {
        let key: P256.Signing.PublicKey
        /// The chain is valid at instants in [notBefore, notAfter] (every certificate's window intersected).
        let notBefore: Millis
        let notAfter: Millis
    }

    public let options: Options
    package let roots: [Certificate]
    private let chains = Locked(ChainCache())
    /// Room for every leaf of years of histories (the test PKI rotates leaves every 30 days) and the forgery kit's chains.
    public static let cacheCapacity = 1024
    /// Verdicts answered from the cache.
    public var cacheHits: Int { chains.withLock { $0.hits } }
    /// Chains verified (each a P-384 check or more); a header the cache does not know whose certificates it does
    /// costs none.
    public var chainsVerified: Int { chains.withLock { $0.verified } }

    /// Chain verdicts by a hash of the header segment; each entry keeps the header bytes to rule out collisions.
    /// A verdict depends on the header bytes and the roots only (validity dates are checked per token against the
    /// chain's window), so refusals are kept too: a forger repeating one bad chain costs one lookup.
    struct ChainCache {
        var entries: [UInt64: (header: [UInt8], chain: Result<VerifiedChain, Failure>)] = [:]
        /// The same verdicts by the certificates themselves (the x5c entries checked, joined), for a header seen
        /// for the first time whose certificates are not.
        var byCertificates: [String: Result<VerifiedChain, Failure>] = [:]
        var hits = 0
        var verified = 0
    }

    package static let decoder = JSONDecoder()

    public init(trustedRoots: [Data], options: Options = Options()) {
        self.options = options
        self.roots = trustedRoots.compactMap { try? Certificate(derEncoded: Array($0)) }
    }

    /// Verifies `jws` and decodes its payload as `T`; `signedDate` reads the instant to validate the chain at.
    ///
    /// Works on the token's UTF-8 bytes in place: the segments are found by scanning for dots, the chain cache is
    /// keyed by a hash of the header bytes (compared byte for byte on a hit), and the signing input is handed to
    /// the ECDSA check without a copy. String-level splitting and hashing cost more than the signature itself.
    public func verify<T: Decodable>(_ jws: String, as: T.Type, signedDate: (T) -> Millis?) -> Result<T, Failure> {
        var token = jws
        return token.withUTF8 { buf in
            verify(utf8: UnsafeRawBufferPointer(buf), signedDate: signedDate) { bytes in
                if let flat = T.self as? any FlatJSONCodable.Type,
                    let fast = bytes.withUnsafeBufferPointer({ flat.init(flatJSON: $0) }) as? T
                {
                    return fast
                }
                return nil
            }
        }
    }

    /// The same for the payload types with a flat reader (the three Apple signs), chosen where the type is known
    /// at compile time: no dynamic cast per token.
    public func verify<T: FlatJSONCodable>(_ jws: String, as: T.Type, signedDate: (T) -> Millis?) -> Result<
        T, Failure
    > {
        var token = jws
        return token.withUTF8 { buf in
            verify(utf8: UnsafeRawBufferPointer(buf), signedDate: signedDate) { bytes in
                bytes.withUnsafeBufferPointer { T(flatJSON: $0) }
            }
        }
    }

    /// `fast` reads the payload's JSON without JSONDecoder (an identical value) or gives up (nil) on anything
    /// unusual, which JSONDecoder then reads.
    func verify<T: Decodable>(
        utf8 buf: UnsafeRawBufferPointer, signedDate: (T) -> Millis?, fast: ([UInt8]) -> T?
    ) -> Result<T, Failure> {
        guard buf.count <= options.maxTokenBytes else {
            return .failure(Failure(.invalidFormat, "token of \(buf.count) bytes exceeds \(options.maxTokenBytes)"))
        }
        guard let base = buf.baseAddress, buf.count > 0 else { return .failure(Failure(.invalidFormat, "empty token")) }
        // memchr is vectorised; a byte loop over a 4 KB token costs microseconds.
        func dot(after start: Int) -> Int? {
            guard start < buf.count, let p = memchr(base + start, Int32(UInt8(ascii: ".")), buf.count - start) else {
                return nil
            }
            return base.distance(to: UnsafeRawPointer(p))
        }
        guard let d0 = dot(after: 0), let d1 = dot(after: d0 + 1), dot(after: d1 + 1) == nil else {
            return .failure(Failure(.invalidFormat, "expected 3 segments"))
        }
        let header = UnsafeRawBufferPointer(rebasing: buf[0..<d0])
        let payload = UnsafeRawBufferPointer(rebasing: buf[(d0 + 1)..<d1])
        let signature = UnsafeRawBufferPointer(rebasing: buf[(d1 + 1)...])
        guard let payloadBytes = Base64URL.decode(utf8: payload.assumingMemoryBound(to: UInt8.self)) else {
            return .failure(Failure(.invalidFormat, "payload is not base64url"))
        }
        let value: T
        if let v = fast(payloadBytes) {
            // The hot path's common case.
            value = v
        } else {
            do {
                value = try Self.decoder.decode(T.self, from: Data(payloadBytes))
            } catch {
                return .failure(Failure(.invalidFormat, "payload does not decode: \(error)"))
            }
        }
        let instant = options.validityInstant.map { $0(signedDate(value)) } ?? signedDate(value)

        let chain: VerifiedChain
        switch verifiedChain(header: header) {
        case .success(let c): chain = c
        case .failure(let f): return .failure(f)
        }
        if options.checkValidityDates, let t = instant, t < chain.notBefore || t > chain.notAfter {
            return .failure(
                Failure(
                    .verificationFailure, "certificate chain not valid at signedDate \(CivilTime.iso8601(t))",
                    reason: .date))
        }
        if options.verifySignature {
            guard let sigBytes = Base64URL.decode(utf8: signature.assumingMemoryBound(to: UInt8.self)),
                sigBytes.count == 64
            else {
                return .failure(
                    Failure(.invalidFormat, "signature is not a 64-byte ES256 signature", reason: .signature))
            }
            let input = UnsafeRawBufferPointer(rebasing: buf[0..<d1])
            // The signature object from its raw r‖s, the digest (through the hasher's buffer entry point, not
            // swift-crypto's generic DataProtocol path) and the check: what `bench check` prices as one verification.
            let clock = CryptoCounters.start()
            let sig = try? P256.Signing.ECDSASignature(rawRepresentation: Data(sigBytes))
            var hasher = SHA256()
            hasher.update(bufferPointer: input)
            let valid = sig.map { chain.key.isValidSignature($0, for: hasher.finalize()) }
            CryptoCounters.stop(clock, into: CryptoCounters.verifyNanoseconds)
            guard let valid else {
                return .failure(
                    Failure(.invalidFormat, "signature is not a 64-byte ES256 signature", reason: .signature))
            }
            CryptoCounters.verifications.add(1, ordering: .relaxed)
            CryptoCounters.verifiedBytes.add(input.count, ordering: .relaxed)
            guard valid else {
                return .failure(Failure(.invalidFormat, "ES256 signature does not verify", reason: .signature))
            }
        }
        return .success(value)
    }

    struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    /// Whether the chain of a header segment verifies (from the cache when it holds it): `bench verify` times the
    /// lookup alone.
    package func chainVerifies(header: UnsafeRawBufferPointer) -> Bool {
        (try? verifiedChain(header: header).get()) != nil
    }

    /// The verified chain of a header segment, from the cache or verified now.
    func verifiedChain(header: UnsafeRawBufferPointer) -> Result<VerifiedChain, Failure> {
        guard options.cacheChains else { return verifyChain(header: header) }
        let h = ByteHash.of(header)
        let cached: Result<VerifiedChain, Failure>? = chains.withLock { cache in
            guard let hit = cache.entries[h], hit.header.count == header.count,
                hit.header.withUnsafeBytes({ memcmp($0.baseAddress!, header.baseAddress!, header.count) }) == 0
            else { return nil }
            cache.hits += 1
            return hit.chain
        }
        if let cached { return cached }
        let result = verifyChain(header: header)
        let bytes = Array(header)
        chains.withLock { cache in
            if cache.entries.count >= Self.cacheCapacity { cache.entries.removeAll(keepingCapacity: true) }
            cache.entries[h] = (bytes, result)
        }
        return result
    }

    func verifyChain(header segment: UnsafeRawBufferPointer) -> Result<VerifiedChain, Failure> {
        guard let bytes = Base64URL.decode(utf8: segment.assumingMemoryBound(to: UInt8.self)),
            let header = try? Self.decoder.decode(Header.self, from: Data(bytes))
        else {
            return .failure(Failure(.invalidFormat, "header is not base64url JSON"))
        }
        guard header.alg == "ES256" else {
            return .failure(Failure(.invalidFormat, "alg \(header.alg ?? "missing") is not ES256"))
        }
        guard let x5c = header.x5c else { return .failure(Failure(.invalidFormat, "x5c is missing")) }
        guard x5c.count == 3 else {
            return .failure(Failure(.invalidFormat, "x5c has \(x5c.count) certificates, expected 3"))
        }
        let used = x5c.prefix(options.trustEmbeddedRoot ? 3 : 2)
        guard options.cacheChains else { return verifyCertificates(used) }
        // Headers that differ only outside x5c (another member, another order) share the certificates' verdict.
        let key = used.joined(separator: ",")
        if let known = chains.withLock({ $0.byCertificates[key] }) { return known }
        let result = verifyCertificates(used)
        chains.withLock { cache in
            if cache.byCertificates.count >= Self.cacheCapacity {
                cache.byCertificates.removeAll(keepingCapacity: true)
            }
            cache.byCertificates[key] = result
        }
        return result
    }

    /// The chain of the certificates `x5c` holds (base64 DER, leaf first), checked as `options` say.
    func verifyCertificates(_ x5c: ArraySlice<String>) -> Result<VerifiedChain, Failure> {
        chains.withLock { $0.verified += 1 }
        var certs: [Certificate] = []
        for (i, b64) in x5c.enumerated() {
            guard let der = Data(base64Encoded: b64), let c = try? Certificate(derEncoded: Array(der)) else {
                return .failure(Failure(.invalidCertificate, "x5c[\(i)] is not a DER certificate in base64"))
            }
            certs.append(c)
        }
        let leaf = certs[0], intermediate = certs[1]
        var root: Certificate?
        if options.verifyChain {
            let anchors = options.trustEmbeddedRoot ? roots + [certs[2]] : roots
            switch ChainVerification.validate(
                leaf: leaf, intermediate: intermediate, roots: anchors, checkOIDs: options.checkOIDs)
            {
            case .success(let r):
                root = r
                CryptoCounters.chainSignatureChecks.add(2, ordering: .relaxed)
            case .failure(let refusal): return .failure(Failure(.verificationFailure, refusal.reason))
            }
        }
        guard let key = P256.Signing.PublicKey(leaf.publicKey) else {
            return .failure(Failure(.verificationFailure, "leaf key is not P-256"))
        }
        let chain = [leaf, intermediate] + (root.map { [$0] } ?? [])
        let notBefore = chain.map { Millis($0.notValidBefore.timeIntervalSince1970 * 1000) }.max()!
        let notAfter = chain.map { Millis($0.notValidAfter.timeIntervalSince1970 * 1000) }.min()!
        return .success(VerifiedChain(key: key, notBefore: notBefore, notAfter: notAfter))
    }
}
