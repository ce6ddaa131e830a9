import ArgumentParser
import Foundation
import IAPConformance
import IAPModel
import IAPSigning

struct PKI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pki",
        abstract:
            "The test PKI iapcheck signs with: export its root for a validator to trust, or write signed samples.",
        subcommands: [Export.self, Sample.self])

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write root.der, root.pem and intermediate.pem into DIR.",
            discussion:
                "Configure the validator under test to trust root.der (in place of Apple Root CA - G3), with online (OCSP) checks off: the test certificates carry no OCSP URL."
        )
        @Argument(help: "Output directory.") var directory: String
        @Option(
            help:
                "Put this OCSP responder URL (Authority Information Access) on the intermediate and leaves, e.g. http://127.0.0.1:8081/ocsp. The default PKI has none, so validators run offline."
        )
        var ocspUrl: String?
        func run() throws {
            var pki = TestPKI.harness
            if let ocspUrl {
                pki = try TestPKI(
                    seed: pki.seed, validFrom: pki.validFrom, validUntil: pki.validUntil, ocspURL: ocspUrl)
            }
            for path in try PKIExport.export(pki, to: directory) { print(path) }
        }
    }

    struct Sample: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write a genuine signed transaction, renewal info and notification, one forged artifact per forgery class, the root, and samples.json into DIR."
        )
        @Argument(help: "Output directory.") var directory: String
        @Option(help: "Signing instant (epoch ms); default 2026-03-01T00:00:00Z.") var at: Int64 =
            CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay
        @Option(
            help:
                "Catalog whose product the samples buy (iapcheck JSON or .storekit; default: the built-in catalog). Its first auto-renewable subscription, else a non-renewing one, a non-consumable, a consumable."
        )
        var catalog: String?
        @Option(help: "The app's bundle id (required with a .storekit catalog).") var bundleId: String?
        func run() throws {
            // The test PKI's certificates are valid for a window of years; far outside it nothing can be signed.
            guard at >= 0 && at <= 253_402_300_799_999 else {
                throw ValidationError("--at must be epoch milliseconds between 1970 and 9999")
            }
            let catalog: Catalog
            do {
                catalog = try CaseOptions.load(catalog: self.catalog, bundleId: bundleId).0
            } catch {
                throw fail("error: \(error)", code: Exit.usage)
            }
            let written: (genuine: Int, forged: Int)
            do {
                written = try PKIExport.samples(TestPKI.harness, catalog: catalog, at: at, to: directory)
            } catch let e as PKIExportError {
                throw fail("error: \(e)", code: Exit.usage)
            }
            print(
                "wrote \(directory)/samples.json, \(written.genuine) genuine and \(written.forged) forged artifacts, root.der"
            )
        }
    }
}
