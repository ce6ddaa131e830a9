import ArgumentParser
import Foundation
import IAPHTTP
import IAPModel
import IAPMutants
import IAPReference
import IAPSigning
import IAPStore
import IAPSubprocess
import IAPValidatorAPI

/// The run's policy with the meaning a target's answer mapping declares for its dates (`"meaning"` on
/// `expiresDate`, docs/http-target.md#what-a-date-means); a policy saying another meaning is refused.
func adoptingMeaning(_ policy: Policy, _ spec: ValidatorSpec) throws -> Policy {
    // An unreadable target file is reported by makeValidator, with its problems.
    guard let path = spec.targetFile, let target = try? HTTPValidator.Target.load(path: path) else { return policy }
    do {
        return try policy.adopting(target.profile, file: path)
    } catch {
        throw fail("error: \(error)", code: Exit.usage)
    }
}

/// `--jobs`: as asked, or one per core for validators that live in this process. A program (`exec:`) runs N copies
/// only when asked, since copies of a correct validator that share a file would fail each other. An `http:` target
/// says how jobs share it (``HTTPValidator/Target/jobSharing``): one instance per job when its start command takes
/// `{port}` (by default one per core), any number on one backend without a reset route (when asked), up to its
/// `maxConcurrency` tenants, else one (docs/http-target.md#concurrent-jobs).
func resolveJobs(_ asked: Int?, for text: String, faults: FaultProfile = FaultProfile()) throws -> Int {
    let spec = try parseValidator(text)
    let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
    if let asked, asked < 1 { throw ValidationError("--jobs must be at least 1") }
    if let path = spec.targetFile {
        // An unreadable target file is reported by makeValidator, with its problems.
        guard let target = try? HTTPValidator.Target.load(path: path) else { return asked ?? 1 }
        // Instances of their own are safe by default; one backend shared by several callers is the user's call (a
        // backend keeping the clock header's "now" as one global setting would mix them).
        let (allowed, byDefault): (Int, Int)
        switch target.jobSharing {
        case .one: (allowed, byDefault) = (1, 1)
        case .tenants(let n): (allowed, byDefault) = (n, n)
        case .sharedInstance: (allowed, byDefault) = (HTTPValidator.Target.maxInstances, 1)
        case .instances: (allowed, byDefault) = (HTTPValidator.Target.maxInstances, Int.max)
        }
        if let asked, asked > allowed {
            throw ValidationError("--jobs \(asked): \(path) " + oneCallerReason(target, allowed: allowed))
        }
        // The kill fault restarts a backend between one job's deliveries and counts on nothing else reaching it;
        // the reset fault drops only the connection of the job it hits (and the store faults need a store, which
        // maxConcurrency excludes).
        let jobs = asked ?? (faults.kill ? 1 : min(cores, byDefault))
        if jobs > 1 && faults.kill {
            throw ValidationError("--faults kill runs one job against one backend: give --jobs 1 with it")
        }
        return jobs
    }
    if let asked { return asked }
    return spec.isInProcess ? cores : 1
}

/// Why a target takes no more callers than `allowed`, and what would let it take more.
func oneCallerReason(_ target: HTTPValidator.Target, allowed: Int) -> String {
    if allowed > 1 {
        return target.maxConcurrency > 1
            ? "takes at most \(allowed) callers at once (\"maxConcurrency\")"
            : "takes at most \(allowed) jobs at once"
    }
    if target.store != nil {
        return
            "takes one caller at a time: its mock App Store posts notifications to one backend (docs/http-target.md#concurrent-jobs)"
    }
    if target.start != nil {
        return
            "takes one caller at a time; put {port} in its start command so that each job starts a backend of its own, on a port of its own (docs/http-target.md#concurrent-jobs)"
    }
    return
        "takes one caller at a time; give it \"maxConcurrency\" when the backend keeps one state per \(HTTPValidator.jobHeader) header, or drop its reset route if every case may run in ids of its own (docs/http-target.md#concurrent-jobs)"
}

/// `--validator`'s text as a ``ValidatorSpec``, or a usage error (exit 2) saying which forms there are.
func parseValidator(_ text: String) throws -> ValidatorSpec {
    do { return try ValidatorSpec(parsing: text) } catch { throw ValidationError(error.description) }
}

/// The validator for each job after the first (`--jobs`); `http:` targets number them (``HTTPValidator/jobNumber(ofWorker:jobs:)``).
func workerFactory(
    _ spec: String, timeout: Double, faults: FaultProfile, jobs: Int
) -> () throws -> any Validator {
    var made = 0
    return {
        defer { made += 1 }
        let job = HTTPValidator.jobNumber(ofWorker: made, jobs: jobs)
        do {
            return try makeValidator(spec, timeout: timeout, faults: faults, job: job)
        } catch {
            // The run goes on with the jobs it has: said, never silent (a backend instance that does not start).
            try? FileHandle.standardError.write(
                contentsOf:
                    Data("iapcheck: job \(job) could not start, so the run has one job fewer: \(error)\n".utf8))
            throw error
        }
    }
}

/// `forLoad`: for `iapcheck load`, which takes a backend on its real clock (`"clock": "wall"`); every other command
/// needs to set the backend's clock and refuses one.
func makeValidator(
    _ text: String, timeout: Double = 5, faults: FaultProfile = FaultProfile(), job: Int = 0, forLoad: Bool = false
) throws -> any Validator {
    let spec = try parseValidator(text)
    switch spec {
    case .reference: return ReferenceValidator()
    case .http(let path):
        return try makeHTTPValidator(path, timeout: timeout, faults: faults, job: job, forLoad: forLoad)
    default: break
    }
    if let problem = faults.problemOutsideHTTP { throw ValidationError(problem) }
    switch spec {
    case .reference, .http: preconditionFailure("made above")
    case .exec(let command): return SubprocessValidator(command: command, timeout: timeout)
    case .mutant(let name):
        guard let m = Mutants.named(name) else {
            throw ValidationError("no mutant named \"\(name)\"; `iapcheck mutants --list` lists them")
        }
        return m.make()
    case .variant(let name):
        guard let v = Variants.named(name) else {
            throw ValidationError(
                "no variant named \"\(name)\"; variants: \(Variants.all.map(\.name).joined(separator: ", "))")
        }
        return v.make()
    }
}

/// An `http:` target's validator: its backend started or reached, its mock App Store started when it has one.
func makeHTTPValidator(
    _ path: String, timeout: Double, faults: FaultProfile, job: Int, forLoad: Bool
) throws -> any Validator {
    do {
        // A job after the first of a backend started once per job: its own instance, on a port of its own.
        let base = try HTTPValidator.Target.load(path: path)
        let target = try base.instance(forJob: job)
        if target.clock == .wall && !forLoad {
            throw fail(
                "error: \(path): \"clock\": \"wall\" says iapcheck cannot set this backend's clock; a history of years needs it, so only `iapcheck load` takes such a target. Let iapcheck start the backend under libfaketime (\"start\" and \"clock\": \"faketime\") or give it a clock header (docs/http-target.md#the-backends-clock)",
                code: Exit.usage)
        }
        var store: MockAppStore?
        if let settings = target.store {
            store = try startStore(settings, for: target)
            store?.faults = faults
        }
        if store == nil, let problem = faults.problemWithoutStore(target: path) { throw ValidationError(problem) }
        let v = try HTTPValidator.make(
            target: target, name: base.displayName, timeout: timeout, store: store,
            faults: faults)
        v.job = job
        return v
    } catch let e as ValidationError {
        throw e
    } catch let e as ExitCode {
        throw e
    } catch let e as ValidatorFailure {
        // A backend that cannot be reached or started as the target file says is a configuration problem.
        let configuration = e.kind == .unavailable || e.kind == .misconfigured
        throw fail(
            "error: \(e.message)\(e.fix.map { "\n  fix: \($0)" } ?? "")",
            code: configuration ? Exit.usage : Exit.validatorFailure)
    } catch {
        throw fail("error: \(error)", code: Exit.usage)
    }
}

/// `--faults LIST`, or a usage error naming the unknown fault.
func parseFaults(_ text: String?) throws -> FaultProfile {
    guard let text else { return FaultProfile() }
    switch FaultProfile.parse(text) {
    case .success(let f): return f
    case .failure(let e): throw ValidationError(e.message)
    }
}

/// The mock App Store an HTTP target asks for, started once per process on its port; TEST notifications are signed
/// with the harness's PKI and posted to the target's notification route.
func startStore(_ settings: StoreSettings, for target: HTTPValidator.Target?) throws -> MockAppStore {
    let store = try MockAppStore.shared(settings)
    if let target, let route = target.routes["notification"] {
        store.webhook = (target.connectHost, target.port, route.path, target.clockHeader)
    }
    store.testNotificationSigner = { now, catalog in
        ArtifactRenderer(pki: TestPKI.harness, appAppleId: catalog.appAppleId).notification(
            ResponseBodyV2DecodedPayload(
                notificationType: .test, subtype: nil, notificationUUID: UUID().uuidString.lowercased(),
                signedDate: now,
                data: NotificationData(
                    appAppleId: catalog.appAppleId, bundleId: catalog.bundleId, environment: catalog.environment,
                    transactionInfo: nil, renewalInfo: nil, status: nil)))
    }
    return store
}
