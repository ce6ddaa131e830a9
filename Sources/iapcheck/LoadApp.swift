import ArgumentParser
import Foundation
import IAPHTTP
import IAPLoad
import IAPModel
import IAPValidatorAPI

/// The app under load: a profile's `catalog`, `bundleId`, `appAppleId`, `environment`, `entitlements` and `policy`
/// keys, each replaced by the option of the same name (as `check` takes them).
struct LoadAppOptions: ParsableArguments {
    @Option(
        help:
            "The app's catalog (iapcheck JSON or an Xcode .storekit file): the pool's histories are of its products. Overrides the profile's \"catalog\"; default the built-in catalog."
    ) var catalog: String?
    @Option(help: "The app's bundle id (required with a .storekit catalog); overrides the profile's \"bundleId\".")
    var bundleId: String?
    @Option(help: "The app's App Store id, as the backend is configured; overrides the profile's \"appAppleId\".")
    var appAppleId: Int64?
    @Option(help: "Production or Sandbox, as the backend is configured; overrides the profile's \"environment\".")
    var environment: String?
    @Option(help: "Entitlements file for a .storekit catalog; overrides the profile's \"entitlements\".")
    var entitlements: String?
    @Option(help: "Policy file (docs/policies.md); overrides the profile's \"policy\".") var policy: String?

    var app: LoadProfile.App {
        var a = LoadProfile.App()
        a.catalog = catalog
        a.bundleId = bundleId
        a.appAppleId = appAppleId
        a.environment = environment
        a.entitlements = entitlements
        a.policy = policy
        return a
    }
}

extension Load {
    /// The catalog and policy of the profile's app, its notes said first; exit 2 with every problem named.
    static func app(_ p: LoadProfile) throws -> (Catalog, Policy) {
        do {
            let (catalog, policy) = try CaseOptions.resolve(
                catalog: p.app.catalog, bundleId: p.app.bundleId, appAppleId: p.app.appAppleId,
                environment: p.app.environment, entitlements: p.app.entitlements, policy: p.app.policy)
            for note in catalog.notes {
                FileHandle.standardError.write(Data("catalog \(p.app.catalog ?? "builtin"): \(note)\n".utf8))
            }
            return (catalog, policy)
        } catch {
            throw fail("error: \(error)", code: Exit.usage)
        }
    }

    /// The pool for the validator `first` stands for: only the operations its channels take (the rest said and
    /// recorded), answer samples on the fields it declares, and for a backend on libfaketime one clock for the run,
    /// frozen after every artifact's own instant, at which the samples are asked.
    static func pool(
        _ p: LoadProfile, catalog: Catalog, policy: Policy, first: any Validator, runId: Int64?
    ) throws -> (pool: ArtifactPool, frozenClock: Millis?, notSent: [String], samples: String) {
        do { try first.prepare() } catch {
            throw fail("validator failure: \(error)", code: Exit.validatorFailure)
        }
        let profile = first.profile
        let ops = ArtifactPool.operations(p, for: profile)
        let notSent = ops.dropped.map {
            "\($0.rawValue): the target takes no \($0.channel?.protocolName ?? "") channel (its channels: \(profile.channels.map(\.protocolName).joined(separator: ", ")))"
        }
        for line in notSent { FileHandle.standardError.write(Data("load \(p.name): not sent: \(line)\n".utf8)) }
        guard !ops.sent.isEmpty else {
            throw fail("error: \(p.name): nothing of the mix can be sent to this target", code: Exit.usage)
        }
        var setup = ArtifactPool.Setup()
        setup.catalog = catalog
        setup.policy = policy
        setup.validator = profile
        if let runId { setup.runId = runId }
        let http = first as? HTTPValidator
        if http?.hasWallClock == true {
            // The backend answers at the real time, which runs on through the run: questions at the start, about
            // answers that stay the same until well after the end.
            setup.answersAt = Millis(Date().timeIntervalSince1970 * 1000)
            setup.answersWindow = Millis((p.warmupSeconds + p.durationSeconds + 600) * 1000)
        }
        var pool = ArtifactPool.build(p, setup: setup)
        var frozen: Millis?
        if http?.hasFakeClock == true {
            // One clock for every worker: it stands a day after the latest artifact, and questions are asked then.
            var t = (pool.items.map(\.now) + pool.samples.deliveries.map(\.1)).max() ?? 0
            t += CivilTime.msPerDay
            setup.answersAt = t
            if !pool.samples.questions.isEmpty { pool.samples = .build(seed: p.poolSeed, setup: setup) }
            frozen = t
        }
        let fields = profile.answers.map(\.rawValue).joined(separator: ", ")
        let samples =
            pool.samples.questions.isEmpty
            ? (p.answerSamplePercent <= 0 ? "off (answerSamplePercent 0)" : "none (no questions in the mix)")
            : "\(pool.samples.questions.count) questions about \(Set(pool.samples.questions.map(\.0.userId)).count) users, compared on \(fields)"
                + (frozen.map { " at the backend's frozen clock \(CivilTime.iso8601($0))" } ?? "")
                + (http?.hasWallClock == true
                    ? " at the real time (the backend's clock), each answer steady through the run" : "")
        return (pool, frozen, notSent, samples)
    }
}
