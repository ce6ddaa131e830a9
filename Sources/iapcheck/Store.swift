import ArgumentParser
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPReference
import IAPSigning
import IAPStore

struct Store: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "The mock App Store: App Store Server API, verifyReceipt and webhook posts, on loopback.",
        discussion: """
            `check`, `certify` and `load` start it by themselves for an HTTP target file with a "store" section \
            (docs/mock-app-store.md). `store serve` runs it alone with one generated case's data, to try a backend by hand.
            """,
        subcommands: [Serve.self])

    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve one generated case's App Store data until interrupted.",
            discussion: """
                Publishes every API snapshot (history pages, statuses, transaction info) and legacy receipt of case CASE \
                of SEED, prints what it serves, and with --post-notifications posts the case's notifications to the \
                target's webhook (retrying as Apple does). API tokens are checked against the key named in the target \
                file (or --api-key/--key-id/--issuer-id); without a key any request is served.

                  iapcheck store serve --target Examples/http/example-backend.json --case 3
                """)

        @Option(
            help:
                "An HTTP target file: its \"store\" section (port, shared secret, API key) and its notification route as webhook."
        )
        var target: String?
        @Option(help: "Port (when no target file names one).") var port = 8081
        @Option(help: "The App Store Connect API key (.p8) whose tokens the store accepts.") var apiKey: String?
        @Option(help: "The API key's ID (the token header's kid).") var keyId: String?
        @Option(help: "The issuer ID (the token's iss).") var issuerId: String?
        @Option(help: "The shared secret verifyReceipt requires.") var sharedSecret: String?
        @Option(help: "Which case of the seed to serve.") var `case` = 0
        @Flag(help: "Post the case's notifications to the target's webhook, in order, with Apple's retries.")
        var postNotifications = false
        @OptionGroup var cases: CaseOptions

        func run() throws {
            let (settings, parsedTarget) = try storeSettings()
            let store: MockAppStore
            do {
                store = try startStore(settings, for: parsedTarget)
            } catch {
                throw fail("error: \(error)", code: Exit.usage)
            }
            let c = try caseToServe()
            store.reset(c.config)
            print(
                "mock App Store on http://127.0.0.1:\(store.port): case \(self.case) of seed \(cases.seed) (\(c.property.rawValue)), bundle \(c.config.catalog.bundleId)"
            )
            print(
                settings.apiKey.map { "  API tokens: key \($0.keyId), issuer \($0.issuerId)" }
                    ?? "  API tokens: not checked (no key)")
            let notifications = publish(c, on: store)
            print(
                "  \(notifications.count) notifications\(postNotifications ? "" : " (not posted; --post-notifications)")"
            )
            if postNotifications { try post(notifications, of: c, through: store, to: parsedTarget) }
            print("serving; Ctrl-C stops")
            fflush(nil)  // every stream: the output may be a pipe
            while true { Thread.sleep(forTimeInterval: 3600) }
        }

        /// The store's port, shared secret and API key: from the target file's "store" section, or the options.
        func storeSettings() throws -> (StoreSettings, HTTPValidator.Target?) {
            var settings = StoreSettings(port: port, sharedSecret: sharedSecret)
            var parsedTarget: HTTPValidator.Target?
            if let target {
                do {
                    parsedTarget = try HTTPValidator.Target.load(path: target)
                } catch {
                    throw fail("error: \(error)", code: Exit.usage)
                }
                guard let s = parsedTarget?.store else {
                    throw fail("error: \(target): no \"store\" section", code: Exit.usage)
                }
                settings = s
            }
            if let apiKey {
                guard let keyId, let issuerId else { throw ValidationError("--api-key needs --key-id and --issuer-id") }
                settings.apiKey = .init(keyId: keyId, issuerId: issuerId, privateKeyFile: apiKey)
            }
            return (settings, parsedTarget)
        }

        /// Case `--case` of the seed, as `check` generates it.
        func caseToServe() throws -> GeneratedCase {
            let (catalog, policy) = try cases.loadOrExit()
            var options = CheckOptions()
            options.seed = cases.seed
            options.catalog = catalog
            options.drawsCatalogs = cases.drawsCatalogs
            options.maxSize = cases.maxSize
            options.policy = policy
            return Checker(options: options, validator: ReferenceValidator()).generate(caseIndex: self.case).0
        }

        /// Every API snapshot and receipt of the case published on the store (each said); its notifications, with
        /// their instants, returned for posting.
        func publish(_ c: GeneratedCase, on store: MockAppStore) -> [(Millis, String)] {
            let renderer = ArtifactRenderer(pki: TestPKI.harness, appAppleId: c.config.catalog.appAppleId)
            var notifications: [(Millis, String)] = []
            for step in c.steps {
                guard case .deliver(let d) = step, d.forgery == nil else { continue }
                switch renderer.render(d.delivery) {
                case let .apiSnapshot(otid, history, statuses):
                    store.publish(originalTransactionId: otid, history: history, statuses: statuses)
                    let count = history.reduce(0) { $0 + $1.signedTransactions.count }
                    print(
                        "  GET /inApps/v2/history/\(otid)   \(count) transactions\(statuses == nil ? "" : ", with statuses")"
                    )
                case let .legacyReceipt(userId, body):
                    print(
                        "  POST /verifyReceipt  user \(userId)  receipt-data \(store.registerReceipt(responseBody: body))"
                    )
                case .notification(let payload):
                    notifications.append((d.now, payload))
                case .appTransaction:
                    break
                }
            }
            return notifications
        }

        /// As `check` does: reset the backend with the case's configuration (it must trust the test root), then post
        /// through the store, with Apple's retries; each answer and every send attempt said.
        func post(
            _ notifications: [(Millis, String)], of c: GeneratedCase, through store: MockAppStore,
            to target: HTTPValidator.Target?
        ) throws {
            guard let t = target, t.routes["notification"] != nil else {
                throw ValidationError("--post-notifications needs --target with a notification route")
            }
            let backend = HTTPValidator(target: t, name: t.displayName, timeout: 10, store: store)
            var config = c.config
            config.trustedRoots = TestPKI.harness.trustedRoots
            do {
                try backend.reset(config)
                for (now, payload) in notifications {
                    switch try backend.deliver(.notification(signedPayload: payload), now: now) {
                    case .accepted: print("  posted a notification: accepted")
                    case .rejected(let why): print("  posted a notification: rejected (\(why))")
                    }
                }
            } catch {
                print("  the backend failed: \(error)")
            }
            print(
                "  send attempts: \(store.sentNotifications.map { $0.attempts.joined(separator: ",") }.joined(separator: "  "))"
            )
        }
    }
}
