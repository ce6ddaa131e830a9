import IAPModel

extension Oracle {
    /// A user's transactions as ``answer(_:user:at:reading:)`` reads them, whatever the instant: made once per
    /// version of the facts (``Knowledge/prepared(_:)``).
    struct Prepared: Sendable {
        /// Every transaction of the user, each purchase's newest facts under every id of it (``samePurchase(_:)``).
        var all: [JWSTransactionDecodedPayload]
        /// The user's chains by `originalTransactionId`, each with every known transaction (also those purchased
        /// after the instant asked about: an upgrade known to happen later is what bounds an upgraded
        /// transaction's grant), sorted by purchase.
        var chains: [Chain]

        /// A chain's transactions and what ``answer(_:user:at:reading:)`` asks of them again and again, read out
        /// once: the purchase instants (ascending, as the transactions are sorted), the kinds, and the instants of
        /// the transactions that can end an earlier period (a `PURCHASE`, and those that give no reason).
        struct Chain: Sendable {
            var id: String
            var transactions: [JWSTransactionDecodedPayload]
            var purchased: [Millis]
            var kinds: [ProductKind?]
            var purchaseReasonDates: [Millis]
            var noReasonDates: [Millis]

            /// A chain's transactions, in any order: read as one purchase where one is known under several ids
            /// (``Oracle/samePurchase(_:)``, which stays within a chain), and sorted by purchase.
            init(id: String, transactions unsorted: [JWSTransactionDecodedPayload]) {
                self.id = id
                let transactions = Oracle.samePurchase(unsorted).sorted(
                    by: JWSTransactionDecodedPayload.purchasedBefore)
                self.transactions = transactions
                purchased = transactions.map(\.purchaseDate)
                kinds = transactions.map { ProductKind(wireType: $0.type) }
                var purchases: [Millis] = [], unreasoned: [Millis] = []
                for x in transactions {
                    switch x.transactionReason {
                    case .some(.purchase): purchases.append(x.purchaseDate)
                    case nil: unreasoned.append(x.purchaseDate)
                    default: break
                    }
                }
                purchaseReasonDates = purchases
                noReasonDates = unreasoned
            }
        }

        /// The user's prepared chains, sorted by id; a chain without transactions is left out.
        init(chains: [Chain]) {
            self.chains = chains.filter { !$0.transactions.isEmpty }
            all = self.chains.flatMap(\.transactions)
        }
    }
}
