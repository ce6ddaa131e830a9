import IAPModel
import PropertyEngine

/// The deliveries of one case as the planner makes them, in the order made: deliveries arriving at the same instant
/// keep that order.
struct Outbox {
    let channels: Set<DeliveryChannel>
    /// How far the validator's clock is ahead of Apple's (negative: behind).
    let validatorSkew: Millis
    var deliveries: [PlannedDelivery] = []

    /// Adds a delivery arriving at Apple time `at`, unless it travels over a channel the validator does not take.
    mutating func add(_ at: Millis, _ d: Delivery, _ origin: DeliveryOrigin, _ person: Int) {
        guard channels.contains(d.channel) else { return }
        var forgery: ForgeryClass?
        if case .forged(let f) = origin { forgery = f }
        deliveries.append(
            PlannedDelivery(
                arrival: at, now: at + validatorSkew, delivery: d, label: origin, person: person, forgery: forgery))
    }
}

/// The app channel: purchases made in the app are submitted at once; what the app learns later (offer codes,
/// family shares, renewals) is submitted when it next opens, or never. Each function below is one thing that can
/// follow a submission; each draws from the transaction's own choices in a fixed order, so a case replays.
extension DeliveryPlanner {
    /// A transaction as the app submits it: which, when, and the submission.
    struct Submitted {
        let creation: TransactionCreation
        let at: Millis
        let submission: AppTransactionSubmission
        var person: Int { creation.person }
        var inApp: Bool { creation.inApp }
    }

    /// Everything the app channel delivers of one new transaction.
    func planApp(
        _ c: TransactionCreation, _ sim: StoreSimulator, _ src: ChoiceSource, deviceSkew: Millis,
        into out: inout Outbox
    ) {
        guard let at = Self.submitTime(c, sim, src) else { return }
        let sub = AppTransactionSubmission(
            userId: sim.persons[c.person].accountId, transaction: sim.latest(c.transactionId, at: at)!,
            deviceTime: at + deviceSkew)
        out.add(at, .appTransaction(sub), .app, c.person)
        if !channels.contains(.app) && c.inApp {
            // A validator without the app channel hears of an in-app purchase through the app's receipt.
            out.add(at, .legacyReceipt(Self.legacyReceipt(sim, person: c.person, at: at)), .legacyReceipt, c.person)
        }
        let s = Submitted(creation: c, at: at, submission: sub)
        resubmit(s, sim, src, deviceSkew: deviceSkew, into: &out)
        receiptAtOnce(s, sim, src, into: &out)
        forgedSubmission(s, src, into: &out)
        forgedHistory(s, sim, src, into: &out)
        staleReceipt(s, sim, src, into: &out)
        forgedReceipt(s, sim, src, into: &out)
    }

    /// When the app submits a transaction: an in-app purchase within seconds; a renewal now and then, hours later;
    /// the first sight of a chain the app did not buy (a family share, an offer code redeemed in the App Store)
    /// within hours, or days to weeks later (meanwhile the chain belongs to no user, and its notifications must
    /// still be kept), or never.
    static func submitTime(_ c: TransactionCreation, _ sim: StoreSimulator, _ src: ChoiceSource) -> Millis? {
        let h = CivilTime.msPerHour
        let chain = sim.chains[c.chainId]!
        let tx = sim.latest(c.transactionId, at: c.time)!
        if c.inApp { return c.time + Millis(src.int(below: 5)) * CivilTime.msPerSecond + Millis(src.int(below: 1000)) }
        if tx.transactionReason == .renewal && !chain.isMember {
            return src.chance(25) ? c.time + Millis(1 + src.int(below: 48)) * h : nil
        }
        let seenBefore = sim.creations.contains { $0.chainId == c.chainId && $0.time < c.time }
        let later =
            src.chance(50)
            ? Millis(1 + src.int(below: 72)) * h / 4 : Millis(1 + src.int(below: 30)) * CivilTime.msPerDay
        return seenBefore ? nil : (src.chance(90) ? c.time + later : nil)
    }

    /// Perturbation `duplicates`: the app submits the transaction again hours later, as it then stands
    /// (docs/semantics.md#ordering-and-duplicates).
    func resubmit(
        _ s: Submitted, _ sim: StoreSimulator, _ src: ChoiceSource, deviceSkew: Millis, into out: inout Outbox
    ) {
        guard perturbations.duplicates && src.chance(30) else { return }
        let again = s.at + Millis(1 + src.int(below: 24)) * CivilTime.msPerHour
        var sub = s.submission
        sub.transaction = sim.latest(s.creation.transactionId, at: again)!
        sub.deviceTime = again + deviceSkew
        out.add(again, .appTransaction(sub), .appResubmit, s.person)
    }

    /// Perturbation `legacyReceipts`: the app also sends its receipt, right after the purchase
    /// (docs/semantics.md#legacy-verifyreceipt).
    func receiptAtOnce(_ s: Submitted, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox) {
        guard perturbations.legacyReceipts && s.inApp && src.chance(25) else { return }
        let at = s.at + 2
        out.add(at, .legacyReceipt(Self.legacyReceipt(sim, person: s.person, at: at)), .legacyReceipt, s.person)
    }

    /// Perturbation `foreign`: a forged submission of the transaction, one forgery class of the app channel
    /// (docs/verifiers.md#forgery-classes).
    func forgedSubmission(_ s: Submitted, _ src: ChoiceSource, into out: inout Outbox) {
        guard perturbations.foreign && src.chance(30) else { return }
        let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.app) })
        var forged = s.submission
        forged.transaction = forgery.content(s.submission.transaction)
        out.add(s.at + 1, .appTransaction(forged), .forged(forgery), s.person)
    }

    /// Perturbation `foreign`: a forged App Store Server API answer about this chain (history pages and statuses,
    /// every JWS in them forged the same way), as a backend reconciling it would receive from a forger.
    func forgedHistory(_ s: Submitted, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox) {
        guard perturbations.foreign && src.chance(20) else { return }
        let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.api) })
        var snap = sim.history(asking: s.creation.chainId, at: s.at + 3)
        snap.transactions = snap.transactions.map { forgery.content($0) }
        // Renewal info names no app: in another app's answer it would be a genuine, validly signed fact of its own,
        // so that answer carries none.
        snap.renewalInfos = forgery == .wrongBundleId ? [] : snap.renewalInfos.map { forgery.content($0) }
        out.add(s.at + 3, .apiSnapshot(snap), .forged(forgery), s.person)
    }

    /// Perturbation `legacyReceipts`: the app sends the receipt it has again when it next opens, days later:
    /// renewals, refunds and grace since are in Apple's answer (`latest_receipt_info`) but not in the receipt's own
    /// `in_app` (docs/semantics.md#receipt-fields).
    func staleReceipt(_ s: Submitted, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox) {
        guard perturbations.legacyReceipts && s.inApp && src.chance(30) else { return }
        let later = s.at + Millis(1 + src.int(below: 60)) * CivilTime.msPerDay + Millis(src.int(below: 1000))
        var receipt = Self.legacyReceipt(sim, person: s.person, at: later)
        if receipt.hasSubscription {
            receipt.inApp = Self.legacyReceipt(sim, person: s.person, at: s.at).chains
            receipt.receiptCreationDate = s.at
        }
        out.add(later, .legacyReceipt(receipt), .legacyReceipt, s.person)
    }

    /// Perturbation `foreign`: a verifyReceipt answer that must change nothing — another app's receipt presented as
    /// this user's, or an answer about this user's receipt with an error status, no status, cut short or not JSON at
    /// all. Its content is what a forger would want (refunds gone, expiry years away)
    /// (docs/semantics.md#receipt-status-codes).
    func forgedReceipt(_ s: Submitted, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox) {
        guard perturbations.foreign && s.inApp && src.chance(15) else { return }
        let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.legacy) })
        var receipt = Self.legacyReceipt(sim, person: s.person, at: s.at + 4)
        if forgery == .wrongBundleId {
            receipt.bundleId = "com.example.other-app"
        } else {
            receipt.chains = receipt.chains.map {
                APISnapshot(
                    originalTransactionId: $0.originalTransactionId,
                    transactions: $0.transactions.map { ForgeryClass.tempting($0) },
                    renewalInfos: $0.renewalInfos.map(ForgeryClass.tempting))
            }
        }
        out.add(s.at + 4, .legacyReceipt(receipt), .forged(forgery), s.person)
    }
}
