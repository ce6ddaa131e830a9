import Foundation
import IAPSigning
import Testing
import X509

/// The harness's root and intermediate are kept bytes (docs/verifiers.md#test-pki-profile): the same file on every
/// machine and run, yet exactly what the code issues but for the signature.
@Suite struct FixedRootTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theKeptCertificatesAreTheOnesTheCodeIssuesButForTheirSignatures() throws {
        let pki = TestPKI.harness
        #expect(pki.root.der == Array(TestPKI.fixedRootDER))
        #expect(pki.intermediate.der == Array(TestPKI.fixedIntermediateDER))
        // A PKI with the same keys issued anew (another validity makes it issue): the to-be-signed parts match.
        let fresh = try TestPKI(seed: 1, validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1)
        #expect(fresh.root.der == pki.root.der)  // kept: the same bytes every time
        let issuedRoot = try TestPKI.issueRoot(
            publicKey: .init(pki.rootKey.publicKey), name: pki.root.certificate.subject, key: pki.rootKey,
            validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1)
        #expect(issuedRoot.der != pki.root.der)  // a new signature
        #expect(issuedRoot.certificate.tbsCertificateBytes == pki.root.certificate.tbsCertificateBytes)
        let issuedIntermediate = try TestPKI.issueIntermediate(
            publicKey: .init(pki.intermediateKey.publicKey), name: pki.intermediate.certificate.subject,
            issuer: pki.root.certificate.subject, rootKey: pki.rootKey, rootPublic: .init(pki.rootKey.publicKey),
            validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1, ocspURL: nil)
        #expect(
            issuedIntermediate.certificate.tbsCertificateBytes == pki.intermediate.certificate.tbsCertificateBytes)
        // The kept signatures verify under the root's key.
        #expect(
            pki.root.certificate.publicKey.isValidSignature(pki.root.certificate.signature, for: pki.root.certificate))
        #expect(
            pki.root.certificate.publicKey.isValidSignature(
                pki.intermediate.certificate.signature, for: pki.intermediate.certificate))
    }

    /// With an OCSP URL (`pki export --ocsp-url`) the root is still the kept file a verifier may pin by its bytes;
    /// the intermediate, which carries the URL, is issued under it.
    @Test func anOCSPURLKeepsTheRoot() throws {
        let url = "http://127.0.0.1:9/ocsp"
        let a = try TestPKI(
            seed: 1, validFrom: TestPKI.defaultValidity.0, validUntil: TestPKI.defaultValidity.1, ocspURL: url)
        #expect(a.root.der == Array(TestPKI.fixedRootDER))
        #expect(a.intermediate.der != Array(TestPKI.fixedIntermediateDER))
        #expect(
            a.root.certificate.publicKey.isValidSignature(
                a.intermediate.certificate.signature, for: a.intermediate.certificate))
        #expect(try a.intermediate.certificate.extensions.authorityInformationAccess != nil)
    }

    @Test func theExampleBackendTrustsTheKeptRoot() throws {
        let pem = try String(
            contentsOf: Self.root.appendingPathComponent("Examples/notes-backend/iapcheck-root.pem"), encoding: .utf8)
        #expect(pem == TestPKI.harness.root.pem)
    }
}
