import Crypto
import Foundation
import X509

extension TestPKI {
    /// The harness PKI's root and intermediate as issued once and kept (`pki export` writes these bytes), so that
    /// the root a backend is told to trust is the same file on every machine and run: ECDSA signatures are
    /// randomised, and a verifier that pins its root by the certificate's bytes must still find it. Leaves are
    /// issued afresh (nobody pins a leaf). `TestPKITests` checks that these are the certificates the code would
    /// issue, but for their signatures.
    package static let fixedRootDER = Data(
        base64Encoded:
            "MIICJDCCAaqgAwIBAgIBATAKBggqhkjOPQQDAzBaMSMwIQYDVQQDDBppYXBjaGVjayBUZXN0IFJvb3QgQ0EgLSBHMzEmMCQGA1UE"
            + "CgwdaWFwY2hlY2sgdGVzdCBQS0kgKG5vdCBBcHBsZSkxCzAJBgNVBAYTAlVTMCAXDTI0MDMwMTAwMDAwMFoYDzIwNTEwMjI4MDAw"
            + "MDAwWjBaMSMwIQYDVQQDDBppYXBjaGVjayBUZXN0IFJvb3QgQ0EgLSBHMzEmMCQGA1UECgwdaWFwY2hlY2sgdGVzdCBQS0kgKG5v"
            + "dCBBcHBsZSkxCzAJBgNVBAYTAlVTMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAE7KNKx5bB6GO+xR888kLErHKVn3jm4SwDUe9JVUoh"
            + "ZEL6nyqMIruSAXpEKYxwJkPSd5AsfCYmYWS57lJO0ogZFMJ5tlKzT2IUTN4dWvMTsIHJhqWQwpAxku2Hxh9ojVQco0IwQDAPBgNV"
            + "HRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwIBBjAdBgNVHQ4EFgQUW6sqcWpGsfMlVqpsdfM18IamqrQwCgYIKoZIzj0EAwMDaAAw"
            + "ZQIxAKRCisz5MopqxuwnzBPHwgK5AEQp5k0iH6hDxgrJdaC8Z+LkRG97cNgD7DYaae2X5AIwWAqiWUXKp6zVjMtZ0uP4s5eFCtK9"
            + "fC5Gv8cIpN5VuJjYJUlMl6nqVH+LSOHhgTbK")!

    package static let fixedIntermediateDER = Data(
        base64Encoded:
            "MIICejCCAgCgAwIBAgIBAjAKBggqhkjOPQQDAzBaMSMwIQYDVQQDDBppYXBjaGVjayBUZXN0IFJvb3QgQ0EgLSBHMzEmMCQGA1UE"
            + "CgwdaWFwY2hlY2sgdGVzdCBQS0kgKG5vdCBBcHBsZSkxCzAJBgNVBAYTAlVTMB4XDTI0MDkwMjAwMDAwMFoXDTQ4MDIyOTAwMDAw"
            + "MFowfDE4MDYGA1UEAwwvaWFwY2hlY2sgVGVzdCBXV0RSIENlcnRpZmljYXRpb24gQXV0aG9yaXR5IC0gRzYxCzAJBgNVBAsMAkc2"
            + "MSYwJAYDVQQKDB1pYXBjaGVjayB0ZXN0IFBLSSAobm90IEFwcGxlKTELMAkGA1UEBhMCVVMwdjAQBgcqhkjOPQIBBgUrgQQAIgNi"
            + "AARDtekbrmu1Zybzaiti4/MSBLX1WOXqYN08Ds7h0WHzLGe+uN5CEvJRqRyLnVdTfpn1OUIsPHkR6MKTm9KSDbFE+FB5xOJEFJXK"
            + "f2pKRmY/PMFognEwedViM0INADQYPmijeDB2MBIGA1UdEwEB/wQIMAYBAf8CAQAwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBT7"
            + "Zq7JZHUm8IV0vwmP6K3dfnPWkDAfBgNVHSMEGDAWgBRbqypxakax8yVWqmx18zXwhqaqtDAQBgoqhkiG92NkBgIBBAIFADAKBggq"
            + "hkjOPQQDAwNoADBlAjBRqD8Bi7VGt6sVFflI26t3gKIEaeuyWucG5cibVHypPHOuFmjgyfHFMWcJHvGRvekCMQDtOA14YqI7l8xo"
            + "0qzGGXtQD1s+yWC1FYi7ntxUg1WSxWeTbOAcGszMAq2kI9f17uU=")!

    /// The root as this code issues it (its signature differs at every issue).
    package static func issueRoot(
        publicKey: Certificate.PublicKey, name: DistinguishedName, key: P384.Signing.PrivateKey, validFrom: Date,
        validUntil: Date
    ) throws -> Issued {
        try issue(
            serial: 1, publicKey: publicKey, subject: name, issuer: name, issuerKey: .init(key),
            issuerPublic: publicKey,
            from: validFrom.addingTimeInterval(-365 * 86400), until: validUntil.addingTimeInterval(5 * 365 * 86400),
            kind: .root)
    }

    /// The intermediate as this code issues it under the root.
    package static func issueIntermediate(
        publicKey: Certificate.PublicKey, name: DistinguishedName, issuer: DistinguishedName,
        rootKey: P384.Signing.PrivateKey, rootPublic: Certificate.PublicKey, validFrom: Date, validUntil: Date,
        ocspURL: String?
    ) throws -> Issued {
        try issue(
            serial: 2, publicKey: publicKey, subject: name, issuer: issuer, issuerKey: .init(rootKey),
            issuerPublic: rootPublic, from: validFrom.addingTimeInterval(-180 * 86400),
            until: validUntil.addingTimeInterval(2 * 365 * 86400), kind: .intermediate(oid: true, ca: true),
            ocspURL: ocspURL)
    }

    /// Whether these are the harness's parameters, whose root and intermediate are kept (``fixedRootDER``).
    static func isHarness(seed: UInt64, validFrom: Date, validUntil: Date) -> Bool {
        seed == 1 && validFrom == defaultValidity.0 && validUntil == defaultValidity.1
    }

    /// The kept root and intermediate, when they hold these keys.
    static func fixed(_ rootPublic: Certificate.PublicKey, _ interPublic: Certificate.PublicKey) -> (Issued, Issued)? {
        guard let r = try? Certificate(derEncoded: Array(fixedRootDER)),
            let i = try? Certificate(derEncoded: Array(fixedIntermediateDER)),
            r.publicKey == rootPublic, i.publicKey == interPublic
        else { return nil }
        return (
            Issued(certificate: r, der: Array(fixedRootDER)), Issued(certificate: i, der: Array(fixedIntermediateDER))
        )
    }
}
