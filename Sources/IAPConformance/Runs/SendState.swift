import Foundation
import IAPEncoding
import IAPModel
import IAPSimulator

/// What `iapcheck send` keeps between invocations (docs/send.md#a-customers-history): for one validator, each
/// customer's script, ids and what the validator has had, like a payment platform's test clocks. A new state file
/// is a new start: its first send resets a backend that has a reset route.
public struct SendState: Codable, Sendable {
    public struct Customer: Codable, Sendable {
        public var script: CustomerScript
        /// The customer's ids (``IDNamespace``): kept, so the backend meets the same customer at every send.
        public var namespace: Int64
        /// Keys of the deliveries the validator has had (``SendRun/key(_:)``).
        public var delivered: [String]

        public init(script: CustomerScript, namespace: Int64, delivered: [String] = []) {
            self.script = script
            self.namespace = namespace
            self.delivered = delivered
        }
    }

    public var version = 1
    /// The validator the customers live in (a state belongs to one backend).
    public var validator: String
    public var catalog: Catalog
    public var policy: Policy
    /// Whether a send has reset the backend (its reset route) for this state.
    public var backendReset = false
    public var customers: [String: Customer] = [:]

    public init(validator: String, catalog: Catalog, policy: Policy) {
        self.validator = validator
        self.catalog = catalog
        self.policy = policy
    }

    /// The state in `path`, nil when there is none; an unreadable file is an error naming it.
    public static func load(path: String) throws(ConfigError) -> SendState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try StrictJSON.readFile(path, maxBytes: StrictJSON.ownOutput)
        do {
            let s = try JSONDecoder().decode(SendState.self, from: data)
            guard s.version == 1 else {
                throw ConfigError(file: path, key: "version", "version \(s.version) is not one this iapcheck reads")
            }
            return s
        } catch let e as ConfigError {
            throw e
        } catch {
            throw ConfigError(
                file: path, key: "", "not a send state (\(error)); remove it or start over with --reset")
        }
    }

    /// Written whole to a new file, then moved over the old one: a crash leaves the old state or the new.
    public func save(path: String) throws {
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let tmp = path + ".tmp"
        try encoder.encode(self).write(to: URL(fileURLWithPath: tmp))
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
        try FileManager.default.moveItem(atPath: tmp, toPath: path)
    }
}
