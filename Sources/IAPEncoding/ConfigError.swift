/// Every problem found in one configuration file (catalog, `.storekit`, policy, corpus case), reported at once.
public struct ConfigError: Error, CustomStringConvertible, Sendable {
    public struct Problem: Hashable, Sendable {
        /// JSON path of the offending key, e.g. `subscriptionGroups[0].subscriptions[2].groupNumber`.
        public var key: String
        public var message: String
        public init(key: String, message: String) {
            self.key = key
            self.message = message
        }
    }
    public var file: String
    public var problems: [Problem]

    public init(file: String, problems: [Problem]) {
        self.file = file
        self.problems = problems
    }

    public init(file: String, key: String, _ message: String) {
        self.init(file: file, problems: [Problem(key: key, message: message)])
    }

    public var description: String {
        let lines = problems.map { "  \($0.key.isEmpty ? "(top level)" : $0.key): \($0.message)" }
        return "\(file): \(problems.count) problem\(problems.count == 1 ? "" : "s")\n" + lines.joined(separator: "\n")
    }
}
