import Foundation
import IAPConformance
import IAPModel
import IAPMutants
import IAPReference
import IAPSimulator
import IAPTesting
import IAPValidatorAPI
import Testing

/// A backend checked as it is: without a reset route (every case in ids of its own), with dates kept to the second,
/// with divergences it declares, and with a corpus that holds only its own app's cases (docs/http-target.md).
@Suite struct BackendAsItIsTests {
    /// The reference (or `inner`) as a backend that never forgets: it takes its configuration once, and keeps every
    /// user, transaction and notification it saw for the rest of the run.
    final class NeverForgets: Validator {
        let inner: any Validator
        var configured = false
        let isolation: CaseIsolation
        init(isolation: CaseIsolation, inner: any Validator = ReferenceValidator()) {
            (self.isolation, self.inner) = (isolation, inner)
        }
        var name: String { "never-forgets" }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            if !configured { try inner.reset(config) }
            configured = true
        }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            try inner.deliver(d, now: now)
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            try inner.entitlements(q)
        }
    }

    /// The reference as a backend whose webhook queues its work: it gives its verdict at once, and applies each
    /// notification 30 ms later (docs/http-target.md#asynchronous-backends); the app's route applies at once.
    final class AppliesLater: Validator {
        let verdicts = ReferenceValidator(), applied: any Validator
        var queue: [(SignedDelivery, Millis, UInt64)] = []
        let settleSeconds: Double
        /// The webhook answers 200 to every notification before verifying it (`acknowledges`), and says so
        /// (`declares`, a route's `"verifiesLater"`).
        var acknowledges = false, declares = false
        /// The app's route queues too (and acknowledges, and says so, as the webhook does).
        var queuesApp = false
        init(settleSeconds: Double, applied: any Validator = ReferenceValidator()) {
            (self.settleSeconds, self.applied) = (settleSeconds, applied)
        }
        func verifiesLater(_ channel: DeliveryChannel) -> Bool {
            declares && (channel == .notification || (queuesApp && channel == .app))
        }
        var name: String { "applies-later" }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            try verdicts.reset(config)
            try applied.reset(config)
            queue = []
        }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            // The app's route verifies and applies at once (unless it queues too); the webhook queues.
            if case .appTransaction = d, !queuesApp {
                let verdict = try verdicts.deliver(d, now: now)
                if verdict.isAccepted { _ = try applied.deliver(d, now: now) }
                return verdict
            }
            queue.append((d, now, DispatchTime.now().uptimeNanoseconds + 30_000_000))
            let verdict = try verdicts.deliver(d, now: now)
            if case .notification = d, acknowledges { return .accepted }
            if case .appTransaction = d, acknowledges { return .accepted }
            return verdict
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            while let (d, now, due) = queue.first, due <= DispatchTime.now().uptimeNanoseconds {
                queue.removeFirst()
                _ = try applied.deliver(d, now: now)
            }
            return try applied.entitlements(q)
        }
    }

    /// A backend that applies deliveries after acknowledging them fails on its lag alone, unless its settle time says
    /// so: then its questions are asked until the answer settles, and it passes; a real bug still fails.
    @Test(.long) func aBackendThatAppliesDeliveriesLaterPassesWithinItsSettleTime() {
        func check(_ v: any Validator, cases: Int) -> CheckReport {
            var o = CheckOptions()
            (o.cases, o.seed, o.shrinkBudget.maxAttempts) = (cases, 5, 20)
            return Checker(options: o, validator: v).run()
        }
        let lagging = check(AppliesLater(settleSeconds: 0), cases: 20)
        #expect(lagging.failure != nil)
        let settled = check(AppliesLater(settleSeconds: 0.2), cases: 20)
        #expect(settled.failure == nil, "\(settled.failure?.explanation ?? "")")
        let buggy = check(
            AppliesLater(settleSeconds: 0.2, applied: Mutants.named("ignore-revocation")!.make()), cases: 60)
        #expect(buggy.failure?.discrepancy?.differences.contains { $0.contains("revoked") } == true)
    }

    /// Certify's forgery probe gives a backend that applies deliveries late its settle time before reading the answer
    /// it compares with: each class refused, not "changed the answer" by the set-up applied late.
    @Test func certifysForgeryProbeWaitsForABackendThatAppliesLater() {
        let results = CertificationSuite.probeForgeries(
            AppliesLater(settleSeconds: 0.08), catalog: .standard, policy: .default)
        #expect(results.count > 20)
        #expect(
            results.allSatisfy { $0.holds },
            "\(results.filter { !$0.rejected }.map { "\($0.name): \($0.reason ?? "")" })")
    }

    /// A backend's counterexample that is only its lag says so: replayed with time to settle, it passes; a real bug
    /// does not.
    @Test func aFailureThatIsOnlyTheBackendsLagSaysSo() {
        func check(_ v: any Validator) -> CheckReport {
            var o = CheckOptions()
            (o.cases, o.seed, o.shrinkBudget.maxAttempts, o.outOfProcess) = (20, 5, 20, true)
            return Checker(options: o, validator: v).run()
        }
        #expect(check(AppliesLater(settleSeconds: 0)).failure?.settlesLater == true)
        let bug = check(Mutants.named("ignore-revocation")!.make())
        #expect(bug.failure != nil && bug.failure?.settlesLater == false)
    }

    /// A webhook that answers 200 before verifying: its forged notifications read as accepted unless the route says it
    /// verifies later; then they are judged by their effect, and a worker that applies them fails on it.
    @Test(.long) func aWebhookThatVerifiesLaterIsJudgedByTheEffectOfWhatItMustRefuse() {
        func check(_ v: AppliesLater, cases: Int = 20) -> CheckReport {
            var o = CheckOptions()
            (o.cases, o.seed, o.shrinkBudget.maxAttempts) = (cases, 5, 20)
            o.properties = [.forgeryRejected]
            v.acknowledges = true
            return Checker(options: o, validator: v).run()
        }
        let undeclared = check(AppliesLater(settleSeconds: 0.08))
        #expect(undeclared.failure?.discrepancy?.finding.contains("accepted a forged artifact") == true)
        let declared = AppliesLater(settleSeconds: 0.08)
        declared.declares = true
        let report = check(declared)
        #expect(report.failure == nil, "\(report.failure?.explanation ?? "")")
        #expect(report.forgeries.sent.count > 5)
        // A worker that applies what it must refuse fails by the effect (here forged purchases, whose content tempts).
        let applies = AppliesLater(settleSeconds: 0.08, applied: Mutants.named("skip-signature")!.make())
        (applies.declares, applies.queuesApp) = (true, true)
        #expect(check(applies, cases: 40).failure?.discrepancy?.kind == .answer)
    }

    /// A webhook that answers 200 to every notification and then applies it with a worker that skips one check: the
    /// app's route verifies at once (the reference's verdict), so only forged notifications get through.
    final class AcknowledgingWebhook: Validator, @unchecked Sendable {
        let worker: any Validator, verdicts = ReferenceValidator()
        var settleSeconds = 0.0
        init(worker: any Validator) { self.worker = worker }
        var name: String { "acknowledging-\(worker.name)" }
        func verifiesLater(_ channel: DeliveryChannel) -> Bool { channel == .notification }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            try worker.reset(config)
            try verdicts.reset(config)
        }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            if case .notification = d {
                _ = try worker.deliver(d, now: now)
                return .accepted
            }
            let verdict = try verdicts.deliver(d, now: now)
            if verdict.isAccepted { _ = try worker.deliver(d, now: now) }
            return verdict
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            try worker.entitlements(q)
        }
    }

    /// A backend whose first run of a case answers "nothing" and every later run right: its failure is FLAKY, and
    /// with a settle time the FAIL line says a queue lagging past it under load is the usual cause.
    final class WrongOnce: Validator, @unchecked Sendable {
        let inner = ReferenceValidator()
        var resets = 0
        var name: String { "wrong-once" }
        var settleSeconds: Double { 0.01 }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) {
            resets += 1
            try inner.reset(config)
        }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            try inner.deliver(d, now: now)
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            resets == 1 ? EntitlementAnswer(products: [], groups: [], consumables: []) : try inner.entitlements(q)
        }
    }

    @Test func aFlakyFailureOfABackendWithASettleTimeSuggestsALongerOne() throws {
        var o = CheckOptions()
        (o.cases, o.seed, o.shrinkBudget.maxAttempts) = (5, 1, 20)
        var lines: [String] = []
        _ = try CheckRun(validator: "wrong-once", checker: Checker(options: o, validator: WrongOnce())).run {
            lines.append($0)
        }
        #expect(lines.contains { $0.hasPrefix("FLAKY") }, "\(lines)")
        #expect(lines.contains { $0.contains("FAIL") && $0.contains("try a larger settleMs") }, "\(lines)")
    }

    /// A forged notification's content is a purchase the store never made (its own transaction id): a worker that
    /// applies forged notifications unverified shows it in its answers within a few cases. With the genuine
    /// transaction's id, a worker that keeps the first copy of a transaction showed nothing: none of these workers
    /// failed in 1,600 cases (400 on each of seeds 1–4).
    @Test func aWorkerThatAppliesForgedNotificationsShowsItInItsAnswers() throws {
        func check(_ worker: any Validator, seed: UInt64, cases: Int = 80) -> CheckReport {
            var o = CheckOptions()
            (o.cases, o.seed, o.shrinkBudget.maxAttempts) = (cases, seed, 1)
            o.properties = [.forgeryRejected]
            return Checker(options: o, validator: AcknowledgingWebhook(worker: worker)).run()
        }
        for name in ["nested-jws-unverified", "skip-chain", "skip-signature"] {
            for seed: UInt64 in [1, 2] {
                let f = check(Mutants.named(name)!.make(), seed: seed).failure
                #expect(f?.discrepancy?.kind == .answer, "\(name), seed \(seed)")
            }
        }
        let correct = check(ReferenceValidator(), seed: 1, cases: 150)
        #expect(correct.failure == nil, "\(correct.failure?.explanation ?? "")")
        #expect(correct.forgeries.sent.count > 20)
        // The doctor cannot wait for effects: a forgery such a webhook acknowledges is not judged there (not ✓).
        let doctor = Doctor(
            validator: AcknowledgingWebhook(worker: Mutants.named("skip-chain")!.make()), catalog: .standard,
            policy: .default
        ).run()
        let forgeryLines = doctor.items.filter { $0.name.hasPrefix("forgery ") && $0.detail.contains("verifies later") }
        #expect(!forgeryLines.isEmpty && forgeryLines.allSatisfy { $0.status == .skipped }, "\(doctor.text)")
        // The FAIL line of a backend with a settle time says how long its answers were given.
        var o = CheckOptions()
        (o.cases, o.seed, o.shrinkBudget.maxAttempts, o.properties) = (80, 2, 1, [.forgeryRejected])
        let webhook = AcknowledgingWebhook(worker: Mutants.named("skip-chain")!.make())
        webhook.settleSeconds = 0.01
        var lines: [String] = []
        _ = try CheckRun(validator: webhook.name, checker: Checker(options: o, validator: webhook)).run {
            lines.append($0)
        }
        #expect(
            lines.contains {
                $0.hasPrefix("FAIL") && $0.contains("asked again for up to 10 ms, the target's settleMs")
            },
            "\(lines)")
    }

    static func check(_ v: any Validator, cases: Int, seed: UInt64 = 5, drawsCatalogs: Bool = false) -> CheckReport {
        var o = CheckOptions()
        o.cases = cases
        o.seed = seed
        o.drawsCatalogs = drawsCatalogs
        return Checker(options: o, validator: v).run()
    }

    @Test(.long) func aBackendThatKeepsItsStatePassesWhenEveryCaseHasIdsOfItsOwn() {
        let namespaced = Self.check(NeverForgets(isolation: .namespace), cases: 150)
        #expect(namespaced.failure == nil, "\(namespaced.failure.map { "\($0.discrepancy?.differences ?? [])" } ?? "")")
        // The same backend meeting every case under the same ids: earlier cases' purchases leak into later ones.
        let shared = Self.check(NeverForgets(isolation: .reset), cases: 150)
        #expect(shared.failure != nil)
    }

    @Test func certifysForgeryProbeGivesABackendThatKeepsItsStateIdsOfItsOwnPerClass() {
        let results = CertificationSuite.probeForgeries(
            NeverForgets(isolation: .namespace), catalog: .standard, policy: .default)
        #expect(results.count > 20)
        #expect(
            results.allSatisfy { $0.holds },
            "\(results.filter { !$0.rejected }.map { "\($0.name): \($0.reason ?? "")" })")
    }

    @Test func idsInANamespaceKeepApplesShapesAndNeverRepeat() throws {
        let (c, _) = Fixtures.generator().generate(.idempotentDelivery, .init(seed: 12))
        let a = IDNamespace.next(), b = IDNamespace.next()
        #expect(a != b)
        let ca = a.apply(c), cb = b.apply(c)
        var ids: [Set<String>] = []
        for x in [c, ca, cb] {
            var set: Set<String> = []
            for case .deliver(let d) in x.steps {
                switch d.delivery {
                case .appTransaction(let s):
                    set.insert(s.transaction.transactionId)
                    set.insert(s.userId)
                case .notification(let n):
                    set.insert(n.notificationUUID)
                    if let t = n.data?.transactionInfo { set.insert(t.originalTransactionId) }
                default: break
                }
            }
            ids.append(set)
        }
        #expect(ids[0].count == ids[1].count && ids[1].count == ids[2].count)  // one id for one id
        #expect(ids[0].isDisjoint(with: ids[1]) && ids[1].isDisjoint(with: ids[2]))
        for id in ids[1] {
            if let n = Int64(id) {
                #expect(id.count == 16 && n < 1 << 53, "\(id)")
            } else {
                let parts = id.split(separator: "-")
                #expect(parts.map(\.count) == [8, 4, 4, 4, 12] && parts[2].hasPrefix("4"), "\(id)")
            }
        }
        // The last four digits stay, so timelines' …0001 names the same transaction.
        #expect(a.transactionId("2000000000000042").hasSuffix("00042"))
        // A forged copy whose UUID differs from the genuine one's only in its first field stays apart from it.
        #expect(a.uuid("5e1f0000-0000-4000-9000-000000000001") != a.uuid("f00d0000-0000-4000-9000-000000000001"))
    }

    /// The reference as a backend that keeps dates to the second: it truncates every expiry and decides what is
    /// active from the truncated date.
    final class KeepsSeconds: Validator {
        let inner = ReferenceValidator()
        let precision: Millis
        init(declares precision: Millis) { self.precision = precision }
        var name: String { "keeps-seconds" }
        var profile: ValidatorProfile {
            var p = ValidatorProfile(
                answers: [.productsActive, .productsExpiresDate], channels: DeliveryChannel.allCases)
            p.datePrecision = precision
            return p
        }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { try inner.reset(config) }
        func deliver(_ d: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            try inner.deliver(d, now: now)
        }
        func entitlements(_ q: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            var a = try inner.entitlements(q)
            for i in a.products.indices {
                guard let e = a.products[i].expiresDate else { continue }
                let cut = e - ((e % 1000) + 1000) % 1000
                a.products[i].expiresDate = cut
                if a.products[i].state == .active && cut <= q.at {
                    a.products[i].active = false
                    a.products[i].state = .expired
                }
            }
            return a
        }
    }

    @Test(.long) func aBackendThatKeepsSecondsPassesWhenItDeclaresItAndIsToldHowOtherwise() {
        let declared = Self.check(KeepsSeconds(declares: 1000), cases: 300, seed: 2)
        #expect(declared.failure == nil, "\(declared.failure.map { "\($0.discrepancy?.differences ?? [])" } ?? "")")
        let undeclared = Self.check(KeepsSeconds(declares: 1), cases: 300, seed: 2)
        let lines = undeclared.failure?.discrepancy?.differences ?? []
        #expect(lines.contains { $0.contains("\"precision\": \"s\"") }, "\(lines)")
    }

    /// The doctor's one purchase shows it too (its instants have milliseconds): a ✗ naming the fix, and a backend
    /// that declares it is usable.
    @Test func theDoctorSeesDatesCutToTheSecond() {
        let report = Doctor(validator: KeepsSeconds(declares: 1), catalog: .standard, policy: .default).run()
        let answer = report.items.first { $0.name == "answer" }
        #expect(answer?.status == .misconfigured, "\(report.text)")
        #expect(answer?.fix?.contains("\"precision\": \"s\"") == true, "\(report.text)")
        let declared = Doctor(validator: KeepsSeconds(declares: 1000), catalog: .standard, policy: .default).run()
        #expect(declared.usable && declared.items.allSatisfy { $0.status != .finding }, "\(declared.text)")
    }

    @Test func questionsHeldToASecondStayOnTheSameSideOfEveryChange() {
        let profile = KeepsSeconds(declares: 1000).profile
        for seed in UInt64(1)...20 {
            let (c, _) = Fixtures.generator().generate(.entitlementAgreement, .init(seed: seed))
            let held = c.holdingQuestions(at: 1000, profile: profile)
            // Nothing is delivered differently; only questions move (by whole seconds) or go.
            #expect(
                held.steps.filter { if case .deliver = $0 { true } else { false } }.count
                    == c.steps.filter { if case .deliver = $0 { true } else { false } }.count)
            let before = c.steps.compactMap { if case .query(let q) = $0 { q.query.at } else { nil } }
            let after = held.steps.compactMap { if case .query(let q) = $0 { q.query.at } else { nil } }
            #expect(after.count <= before.count)
            #expect(after.allSatisfy { t in before.contains { ($0 - t) % 1000 == 0 } })
            #expect(held.holdingQuestions(at: 1000, profile: profile) == held)  // held already: unchanged
        }
    }

    @Test(.long) func declaredForgeryClassesAreLeftOutAndListed() throws {
        var o = CheckOptions()
        o.cases = 400
        o.seed = 4
        o.properties = [.forgeryRejected]
        o.policy = Policy(tokenSizeLimit: 262_144)  // the app declares a limit, which this mutant ignores
        let bare = Checker(options: o, validator: Mutants.named("no-size-limit")!.make()).run()
        #expect(bare.failure != nil)
        o.knownDivergences = [.oversizedToken]
        var run = CheckRun(
            validator: "mutant:no-size-limit",
            checker: Checker(options: o, validator: Mutants.named("no-size-limit")!.make()))
        run.corpus = nil
        var lines: [String] = []
        let declared = try run.run { lines.append($0) }
        #expect(declared.verdict == .pass)
        #expect(declared.summary.run?.knownDivergences == ["oversized-token"])
        #expect(lines.contains { $0.contains("not checked, declared divergences: oversized-token") })
    }

    @Test func theCorpusReplaysOnlyTheCasesOfTheRunsApp() throws {
        let dir = Scratch.url.appendingPathComponent("corpus-apps-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (mine, _) = Fixtures.generator().generate(.entitlementAgreement, .init(seed: 3))
        var theirs = mine
        theirs.config.catalog.bundleId = "com.acme.other"
        for c in [mine, theirs] {
            try Corpus.save(CorpusCase(foundWith: "exec:x", seed: 3, caseIndex: 0, failure: nil, testCase: c), in: dir)
        }
        var o = CheckOptions()
        o.cases = 5
        var run = CheckRun(validator: "reference", checker: Checker(options: o, validator: ReferenceValidator()))
        run.corpus = dir
        var lines: [String] = []
        let report = try run.run { lines.append($0) }
        #expect(report.summary.corpus.replayed == 1)
        #expect(report.summary.corpus.skipped == ["another app": 1])
        #expect(lines.contains { $0.contains("corpus 1 replayed, 1 skipped (another app)") }, "\(lines)")
        // A user's program or backend saves its counterexamples apart from iapcheck's own corpus.
        #expect(Corpus.directory(forValidator: .http("config/my backend.json")) == "Corpus/http-my-backend")
        #expect(Corpus.directory(forValidator: .exec("python3 v.py --x")) == "Corpus/exec-python3-v.py-x")
        #expect(Corpus.directory(forValidator: .mutant("no-grace")) == "Corpus")
    }

    /// A backend's corpus follows the backend: the same address and app, or the same `"name"`, whatever the target
    /// file is called; a new folder beside one of the same app's is found, so the run can say so.
    @Test func aBackendsCorpusIsNamedForTheBackendNotTheFile() throws {
        #expect(
            Corpus.directory(forBackend: nil, bundleId: "com.acme.notes", host: "127.0.0.1", port: 8700)
                == "Corpus/http-com.acme.notes-127.0.0.1-8700")
        #expect(
            Corpus.directory(forBackend: "notes service", bundleId: "com.acme.notes", host: "127.0.0.1", port: 8700)
                == "Corpus/http-notes-service")
        let base = Scratch.url.appendingPathComponent("corpus-backend-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let old = base + "/http-target"
        let (c, _) = Fixtures.generator().generate(.entitlementAgreement, .init(seed: 3))
        try Corpus.save(
            CorpusCase(foundWith: "http:127.0.0.1:8700", seed: 1, caseIndex: 0, failure: nil, testCase: c), in: old)
        // Cases of the same app that other backends found (another address, another name) are theirs.
        for (folder, who) in [("/http-staging", "http:127.0.0.1:9999"), ("/http-podcasts", "podcasts")] {
            try Corpus.save(
                CorpusCase(foundWith: who, seed: 1, caseIndex: 0, failure: nil, testCase: c), in: base + folder)
        }
        let bundleId = c.config.catalog.bundleId
        let new = Corpus.directory(forBackend: "notes", bundleId: bundleId, host: "127.0.0.1", port: 8700, base: base)
        let mine: Set<String> = ["notes", "http:127.0.0.1:8700"]
        let others = Corpus.otherFolders(ofApp: bundleId, foundWith: mine, besides: new, base: base)
        #expect(others.map(\.folder) == [old] && others.first?.cases == 1)
        #expect(Corpus.otherFolders(ofApp: "com.other.app", foundWith: mine, besides: new, base: base).isEmpty)
    }
}

/// A backend without a reset route gets ids of its own in every run: a failure says which it got in the run shown,
/// so its logs can be searched (the Ruby trial's `--explain` showed only the case's own ids, which the backend never
/// saw); the ids do not make two runs of one failure differ.
@Suite struct BackendIdsInReportsTests {
    @Test func aFailureNamesTheIdsTheBackendGot() throws {
        var o = CheckOptions()
        (o.cases, o.shrinkBudget.maxAttempts) = (60, 100)
        // Never forgets, and misses grace periods (docs/mistakes.md J5).
        let v = BackendAsItIsTests.NeverForgets(isolation: .namespace, inner: Mutants.named("no-grace")!.make())
        let f = try #require(Checker(options: o, validator: v).run().failure)
        let d = try #require(f.discrepancy)
        let ids = try #require(d.backendIds, "a namespaced run names its ids")
        let person = try #require(f.shrunk.persons.first)
        let line = Reports.summary(of: d, f.shrunk, caseIndex: f.caseIndex, corpusFile: nil, replay: "r").backendIds
        #expect(line?.contains(IDNamespace(value: ids.namespace).uuid(person.accountId)) == true, "\(line ?? "-")")
        // Run again, the same failure under other ids: the same discrepancy.
        guard case .discrepancy(let again) = CaseRunner.run(f.shrunk, against: v) else {
            Issue.record("the shrunk case passed when run again")
            return
        }
        #expect(again.backendIds?.namespace != ids.namespace && again == d)
    }
}
