import Foundation
import IAPModel
import IAPValidatorAPI

/// The mock App Store section of a target file.
public struct StoreSettings: Sendable, Hashable {
    public struct APIKey: Sendable, Hashable {
        public var keyId: String
        public var issuerId: String
        /// A PKCS#8 PEM (`.p8`) file, as App Store Connect hands out; the store checks JWTs with its public key.
        public var privateKeyFile: String
        public init(keyId: String, issuerId: String, privateKeyFile: String) {
            self.keyId = keyId
            self.issuerId = issuerId
            self.privateKeyFile = privateKeyFile
        }
    }
    public var port: Int
    /// The app-specific shared secret `verifyReceipt` requires (21004 otherwise); nil accepts any password.
    public var sharedSecret: String?
    public var apiKey: APIKey?
    public init(port: Int, sharedSecret: String? = nil, apiKey: APIKey? = nil) {
        self.port = port
        self.sharedSecret = sharedSecret
        self.apiKey = apiKey
    }
}

/// What the HTTP transport needs from a mock App Store (`IAPStore.MockAppStore` implements it).
public protocol AppStoreBridge: AnyObject, Sendable {
    /// A new case: the bundle the API tokens must name; notification history starts empty.
    func reset(_ config: ValidatorConfig)
    /// Serve this chain's history pages and statuses from now on; returns what puts back the answers it replaced.
    @discardableResult
    func publish(originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?)
        -> @Sendable () -> Void
    /// Answer what no reconciliation published with what `source` makes, from now on (nil: stop).
    func serve(_ source: APIAnswerSource?)
    /// The signed transactions and renewal infos served from the source since the last call.
    func takeServed() -> [String]
    /// Remember a verifyReceipt answer; returns the `receipt-data` the backend will send for it.
    func registerReceipt(responseBody: String) -> String
    /// Posts a notification to the backend's webhook with `send` (given the clock of each attempt), retrying as Apple
    /// does; returns the answer of the last attempt. Every attempt goes into the notification history.
    func postNotification(
        _ signedPayload: String, now: Millis,
        send: (Millis) throws(ValidatorFailure) -> (Int, Data)
    ) throws(ValidatorFailure) -> (Int, Data)
}

extension AppStoreBridge {
    /// A store nothing asks (a dry run's) has no answers to make.
    public func serve(_ source: APIAnswerSource?) {}
    public func takeServed() -> [String] { [] }
}
