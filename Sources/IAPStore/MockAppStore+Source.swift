import IAPModel
import IAPValidatorAPI

/// The API answering a backend that asks of its own accord (docs/mock-app-store.md#a-backend-that-asks-on-its-own):
/// what a reconciliation published comes first; any other id is answered from the source the harness sets at each
/// step, and what was served from it is kept for the harness's oracle to learn.
extension MockAppStore {
    public func serve(_ source: APIAnswerSource?) {
        let published = state.withLock { state in
            state.source = source
            state.sourced = [:]
            state.sourcedTransactions = [:]
            defer { state.publishedWithSource = [] }
            return state.publishedWithSource
        }
        // A reconciliation's answers last for its own step: after it, the source says what Apple knows.
        for replaced in published.reversed() { restore(replaced) }
    }

    public func takeServed() -> [String] {
        state.withLock { state in
            defer { state.served = [] }
            return state.served
        }
    }

    /// The answers for the customer of `id`, and whether they came from the source (made once per step).
    func answers(for id: String) -> (chain: Chain, sourced: Bool)? {
        let (published, made, source) = state.withLock { ($0.chains[id], $0.sourced[id], $0.source) }
        if let published { return (published, false) }
        if let made { return (made, true) }
        // Made outside the lock: the source signs, and the server's other connections go on meanwhile.
        guard let answers = source?(id) else { return nil }
        let (chain, byId) = Self.chain(
            answers.originalTransactionId, history: answers.history, statuses: answers.statuses)
        state.withLock { state in
            state.sourced[id] = chain
            for (tid, jws) in byId {
                state.sourced[tid] = chain
                state.sourcedTransactions[tid] = jws
            }
        }
        return (chain, true)
    }

    /// Get Transaction Info's token for `id`, and whether it came from the source.
    func signedTransaction(_ id: String) -> (jws: String, sourced: Bool)? {
        if let jws = state.withLock({ $0.signedTransactions[id] }) { return (jws, false) }
        guard answers(for: id)?.sourced == true, let jws = state.withLock({ $0.sourcedTransactions[id] }) else {
            return nil
        }
        return (jws, true)
    }

    /// Keeps what a backend was shown from the source: its oracle learns exactly that.
    func noteServed(_ tokens: [String]) {
        state.withLock { $0.served += tokens }
    }
}
