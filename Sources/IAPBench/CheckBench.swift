import Crypto
import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPSigning
import IAPSupport
import IAPValidatorAPI
import Synchronization

/// `iapcheck bench check`: how close a signed check runs to the cost of its cryptography, and how it scales over the
/// cores.
public enum CheckBench {
    /// What the cryptography costs on its own, in a tight loop: the price of each operation a case makes.
    public struct Prices: Codable, Sendable {
        /// ES256 on `inputBytes` of signing input, hashing included.
        public var microsecondsPerSign: Double
        public var microsecondsPerVerify: Double
        public var inputBytes: Int
        /// SHA-256, to price inputs of other sizes (a notification nests two tokens).
        public var microsecondsPerKilobyteHashed: Double
        /// P-384 on a certificate's to-be-signed bytes, as the test PKI and Apple's intermediate and root sign.
        public var microsecondsPerCertificateSign: Double
        public var microsecondsPerCertificateVerify: Double

        /// The mean of two measurements.
        static func mean(_ a: Prices, _ b: Prices) -> Prices {
            Prices(
                microsecondsPerSign: (a.microsecondsPerSign + b.microsecondsPerSign) / 2,
                microsecondsPerVerify: (a.microsecondsPerVerify + b.microsecondsPerVerify) / 2,
                inputBytes: a.inputBytes,
                microsecondsPerKilobyteHashed: (a.microsecondsPerKilobyteHashed + b.microsecondsPerKilobyteHashed) / 2,
                microsecondsPerCertificateSign: (a.microsecondsPerCertificateSign + b.microsecondsPerCertificateSign)
                    / 2,
                microsecondsPerCertificateVerify: (a.microsecondsPerCertificateVerify
                    + b.microsecondsPerCertificateVerify) / 2)
        }
    }

    /// One round: a signed check of the bench's cases on one job, in slices, each priced at the bursts of tight-loop
    /// measurements taken before and after it; the ratio they give.
    public struct Round: Codable, Sendable {
        /// The mean of the round's bursts.
        public var prices: Prices
        public var signedCasesPerSecond: Double
        public var signaturesPerCase: Double
        public var verificationsPerCase: Double
        /// Kilobytes hashed per case by the signatures and verifications (a signature whose token starts with a shared
        /// prefix hashes only what follows it).
        public var kilobytesPerCase: Double
        /// ES256 per case at the prices (each operation at its real input size).
        public var es256MicrosecondsPerCase: Double
        /// P-384 work per case: certificates signed for new leaves, certificate signatures of new chains checked.
        public var certificateMicrosecondsPerCase: Double
        /// The µs a signature and a verification took where they ran, among the rest of each case, and what the
        /// prices say they cost at the same input sizes.
        public var inPlaceMicrosecondsPerSign: Double
        public var inPlaceMicrosecondsPerVerify: Double
        public var pricedMicrosecondsPerSign: Double
        public var pricedMicrosecondsPerVerify: Double
        public var cryptoLimitRatio: Double
        /// The ratio counting the ES256 operations only.
        public var es256LimitRatio: Double
    }

    public struct Figures: Codable, Sendable {
        public var unsignedCasesPerSecond: Double
        public var rounds: [Round]
        /// Medians over the rounds.
        public var signedCasesPerSecond: Double
        public var cryptoLimitRatio: Double
        public var es256LimitRatio: Double
        public var jobs: Int
        /// Nil when not measured: the process could run on one CPU only.
        public var signedCasesPerSecondWithJobs: Double?
        public var scaling: Double?
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What the progress callback of a round's run carries from one slice to the next (it runs on the checking
    /// thread, between cases).
    final class SliceState {
        var before: Prices
        var tally = Tally()
        var counted = 0
        var clock: UInt64 = 0
        init(before: Prices) { self.before = before }
    }

    /// A round's sums over its slices: each slice's ES256 operations priced at the bursts around it, at their real
    /// input sizes (the measured cost on the sample input, plus or minus SHA-256 of the difference).
    struct Tally {
        var cases = 0
        var seconds = 0.0
        var signs = 0.0, verifies = 0.0, bytes = 0.0
        var es256 = 0.0, certificates = 0.0
        var signing = 0.0, verifying = 0.0
        var inPlaceSign = 0.0, inPlaceVerify = 0.0
        var prices: [Prices] = []

        /// Adds the slice the counters hold, priced at `p`.
        mutating func add(_ p: Prices, cases n: Int, seconds: Double) {
            func count(_ a: borrowing Atomic<Int>) -> Double { Double(a.load(ordering: .relaxed)) }
            let s = count(CryptoCounters.signatures), v = count(CryptoCounters.verifications)
            let signedBytes = count(CryptoCounters.signedBytes), verifiedBytes = count(CryptoCounters.verifiedBytes)
            let input = Double(p.inputBytes), shaPerByte = p.microsecondsPerKilobyteHashed / 1024
            let signCost = s * p.microsecondsPerSign + (signedBytes - s * input) * shaPerByte
            let verifyCost = v * p.microsecondsPerVerify + (verifiedBytes - v * input) * shaPerByte
            es256 += signCost + verifyCost
            signing += signCost
            verifying += verifyCost
            certificates +=
                count(CryptoCounters.chainSignatureChecks) * p.microsecondsPerCertificateVerify
                + count(CryptoCounters.certificateSignatures) * p.microsecondsPerCertificateSign
            signs += s
            verifies += v
            bytes += signedBytes + verifiedBytes
            inPlaceSign += count(CryptoCounters.signNanoseconds) / 1e3
            inPlaceVerify += count(CryptoCounters.verifyNanoseconds) / 1e3
            cases += n
            self.seconds += seconds
            prices.append(p)
        }

        var round: Round {
            let n = Double(max(1, cases)), k = Double(max(1, prices.count))
            let mean = Prices(
                microsecondsPerSign: prices.map(\.microsecondsPerSign).reduce(0, +) / k,
                microsecondsPerVerify: prices.map(\.microsecondsPerVerify).reduce(0, +) / k,
                inputBytes: prices.first?.inputBytes ?? 0,
                microsecondsPerKilobyteHashed: prices.map(\.microsecondsPerKilobyteHashed).reduce(0, +) / k,
                microsecondsPerCertificateSign: prices.map(\.microsecondsPerCertificateSign).reduce(0, +) / k,
                microsecondsPerCertificateVerify: prices.map(\.microsecondsPerCertificateVerify).reduce(0, +) / k)
            let busy = max(seconds, 1e-9) * 1e6
            return Round(
                prices: mean, signedCasesPerSecond: Double(cases) / max(seconds, 1e-9), signaturesPerCase: signs / n,
                verificationsPerCase: verifies / n, kilobytesPerCase: bytes / 1024 / n,
                es256MicrosecondsPerCase: es256 / n,
                certificateMicrosecondsPerCase: certificates / n,
                inPlaceMicrosecondsPerSign: inPlaceSign / max(1, signs),
                inPlaceMicrosecondsPerVerify: inPlaceVerify / max(1, verifies),
                pricedMicrosecondsPerSign: signing / max(1, signs),
                pricedMicrosecondsPerVerify: verifying / max(1, verifies),
                cryptoLimitRatio: (es256 + certificates) / busy, es256LimitRatio: es256 / busy)
        }
    }

    static func f0(_ x: Double) -> String { String(format: "%.0f", x) }
    static func f1(_ x: Double) -> String { String(format: "%.1f", x) }
    static func f2(_ x: Double) -> String { String(format: "%.2f", x) }
}
