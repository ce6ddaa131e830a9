import IAPModel
import PropertyEngine

/// Turns a simulated history into what a validator sees and is asked: app submissions, notifications (late,
/// duplicated, retried, dropped and reconciled through the API), foreign and unknown artifacts, clock skews, and
/// entitlement questions at and around every boundary of the truth.
public struct DeliveryPlanner: Sendable {
    public var perturbations: Perturbations
    /// At most this many questions per case (boundary questions are kept first).
    public var maxQueries: Int
    /// The channels the validator takes facts from (its declared profile): nothing is sent over another. Facts are
    /// routed through what it has: without the app channel an in-app purchase reaches it as a legacy receipt (when
    /// it takes those); without the API a notification is never lost for good (nothing could recover it); without
    /// notifications the API reconciles what a notification would have said.
    public var channels: Set<DeliveryChannel>

    public init(
        perturbations: Perturbations, maxQueries: Int = 48,
        channels: Set<DeliveryChannel> = Set(DeliveryChannel.allCases)
    ) {
        self.perturbations = perturbations
        self.maxQueries = maxQueries
        self.channels = channels
    }

    public func plan(_ history: GeneratedHistory) -> [CaseStep] {
        let sim = history.sim
        let h = CivilTime.msPerHour, m = CivilTime.msPerMinute, s = CivilTime.msPerSecond
        var validatorSkew: Millis = 0
        var deviceSkew: Millis = 0
        if perturbations.clockSkew {
            let src = ChoiceSource(replaying: history.clockEntropy)
            do {
                validatorSkew = src.pick([0, 1 * s, -1 * s, 30 * s, -30 * s, 5 * m, -5 * m, 1 * h, -1 * h])
                deviceSkew = src.pick([
                    0, -CivilTime.msPerDay, -30 * CivilTime.msPerDay, 2 * h, -365 * CivilTime.msPerDay,
                    400 * CivilTime.msPerDay,
                ])
            }
        }
        var deliveries: [PlannedDelivery] = []
        func add(_ at: Millis, _ d: Delivery, _ origin: DeliveryOrigin, _ person: Int) {
            guard channels.contains(d.channel) else { return }
            var forgery: ForgeryClass?
            if case .forged(let f) = origin { forgery = f }
            deliveries.append(
                PlannedDelivery(
                    arrival: at, now: at + validatorSkew, delivery: d, label: origin, person: person, forgery: forgery))
        }

        // The app channel: purchases made in the app are submitted at once; what the app learns later (offer codes,
        // family shares, renewals) is submitted when it next opens, or never.
        for (ci, c) in sim.creations.enumerated() {
            let src = ChoiceSource(replaying: history.creationEntropy[ci])
            do {
                let chain = sim.chains[c.chainId]!
                let tx = sim.latest(c.transactionId, at: c.time)!
                let submit: Millis?
                if c.inApp {
                    submit = c.time + Millis(src.int(below: 5)) * s + Millis(src.int(below: 1000))
                } else if tx.transactionReason == .renewal && !chain.isMember {
                    submit = src.chance(25) ? c.time + Millis(1 + src.int(below: 48)) * h : nil
                } else {
                    // First sight of a chain the app did not buy (a family share, an offer code redeemed in the App
                    // Store): the person opens the app within hours, or days to weeks later (meanwhile the chain
                    // belongs to no user, and its notifications must still be kept), or never.
                    let seenBefore = sim.creations.contains { $0.chainId == c.chainId && $0.time < c.time }
                    let later =
                        src.chance(50)
                        ? Millis(1 + src.int(below: 72)) * h / 4 : Millis(1 + src.int(below: 30)) * CivilTime.msPerDay
                    submit = seenBefore ? nil : (src.chance(90) ? c.time + later : nil)
                }
                guard let submit else { continue }
                let person = sim.persons[c.person]
                let sub = AppTransactionSubmission(
                    userId: person.accountId, transaction: sim.latest(c.transactionId, at: submit)!,
                    deviceTime: submit + deviceSkew)
                add(submit, .appTransaction(sub), .app, c.person)
                if !channels.contains(.app) && c.inApp {
                    // A validator without the app channel hears of an in-app purchase through the app's receipt.
                    add(
                        submit, .legacyReceipt(Self.legacyReceipt(sim, person: c.person, at: submit)), .legacyReceipt,
                        c.person)
                }
                if perturbations.duplicates && src.chance(30) {
                    let again = submit + Millis(1 + src.int(below: 24)) * h
                    var sub2 = sub
                    sub2.transaction = sim.latest(c.transactionId, at: again)!
                    sub2.deviceTime = again + deviceSkew
                    add(again, .appTransaction(sub2), .appResubmit, c.person)
                }
                if perturbations.legacyReceipts && c.inApp && src.chance(25) {
                    let at = submit + 2
                    add(
                        at, .legacyReceipt(Self.legacyReceipt(sim, person: c.person, at: at)), .legacyReceipt,
                        c.person)
                }
                if perturbations.foreign && src.chance(30) {
                    let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.app) })
                    var forged = sub
                    forged.transaction = forgery.content(sub.transaction)
                    add(submit + 1, .appTransaction(forged), .forged(forgery), c.person)
                }
                if perturbations.foreign && src.chance(20) {
                    // A forged App Store Server API answer about this chain (history pages and statuses, every JWS
                    // in them forged the same way), as a backend reconciling it would receive from a forger.
                    let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.api) })
                    var snap = sim.history(asking: c.chainId, at: submit + 3)
                    snap.transactions = snap.transactions.map { forgery.content($0) }
                    // Renewal info names no app: in another app's answer it would be a genuine, validly signed
                    // fact of its own, so that answer carries none.
                    snap.renewalInfos =
                        forgery == .wrongBundleId ? [] : snap.renewalInfos.map { forgery.content($0) }
                    add(submit + 3, .apiSnapshot(snap), .forged(forgery), c.person)
                }
                if perturbations.legacyReceipts && c.inApp && src.chance(30) {
                    // The app sends the receipt it has again when it next opens, days later: renewals, refunds and
                    // grace since are in Apple's answer (latest_receipt_info) but not in the receipt's own in_app.
                    let later =
                        submit + Millis(1 + src.int(below: 60)) * CivilTime.msPerDay + Millis(src.int(below: 1000))
                    var receipt = Self.legacyReceipt(sim, person: c.person, at: later)
                    if receipt.hasSubscription {
                        receipt.inApp = Self.legacyReceipt(sim, person: c.person, at: submit).chains
                        receipt.receiptCreationDate = submit
                    }
                    add(later, .legacyReceipt(receipt), .legacyReceipt, c.person)
                }
                if perturbations.foreign && c.inApp && src.chance(15) {
                    // A verifyReceipt answer that must change nothing: another app's receipt presented as this
                    // user's, or an answer about this user's receipt with an error status, no status, cut short or
                    // not JSON at all. Its content is what a forger would want (refunds gone, expiry years away).
                    let forgery = src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.legacy) })
                    var receipt = Self.legacyReceipt(sim, person: c.person, at: submit + 4)
                    if forgery == .wrongBundleId {
                        receipt.bundleId = "com.example.other-app"
                    } else {
                        receipt.chains = receipt.chains.map {
                            APISnapshot(
                                originalTransactionId: $0.originalTransactionId,
                                transactions: $0.transactions.map(ForgeryClass.tempting),
                                renewalInfos: $0.renewalInfos.map(ForgeryClass.tempting))
                        }
                    }
                    add(submit + 4, .legacyReceipt(receipt), .forged(forgery), c.person)
                }
            }
        }

        // The notification channel. A retried notification is often overtaken: its retry comes after the next
        // notification of its subscription was sent (Apple retries on a schedule of hours and days; the webhook may
        // have been down), so a newer notification arrives before an older one.
        var nextOfChain: [Int: Millis] = [:]
        var lastSeen: [String: Int] = [:]
        for (ni, n) in sim.notifications.enumerated() {
            guard let chain = n.chainId else { continue }
            if let previous = lastSeen[chain] { nextOfChain[previous] = n.payload.signedDate }
            lastSeen[chain] = ni
        }
        for (ni, n) in sim.notifications.enumerated() {
            let src = ChoiceSource(replaying: history.notificationEntropy[ni])
            do {
                let signed = n.payload.signedDate
                var first = signed + (src.chance(8) ? Millis(1 + src.int(below: 66)) * m : Millis(src.int(below: 3000)))
                var label = DeliveryOrigin.notification
                // The first retry after the subscription's next notification was sent, if one comes before Apple
                // gives up: delivered then, this notification is overtaken by a newer one.
                let overtaken = nextOfChain[ni].flatMap { next in
                    (1..<NotificationRetry.offsetsHours.count).first {
                        signed + NotificationRetry.offsetsHours[$0] * h > next + m
                    }
                }
                if perturbations.retries && src.chance(25) {
                    var k = 1 + src.int(below: 5)
                    if src.chance(50), let j = overtaken { k = j }
                    first += NotificationRetry.offsetsHours[k] * h
                    label = .retry(hours: NotificationRetry.offsetsHours[k])
                } else if src.chance(4), let k = overtaken {
                    // A backlog after the webhook was down (or an App Store outage), in any property: realistic.
                    first = signed + NotificationRetry.offsetsHours[k] * h + Millis(src.int(below: 3000))
                    label = .retry(hours: NotificationRetry.offsetsHours[k])
                }
                if perturbations.drops && src.chance(Self.dropChance(n, sim)) && channels.contains(.api) {
                    // Lost for good; the backend reconciles the chain from the API later (a notification about the
                    // app has no chain to reconcile: it is just lost).
                    let at = signed + Millis(1 + src.int(below: 48)) * h
                    if let chain = n.chainId {
                        let snap = sim.history(asking: Self.askingChain(chain, sim, at: at, src), at: at)
                        add(
                            at, .apiSnapshot(snap), .apiReconcile(lost: "\(n.payload.notificationType)"),
                            n.person)
                    }
                } else if channels.contains(.notification) {
                    add(first, .notification(n.payload), label, n.person)
                } else if let chain = n.chainId {
                    // No webhook: the backend reconciles from the API (when it has that channel) what it said.
                    let snap = sim.history(asking: Self.askingChain(chain, sim, at: first, src), at: first)
                    add(first, .apiSnapshot(snap), .apiReconcile(lost: "\(n.payload.notificationType)"), n.person)
                }
                if perturbations.duplicates && src.chance(30) {
                    let later = first + NotificationRetry.offsetsHours[1 + src.int(below: 5)] * h
                    add(later, .notification(n.payload), .duplicate, n.person)
                }
                if perturbations.duplicates && src.chance(10), let chain = n.chainId {
                    let at = signed + Millis(1 + src.int(below: 12)) * h
                    let snap = sim.history(asking: Self.askingChain(chain, sim, at: at, src), at: at)
                    add(at, .apiSnapshot(snap), .apiReconcile(lost: nil), n.person)
                }
                if perturbations.foreign && src.chance(25) {
                    let forgery = src.pick(
                        ForgeryClass.allCases.filter {
                            $0.channels.contains(.notification) && $0.applies(in: sim.catalog.environment)
                        })
                    var forged = n.payload
                    if var data = forged.data {
                        data.transactionInfo = data.transactionInfo.map { forgery.content($0) }
                        data.renewalInfo = data.renewalInfo.map { forgery.content($0) }
                        forged.data = data
                    }
                    // The app a notification names is in `data`, `summary` or `externalPurchaseToken`: the forger
                    // changes whichever it carries.
                    var applies = true
                    switch forgery {
                    case .wrongAppAppleId:
                        forged.data?.appAppleId = 999_999_999
                        forged.summary?.appAppleId = 999_999_999
                        forged.externalPurchaseToken?.appAppleId = 999_999_999
                    case .wrongBundleId:
                        forged.data?.bundleId = "com.example.other-app"
                        forged.summary?.bundleId = "com.example.other-app"
                        forged.externalPurchaseToken?.bundleId = "com.example.other-app"
                    case .wrongEnvironment:
                        forged.data?.environment = sim.catalog.environment.counterpart
                        forged.summary?.environment = sim.catalog.environment.counterpart
                        if let id = forged.externalPurchaseToken?.externalPurchaseId {
                            forged.externalPurchaseToken?.externalPurchaseId =
                                id.hasPrefix("SANDBOX") ? String(id.dropFirst(7)) : "SANDBOX" + id
                        }
                    case .xcodeEnvironment:
                        forged.data?.environment = sim.catalog.environment.xcodeForgery
                        forged.summary?.environment = sim.catalog.environment.xcodeForgery
                        // a token's id can only say Sandbox or Production
                        applies = forged.externalPurchaseToken == nil
                    case .forgedNestedTransaction: applies = forged.data?.transactionInfo != nil
                    default: break
                    }
                    if !applies {
                        // Nothing to forge in this notification's shape.
                    } else if forgery == .replayedNotificationUUID {
                        // The same UUID again, later, with other content signed later: must be recognised as already
                        // seen (a validator that only keeps "the newest signedDate" would take it).
                        forged.signedDate += CivilTime.msPerMinute
                        if let t = forged.data?.transactionInfo?.signedDate {
                            forged.data?.transactionInfo?.signedDate = t + CivilTime.msPerMinute
                        }
                        if let r = forged.data?.renewalInfo?.signedDate {
                            forged.data?.renewalInfo?.signedDate = r + CivilTime.msPerMinute
                        }
                        add(first + CivilTime.msPerMinute, .notification(forged), .forged(forgery), n.person)
                    } else {
                        forged.notificationUUID = "f" + forged.notificationUUID.dropFirst()
                        add(first + 1, .notification(forged), .forged(forgery), n.person)
                    }
                }
                if perturbations.unknownValues && src.chance(25) {
                    var odd = n.payload
                    let how = src.int(below: 4)
                    switch how {
                    case 0: odd.notificationType = NotificationTypeV2(rawValue: "FAMILY_SHARED_MEMBER_JOINED")
                    case 1: odd.subtype = Subtype(rawValue: "SOMETHING_NEW")
                    case 2: odd.data?.transactionInfo?.offerDiscountType = OfferDiscountType(rawValue: "FUTURE_MODE")
                    default:
                        // A TEST notification names the app but carries no transaction (Request a Test Notification).
                        odd.notificationType = .test
                        odd.subtype = nil
                        odd.data?.transactionInfo = nil
                        odd.data?.renewalInfo = nil
                        odd.data?.status = nil
                    }
                    odd.notificationUUID = "e" + odd.notificationUUID.dropFirst()
                    add(
                        first + 2, .notification(odd),
                        .unusual(["unknown-type", "unknown-subtype", "unknown-enum-value", "test-notification"][how]),
                        n.person)
                }
            }
        }

        let order = deliveries.enumerated().sorted { a, b in
            a.element.arrival != b.element.arrival ? a.element.arrival < b.element.arrival : a.offset < b.offset
        }.map(\.element)
        let queries = planQueries(sim, deliveries: order, validatorSkew: validatorSkew, deviceSkew: deviceSkew)
        var steps: [CaseStep] = []
        var qi = 0
        for d in order {
            while qi < queries.count && queries[qi].appleTime < d.arrival {
                steps.append(.query(queries[qi]))
                qi += 1
            }
            steps.append(.deliver(d))
        }
        while qi < queries.count {
            steps.append(.query(queries[qi]))
            qi += 1
        }
        return steps
    }

    /// The chain whose transaction id a backend reconciling `chain` asks the API with: mostly that chain, but often
    /// another of the customer's (a backend that keeps one transaction id per user; any id finds the whole history,
    /// so the facts about `chain` arrive in an answer asked about another one).
    /// How often a notification is lost for good under the `drops` perturbation: 15 %, and 50 % for one whose news
    /// only a later page of the customer's history carries (a one-time purchase or a refund of a customer with more
    /// than a page of transactions: Apple orders pages by the date each transaction last changed, so the news is on
    /// the last page), so a backend that reads only the first page is caught.
    static func dropChance(_ n: EmittedNotification, _ sim: StoreSimulator) -> Int {
        let decisive: Set<NotificationTypeV2> = [.oneTimeCharge, .refund, .refundReversed, .revoke]
        guard decisive.contains(n.payload.notificationType), let chain = n.chainId else { return 15 }
        return sim.history(asking: chain, at: n.payload.signedDate).transactions.count > 20 ? 50 : 15
    }

    static func askingChain(_ chain: String, _ sim: StoreSimulator, at t: Millis, _ src: ChoiceSource) -> String {
        guard src.chance(35) else { return chain }
        let existing = sim.chains(of: sim.chains[chain]!.person).filter { c in
            c.txIds.first.flatMap { sim.latest($0, at: t) } != nil
        }
        return existing.isEmpty ? chain : src.pick(existing).id
    }

    /// The person's receipt as `verifyReceipt` would describe it at `t`: every chain they hold, in the legacy view,
    /// without consumables (finished ones leave the receipt).
    static func legacyReceipt(_ sim: StoreSimulator, person: Int, at t: Millis) -> LegacyReceiptFacts {
        var chains: [APISnapshot] = []
        for c in sim.chains(of: person) where c.kind != .consumable {
            let snap = sim.snapshot(chain: c.id, at: t)
            guard !snap.transactions.isEmpty else { continue }
            chains.append(
                APISnapshot(
                    originalTransactionId: snap.originalTransactionId,
                    transactions: snap.transactions.map { LegacyReceiptFacts.legacyView($0, requestDate: t) },
                    renewalInfo: snap.renewalInfo.map { LegacyReceiptFacts.legacyView($0, requestDate: t) }))
        }
        return LegacyReceiptFacts(
            userId: sim.persons[person].accountId, bundleId: sim.catalog.bundleId,
            environment: sim.catalog.environment, requestDate: t, chains: chains)
    }

    /// Questions at and around every truth boundary (b − 1 ms, b, b + 1 ms), right after each delivery, and a
    /// final question for everyone once everything has arrived.
    func planQueries(_ sim: StoreSimulator, deliveries: [PlannedDelivery], validatorSkew: Millis, deviceSkew: Millis)
        -> [PlannedQuery]
    {
        var boundary: [(Millis, Int)] = []
        for seg in sim.segments where seg.end < StoreSimulator.forever {
            for t in [seg.start, seg.end - 1, seg.end] { boundary.append((t, seg.person)) }
        }
        for seg in sim.segments where seg.end >= StoreSimulator.forever { boundary.append((seg.start, seg.person)) }
        var after: [(Millis, Int)] = deliveries.map { ($0.arrival, $0.person) }
        var picked = Array(Set(boundary.map { Key(t: $0.0, p: $0.1) })).sorted()
        if picked.count > maxQueries {
            let stride = Double(picked.count) / Double(maxQueries)
            picked = (0..<maxQueries).map { picked[Int(Double($0) * stride)] }
        }
        let room = max(0, maxQueries - picked.count)
        if after.count > room {
            let stride = Double(after.count) / Double(max(room, 1))
            after = room == 0 ? [] : (0..<room).map { after[Int(Double($0) * stride)] }
        }
        var keys = Set(picked)
        for (t, p) in after { keys.insert(Key(t: t, p: p)) }
        let end = (deliveries.map(\.arrival).max() ?? sim.now) + CivilTime.msPerMinute
        for p in sim.persons { keys.insert(Key(t: max(end, sim.now + 1), p: p.index)) }
        return keys.sorted().map { k in
            PlannedQuery(
                appleTime: k.t,
                query: EntitlementQuery(
                    userId: sim.persons[k.p].accountId, at: k.t + validatorSkew, deviceTime: k.t + deviceSkew),
                person: k.p)
        }
    }

    struct Key: Hashable, Comparable {
        var t: Millis
        var p: Int
        static func < (a: Key, b: Key) -> Bool { a.t != b.t ? a.t < b.t : a.p < b.p }
    }
}

extension HistoryGenerator {
    /// A generated history and its planned deliveries and questions: the start of every case and every load pool.
    public func planned(
        _ src: ChoiceSource, perturbations: Perturbations,
        channels: Set<DeliveryChannel> = Set(DeliveryChannel.allCases)
    ) -> (GeneratedHistory, [CaseStep]) {
        let history = generate(src)
        return (history, DeliveryPlanner(perturbations: perturbations, channels: channels).plan(history))
    }
}
