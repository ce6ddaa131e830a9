import IAPModel

/// What the App Store Server API answers about one customer at a moment: Get Transaction History's pages and Get All
/// Subscription Statuses (docs/mock-app-store.md#a-backend-that-asks-on-its-own).
public struct APIAnswers: Sendable {
    /// The transaction id the pages' `revision`s are named after.
    public var originalTransactionId: String
    public var history: [HistoryResponse]
    public var statuses: StatusResponse?

    public init(originalTransactionId: String, history: [HistoryResponse], statuses: StatusResponse?) {
        (self.originalTransactionId, self.history, self.statuses) = (originalTransactionId, history, statuses)
    }
}

/// Makes the API's answers when a backend asks: given any transaction id, its customer's answers at the moment, or
/// nil when Apple would not know the id (404).
public typealias APIAnswerSource = @Sendable (_ transactionId: String) -> APIAnswers?
