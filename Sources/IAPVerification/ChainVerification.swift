import Foundation
import IAPModel
import SwiftASN1
import Synchronization
@_spi(DisableValidityCheck) import X509

/// The certificate-chain half of JWS verification, done as Apple's Swift library does it: swift-certificates'
/// `Verifier` builds the chain from the leaf through the token's intermediate to a configured root and applies
/// RFC 5280 (versions, basic constraints, name constraints; every critical extension must be one the policies
/// handle) plus the App Store policy below. Dates are left out of the chain check and kept as a window, so one
/// verified chain serves every `signedDate` (the window is what RFC 5280's expiry rule would check at that instant).
///
/// When the `Verifier` refuses, `explain` names the first reason in the order a reader would look for it; the
/// `Verifier` alone decides whether the chain is accepted.
enum ChainVerification {
    static let receiptSigningOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let wwdrIntermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// Apple's OID rules: exactly leaf, intermediate and root; the WWDR OID on the intermediate and the receipt-
    /// signing OID on the leaf (presence only, as Apple's libraries check). Handles no critical extension, so a
    /// critical Apple OID breaks the chain, as it does in Apple's library.
    struct AppStorePolicy: VerifierPolicy, Sendable {
        let checkOIDs: Bool
        let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

        func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
            guard chain.count == 3 else {
                return .failsToMeetPolicy(reason: "the chain has \(chain.count) certificates, not 3")
            }
            guard checkOIDs else { return .meetsPolicy }
            guard chain[0].extensions[oid: ChainVerification.receiptSigningOID] != nil else {
                return .failsToMeetPolicy(reason: "leaf certificate does not contain the Receipt Signing OID")
            }
            guard chain[1].extensions[oid: ChainVerification.wwdrIntermediateOID] != nil else {
                return .failsToMeetPolicy(reason: "intermediate certificate does not contain the WWDR OID")
            }
            return .meetsPolicy
        }
    }

    /// Validates `leaf` through `intermediate` to one of `roots`: the root the chain ends in, or why it does not.
    /// The root comes from the chain the `Verifier` built, so no signature is checked twice (each costs a P-384
    /// verification, many times an ES256 one).
    static func validate(leaf: Certificate, intermediate: Certificate, roots: [Certificate], checkOIDs: Bool)
        -> Result<Certificate, Refusal>
    {
        let result = BlockingAsync.run {
            var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy.withValidityCheckDisabled()
                AppStorePolicy(checkOIDs: checkOIDs)
            }
            return await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        }
        switch result {
        case .validCertificate(let chain):
            // The policy admits chains of exactly three, so the last is the trusted root.
            guard let root = chain.last, chain.count == 3 else {
                return .failure(Refusal(reason: "the verified chain has \(chain.count) certificates, not 3"))
            }
            return .success(root)
        case .couldNotValidate(let failures):
            return .failure(
                Refusal(
                    reason: explain(
                        leaf: leaf, intermediate: intermediate, roots: roots,
                        policyFailures: failures.map { "\($0.policyFailureReason)" })))
        }
    }

    struct Refusal: Error {
        let reason: String
    }

    /// Why a chain was refused, for people: critical extensions, then signatures, then the policies' own words.
    static func explain(leaf: Certificate, intermediate: Certificate, roots: [Certificate], policyFailures: [String])
        -> String
    {
        let handled: Set<ASN1ObjectIdentifier> = [
            .X509ExtensionID.basicConstraints, .X509ExtensionID.keyUsage, .X509ExtensionID.nameConstraints,
        ]
        for (name, c) in [("leaf", leaf), ("intermediate", intermediate)] {
            if let e = c.extensions.first(where: { $0.critical && !handled.contains($0.oid) }) {
                return "\(name) has a critical extension no policy handles (\(e.oid))"
            }
        }
        if !(leaf.issuer == intermediate.subject && intermediate.publicKey.isValidSignature(leaf.signature, for: leaf))
        {
            return "leaf is not issued by the intermediate"
        }
        if !roots.contains(where: {
            $0.subject == intermediate.issuer
                && $0.publicKey.isValidSignature(intermediate.signature, for: intermediate)
        }) {
            return "intermediate is not issued by a trusted root"
        }
        for (name, c) in [("intermediate", intermediate)]
            + roots.filter({ $0.subject == intermediate.issuer }).map({ ("root", $0) })
        {
            guard case .isCertificateAuthority = (try? c.extensions.basicConstraints) ?? .notCertificateAuthority else {
                return "\(name) is not marked as a CA (basic constraints)"
            }
        }
        // The library's reasons quote whole certificates; the first line of thought is enough.
        if let first = policyFailures.first { return first.count > 240 ? String(first.prefix(240)) + "…" : first }
        return "no chain from the leaf to a trusted root meets the policies"
    }
}

/// Runs an async computation to completion from synchronous code. The work runs on a thread of its own (a task
/// executor), never on the shared cooperative pool, so a caller that is itself on that pool cannot starve it.
enum BlockingAsync {
    /// Sendable: the job queue is touched under `condition` only.
    final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs: [UnownedJob] = []

        init() {
            let t = Thread { [unowned self] in self.loop() }
            t.name = "iapcheck.chain-verification"
            t.start()
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let unowned = UnownedJob(job)
            condition.lock()
            jobs.append(unowned)
            condition.signal()
            condition.unlock()
        }

        private func loop() {
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }

    /// One executor thread per core, taken in turn, so cold chain checks on several threads do not queue on one.
    static let executors = (0..<max(1, ProcessInfo.processInfo.activeProcessorCount)).map { _ in ThreadExecutor() }
    static let turn = Atomic<Int>(0)
    static var executor: ThreadExecutor { executors[turn.add(1, ordering: .relaxed).oldValue % executors.count] }

    /// Sendable: written once by the task before it signals the semaphore, read only after the wait.
    final class Box<T>: @unchecked Sendable { var value: T? }

    static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: executor) {
            box.value = await work()
            done.signal()
        }
        done.wait()
        return box.value!
    }
}
