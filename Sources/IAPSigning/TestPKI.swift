import Crypto
import Foundation
import IAPModel
import IAPSupport
import SwiftASN1
import X509

/// A deterministic test PKI shaped like Apple's (docs/verifiers.md#test-pki-profile): a P-384 root and intermediate, P-256
/// leaves signing with ES256, Apple's OIDs as non-critical extensions (`05 00`), AKI/SKI on every certificate.
/// Keys derive from the seed; certificate validity comes from the scenario clock (parameters), never from today.
/// ECDSA signatures are randomised, so certificates issued anew differ byte for byte between runs while keys, names
/// and validity do not; the harness's root and intermediate are issued once and kept (``fixedRootDER``), so the
/// root a validator trusts is one file everywhere.
///
/// It also holds the deliberately broken certificates the forgery kit needs (a foreign root, leaves without or with
/// critical OIDs, an expired leaf, a non-CA intermediate).
///
/// Everything is immutable after `init` except the leaves made on first use (per 30-day slot, per forgery window)
/// and the broken chains, each behind a lock.
public final class TestPKI: Sendable {
    public static let receiptSigningOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    public static let wwdrIntermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// A certificate with its DER and its `x5c` form (standard base64 DER).
    ///
    /// Sendable: immutable; the certificate type is not marked Sendable by its library.
    public struct Issued: @unchecked Sendable {
        public let certificate: Certificate
        public let der: [UInt8]
        public var x5c: String { Data(der).base64EncodedString() }
        public var pem: String {
            let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            return "-----BEGIN CERTIFICATE-----\n\(b64)\n-----END CERTIFICATE-----\n"
        }
    }

    /// Sendable: immutable (certificate and key types are not marked Sendable by their libraries).
    public struct Leaf: @unchecked Sendable {
        public let issued: Issued
        public let key: P256.Signing.PrivateKey
        /// x5c as it appears in the JWS header: leaf, intermediate, root.
        public let chain: [String]
        /// The encoded ES256 header with this chain: the same for every token the leaf signs, so built once.
        public let es256Header: String
        /// `es256Header` and its dot, with SHA-256's state after them: a token's hashing starts at its payload.
        public let es256Prefix: JWSSigner.SigningPrefix
        /// The signing dates ``TestPKI/leaf(at:)`` gives this leaf for (its 30-day slot), so that a renderer can keep
        /// it at hand instead of asking again for every token; nil for the other leaves.
        public internal(set) var signsDuring: Range<Millis>?

        init(issued: Issued, key: P256.Signing.PrivateKey, chain: [String]) {
            self.issued = issued
            self.key = key
            self.chain = chain
            self.es256Header = JWSSigner.header(alg: "ES256", x5c: chain)
            self.es256Prefix = JWSSigner.SigningPrefix([Array((es256Header + ".").utf8)])
        }
    }

    public let seed: UInt64
    public let validFrom: Date
    public let validUntil: Date
    public let root: Issued
    public let intermediate: Issued
    package let rootKey: P384.Signing.PrivateKey
    package let intermediateKey: P384.Signing.PrivateKey
    /// Leaves in rotation (the renderer picks one by `signedDate`).
    public let leaves: [Leaf]

    /// Root certificates as DER, for a validator's trust store.
    public var trustedRoots: [Data] { [Data(root.der)] }

    /// 2025-03-01 … 2046-03-01: covers every generated history (they start 2026-03-01 and can renew a yearly
    /// product a dozen times) plus Apple's notification retries.
    public static let defaultValidity: (Date, Date) = (
        Date(timeIntervalSince1970: Double(CivilTime.days(fromCivil: 2025, 3, 1) * 86400)),
        Date(timeIntervalSince1970: Double(CivilTime.days(fromCivil: 2046, 3, 1) * 86400))
    )

    /// The shared PKIs, by seed.
    private static let cache = Locked<[UInt64: TestPKI]>([:])

    /// The PKI every conformance case and load pool signs with (validators are told to trust its root), so a case
    /// saved by one command replays under another.
    public static var harness: TestPKI { shared(seed: 1) }

    /// The PKI of `seed` with the default validity, built once per process.
    public static func shared(seed: UInt64 = 1) -> TestPKI {
        cache.withLock { cache in
            if let p = cache[seed] { return p }
            let p = try! TestPKI(seed: seed, validFrom: defaultValidity.0, validUntil: defaultValidity.1)
            cache[seed] = p
            return p
        }
    }

    /// With `ocspURL`, the intermediate and the leaves carry an Authority Information Access extension naming that
    /// OCSP responder (for validators with online checks; point it at a loopback address).
    public let ocspURL: String?

    public init(seed: UInt64, validFrom: Date, validUntil: Date, leafCount: Int = 3, ocspURL: String? = nil) throws {
        self.seed = seed
        self.ocspURL = ocspURL
        self.validFrom = validFrom
        self.validUntil = validUntil
        var kd = KeyDerivation(seed: seed)
        rootKey = kd.p384("root")
        intermediateKey = kd.p384("intermediate")
        let rootName = try DistinguishedName {
            CommonName("iapcheck Test Root CA - G3")
            OrganizationName("iapcheck test PKI (not Apple)")
            CountryName("US")
        }
        let intermediateName = try DistinguishedName {
            CommonName("iapcheck Test WWDR Certification Authority - G6")
            OrganizationalUnitName("G6")
            OrganizationName("iapcheck test PKI (not Apple)")
            CountryName("US")
        }
        let rootPublic = Certificate.PublicKey(rootKey.publicKey)
        let interPublic = Certificate.PublicKey(intermediateKey.publicKey)
        if Self.isHarness(seed: seed, validFrom: validFrom, validUntil: validUntil),
            let fixed = Self.fixed(rootPublic, interPublic)
        {
            // The root carries no OCSP URL: with one asked for, only the intermediate is issued again, and root.der
            // stays the file a verifier may have pinned.
            root = fixed.0
            intermediate =
                ocspURL == nil
                ? fixed.1
                : try Self.issueIntermediate(
                    publicKey: interPublic, name: intermediateName, issuer: rootName, rootKey: rootKey,
                    rootPublic: rootPublic, validFrom: validFrom, validUntil: validUntil, ocspURL: ocspURL)
        } else {
            root = try Self.issueRoot(
                publicKey: rootPublic, name: rootName, key: rootKey, validFrom: validFrom, validUntil: validUntil)
            intermediate = try Self.issueIntermediate(
                publicKey: interPublic, name: intermediateName, issuer: rootName, rootKey: rootKey,
                rootPublic: rootPublic, validFrom: validFrom, validUntil: validUntil, ocspURL: ocspURL)
        }
        var leaves: [Leaf] = []
        for i in 0..<leafCount {
            let key = kd.p256("leaf-\(i)")
            let issued = try Self.issue(
                serial: 100 + Int64(i), publicKey: .init(key.publicKey), subject: try Self.leafName(i),
                issuer: intermediateName,
                issuerKey: .init(intermediateKey), issuerPublic: interPublic, from: validFrom, until: validUntil,
                kind: .leaf(oid: true, oidCritical: false), ocspURL: ocspURL)
            leaves.append(Leaf(issued: issued, key: key, chain: [issued.x5c, intermediate.x5c, root.x5c]))
        }
        self.leaves = leaves
    }

    static func leafName(_ i: Int) throws -> DistinguishedName {
        try DistinguishedName {
            CommonName("iapcheck Test Receipt Signing \(i)")
            OrganizationalUnitName("iapcheck")
            OrganizationName("iapcheck test PKI (not Apple)")
            CountryName("US")
        }
    }

    /// The leaf that signs at `signedDate`. As Apple's signing certificates are replaced over time, each 30-day
    /// slot has a leaf of its own, valid only from a day before the slot to a day after it: an artifact delivered
    /// after its leaf expired (a late retry, a re-submitted old transaction, a nested transaction signed months
    /// before its notification) is genuine, because a certificate counts at the token's `signedDate`, and a
    /// verifier that checks the chain against its own clock rejects it (docs/verifiers.md#certificate-dates).
    public func leaf(at signedDate: Millis) -> Leaf {
        // Dates a certificate cannot carry (a hand-edited corpus file, say) get a long-lived leaf: no crash.
        guard signedDate > Self.earliest, signedDate < Self.latest else { return leaves[0] }
        let slot = signedDate >= 0 ? signedDate / Self.slotLength : (signedDate - Self.slotLength + 1) / Self.slotLength
        return madeLeaves.withLock { made in
            if let l = made.slot[slot] { return l }
            let start = slot * Self.slotLength
            guard
                var l = try? issueLeaf(
                    label: "slot-leaf-\(slot)", serial: Self.serial(10_000, slot),
                    from: Self.date(start - CivilTime.msPerDay),
                    until: Self.date(start + Self.slotLength + CivilTime.msPerDay))
            else { return leaves[0] }
            // Within the dates this function gives slot leaves for (the edge slots reach past them).
            let from = max(start, Self.earliest + 1), to = min(start + Self.slotLength, Self.latest)
            l.signsDuring = from < to ? from..<to : nil
            made.slot[slot] = l
            return l
        }
    }

    /// 1951 … 9998: the instants a leaf's validity can start and end within.
    static let earliest: Millis = -(19 * 365 + 5) * CivilTime.msPerDay
    static let latest: Millis = 253_370_764_800_000 - 400 * CivilTime.msPerDay
    /// A positive certificate serial from a base and any key.
    static func serial(_ base: Int64, _ key: Int64) -> Int64 { base + Int64(UInt64(bitPattern: key) % 1_000_000_000) }

    /// A genuine leaf under the intermediate, valid from `from` to `until` (for the forgery kit's leaves whose
    /// validity is chosen per token).
    public func leaf(validFrom from: Date, until: Date) -> Leaf {
        let minutes = from.timeIntervalSince1970 / 60
        guard minutes.isFinite, abs(minutes) < 1e11 else { return leaves[0] }
        let key = Int64(minutes.rounded(.down))
        return madeLeaves.withLock { made in
            if let l = made.window[key] { return l }
            guard
                let l = try? issueLeaf(
                    label: "window-leaf-\(key)", serial: Self.serial(2_000_000_000, key), from: from, until: until)
            else { return leaves[0] }
            made.window[key] = l
            return l
        }
    }

    static let slotLength: Millis = 30 * CivilTime.msPerDay
    public static func date(_ t: Millis) -> Date { Date(timeIntervalSince1970: Double(t) / 1000) }

    /// The leaves made on first use, by 30-day slot and by forgery window (its start minute), issued under the lock.
    private let madeLeaves = Locked(MadeLeaves())
    struct MadeLeaves {
        var slot: [Int64: Leaf] = [:]
        var window: [Int64: Leaf] = [:]
    }

    private func issueLeaf(label: String, serial: Int64, from: Date, until: Date) throws -> Leaf {
        CryptoCounters.certificateSignatures.add(1, ordering: .relaxed)
        var kd = KeyDerivation(seed: seed)
        let key = kd.p256(label)
        let issued = try Self.issue(
            serial: serial, publicKey: .init(key.publicKey), subject: try Self.leafName(Int(serial)),
            issuer: intermediate.certificate.subject,
            issuerKey: .init(intermediateKey), issuerPublic: .init(intermediateKey.publicKey), from: from, until: until,
            kind: .leaf(oid: true, oidCritical: false), ocspURL: ocspURL)
        return Leaf(issued: issued, key: key, chain: [issued.x5c, intermediate.x5c, root.x5c])
    }

    enum Kind {
        case root
        case intermediate(oid: Bool, ca: Bool)
        case leaf(oid: Bool, oidCritical: Bool)
    }

    static func issue(
        serial: Int64, publicKey: Certificate.PublicKey, subject: DistinguishedName, issuer: DistinguishedName,
        issuerKey: Certificate.PrivateKey, issuerPublic: Certificate.PublicKey, from: Date, until: Date, kind: Kind,
        ocspURL: String? = nil
    ) throws -> Issued {
        var ext = Certificate.Extensions()
        if let ocspURL {
            let aia = AuthorityInformationAccess([
                .init(method: .ocspServer, location: .uniformResourceIdentifier(ocspURL))
            ])
            try ext.append(Certificate.Extension(aia, critical: false))
        }
        let ski = SubjectKeyIdentifier(hash: publicKey)
        switch kind {
        case .root:
            try ext.append(
                Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: nil), critical: true))
            try ext.append(Certificate.Extension(KeyUsage(keyCertSign: true, cRLSign: true), critical: true))
            try ext.append(Certificate.Extension(ski, critical: false))
        case .intermediate(let oid, let ca):
            try ext.append(
                Certificate.Extension(
                    ca ? BasicConstraints.isCertificateAuthority(maxPathLength: 0) : .notCertificateAuthority,
                    critical: true))
            try ext.append(Certificate.Extension(KeyUsage(keyCertSign: true, cRLSign: true), critical: true))
            try ext.append(Certificate.Extension(ski, critical: false))
            try ext.append(
                Certificate.Extension(
                    AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuerPublic).keyIdentifier),
                    critical: false))
            if oid {
                try ext.append(Certificate.Extension(oid: wwdrIntermediateOID, critical: false, value: [0x05, 0x00]))
            }
        case .leaf(let oid, let critical):
            try ext.append(Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true))
            try ext.append(Certificate.Extension(KeyUsage(digitalSignature: true), critical: true))
            try ext.append(Certificate.Extension(ski, critical: false))
            try ext.append(
                Certificate.Extension(
                    AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: issuerPublic).keyIdentifier),
                    critical: false))
            if oid {
                try ext.append(Certificate.Extension(oid: receiptSigningOID, critical: critical, value: [0x05, 0x00]))
            }
        }
        let cert = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(bytes: Self.serialBytes(serial)), publicKey: publicKey,
            notValidBefore: from, notValidAfter: until, issuer: issuer, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA384, extensions: ext, issuerPrivateKey: issuerKey)
        var ser = DER.Serializer()
        try ser.serialize(cert)
        return Issued(certificate: cert, der: ser.serializedBytes)
    }

    static func serialBytes(_ n: Int64) -> [UInt8] {
        var v = UInt64(n), out: [UInt8] = []
        repeat {
            out.insert(UInt8(v & 0xFF), at: 0)
            v >>= 8
        } while v > 0
        if out[0] & 0x80 != 0 { out.insert(0, at: 0) }
        return out
    }

    // MARK: Broken certificates for the forgery kit (built on first use)

    private let brokenChains = Locked<BrokenChains?>(nil)

    public var broken: BrokenChains {
        brokenChains.withLock { made in
            if let b = made { return b }
            let b = try! makeBroken()
            made = b
            return b
        }
    }

    private func makeBroken() throws -> BrokenChains {
        var kd = KeyDerivation(seed: seed &+ 0xBAD)
        let foreign = try TestPKI(seed: seed &+ 0xF0E, validFrom: validFrom, validUntil: validUntil, leafCount: 1)
        let interName = intermediate.certificate.subject
        let interPublic = Certificate.PublicKey(intermediateKey.publicKey)
        func leafUnder(_ label: String, serial: Int64, from: Date, until: Date, oid: Bool, critical: Bool) throws
            -> Leaf
        {
            let key = kd.p256(label)
            let issued = try Self.issue(
                serial: serial, publicKey: .init(key.publicKey), subject: try Self.leafName(Int(serial)),
                issuer: interName,
                issuerKey: .init(intermediateKey), issuerPublic: interPublic, from: from, until: until,
                kind: .leaf(oid: oid, oidCritical: critical))
            return Leaf(issued: issued, key: key, chain: [issued.x5c, intermediate.x5c, root.x5c])
        }
        func chainUnder(_ label: String, serial: Int64, oid: Bool, ca: Bool) throws -> Leaf {
            let ikey = kd.p384(label + "-intermediate")
            let iname = try DistinguishedName { CommonName("iapcheck Broken Intermediate \(label)") }
            let inter = try Self.issue(
                serial: serial, publicKey: .init(ikey.publicKey), subject: iname, issuer: root.certificate.subject,
                issuerKey: .init(rootKey), issuerPublic: .init(rootKey.publicKey), from: validFrom, until: validUntil,
                kind: .intermediate(oid: oid, ca: ca))
            let key = kd.p256(label)
            let leaf = try Self.issue(
                serial: serial + 1, publicKey: .init(key.publicKey), subject: try Self.leafName(Int(serial + 1)),
                issuer: iname,
                issuerKey: .init(ikey), issuerPublic: .init(ikey.publicKey), from: validFrom, until: validUntil,
                kind: .leaf(oid: true, oidCritical: false))
            return Leaf(issued: leaf, key: key, chain: [leaf.x5c, inter.x5c, root.x5c])
        }
        let year: TimeInterval = 365 * 86400
        return BrokenChains(
            untrusted: foreign.leaves[0],
            leafWithoutOID: try leafUnder(
                "no-oid", serial: 900, from: validFrom, until: validUntil, oid: false, critical: false),
            intermediateWithoutOID: try chainUnder("inter-no-oid", serial: 910, oid: false, ca: true),
            leafOIDCritical: try leafUnder(
                "oid-critical", serial: 920, from: validFrom, until: validUntil, oid: true, critical: true),
            leafExpired: try leafUnder(
                "expired", serial: 930, from: validFrom.addingTimeInterval(-3 * year),
                until: validFrom.addingTimeInterval(-2 * year), oid: true, critical: false),
            intermediateNotCA: try chainUnder("inter-not-ca", serial: 950, oid: true, ca: false))
    }
}

/// Deterministic private keys from a seed: SHA-256 over (seed, label, counter), retried until the bytes are a
/// valid scalar for the curve.
struct KeyDerivation {
    let seed: UInt64
    init(seed: UInt64) { self.seed = seed }

    func bytes(_ label: String, _ counter: Int, count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var block = 0
        while out.count < count {
            var h = SHA256()
            withUnsafeBytes(of: seed.littleEndian) { h.update(data: Array($0)) }
            h.update(data: Array("\(label)/\(counter)/\(block)".utf8))
            out += Array(h.finalize())
            block += 1
        }
        return Array(out.prefix(count))
    }

    mutating func p256(_ label: String) -> P256.Signing.PrivateKey {
        for c in 0... {
            if let k = try? P256.Signing.PrivateKey(rawRepresentation: bytes(label, c, count: 32)) { return k }
        }
        fatalError("unreachable")
    }

    mutating func p384(_ label: String) -> P384.Signing.PrivateKey {
        for c in 0... {
            if let k = try? P384.Signing.PrivateKey(rawRepresentation: bytes(label, c, count: 48)) { return k }
        }
        fatalError("unreachable")
    }
}
