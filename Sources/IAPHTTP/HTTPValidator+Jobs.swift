import IAPSupport
import IAPValidatorAPI

/// How the jobs of one run share a target (docs/http-target.md#concurrent-jobs).
extension HTTPValidator.Target {
    /// How `--jobs` callers share this backend (docs/http-target.md#concurrent-jobs).
    public enum JobSharing: Equatable, Sendable {
        /// One caller at a time: one backend, one state, reset per case.
        case one
        /// Up to `maxConcurrency` callers, each keeping a state of its own by its `X-IAPCheck-Job` number.
        case tenants(Int)
        /// Any number of callers on the one backend: without a reset route every case's ids are its own, and the
        /// clock header is per request.
        case sharedInstance
        /// One backend per job, each started on a port of its own (`{port}` in the start command), with its own
        /// `{tmp}` folder and, under faketime, its own clock.
        case instances
    }

    public var jobSharing: JobSharing {
        if maxConcurrency > 1 { return .tenants(maxConcurrency) }
        // One mock App Store per process, posting to one webhook: its backend is the only one.
        guard store == nil else { return .one }
        if let start, start.command.contains("{port}") { return .instances }
        if !resets, case .header = clock { return .sharedInstance }
        return .one
    }

    /// The target of job `job`'s own instance: job 0 on the base URL's port, the others on free ports.
    /// The same job number gets the same port for the whole process, so a command that runs several checks (certify:
    /// one per property) reuses each job's instance instead of starting new ones.
    public func instance(forJob job: Int) throws(ValidatorFailure) -> HTTPValidator.Target {
        guard job > 0, jobSharing == .instances else { return self }
        var t = self
        let key = "\(host):\(port) \(job)"
        if let known = Self.instancePorts.withLock({ $0[key] }) {
            t.port = known
        } else {
            t.port = try LoopbackHTTPClient.freePort()
            Self.instancePorts.withLock { $0[key] = t.port }
        }
        return t
    }

    /// Instances started by job number: the base URL and the job, to its port.
    static let instancePorts = Locked<[String: Int]>([:])

    /// The most instances one run starts, and the most callers one shared backend takes.
    public static let maxInstances = 64
}
