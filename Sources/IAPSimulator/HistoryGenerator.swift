import IAPModel
import PropertyEngine

/// Generates a random App Store history by driving the ``StoreSimulator`` with choices read from a
/// ``ChoiceSource``. At every step it offers only actions that are valid in the current state, so any choice
/// sequence (including the shrinker's edits) yields a valid history. Choice 0 is always the simplest: one person,
/// no family, the app's own grace setting, the first valid purchase, stop.
public struct HistoryGenerator: Sendable {
    public var catalog: Catalog
    public var policy: Policy
    /// Upper bound on actions per history.
    public var maxActions: Int
    /// Draw a catalog per history (``CatalogGenerator``, with `catalog` as its base and simplest draw) instead of
    /// always using `catalog`.
    public var drawsCatalog: Bool
    /// The most periods one "time passes" action renews and the most one-time purchases one spree makes: the
    /// case's size (``sizeLimit(caseIndex:maxSize:)``), which lets a few customers have years of history.
    public var size: Int

    public init(catalog: Catalog, policy: Policy, maxActions: Int = 12, drawsCatalog: Bool = false, size: Int = 4) {
        self.catalog = catalog
        self.policy = policy
        self.maxActions = maxActions
        self.drawsCatalog = drawsCatalog
        self.size = size
    }

    /// The default largest size: a monthly subscriber of six years.
    public static let defaultMaxSize = 72

    /// The size of case `i` of a run: small cases first (4 at the start, growing by one every four cases), then a
    /// long tail: one case in ten may reach `maxSize`, the others stay at 8 or less, so the median case stays small
    /// and fast while a default run still meets customers with years of renewals. It depends on the case index
    /// only, so a case is the same in any shard or job; the tail cases are picked by a hash of the index, not by
    /// its residue, so they fall on every property of a run (properties take turns by index).
    public static func sizeLimit(caseIndex i: Int, maxSize: Int = defaultMaxSize) -> Int {
        let grown = min(max(maxSize, 1), 4 + max(i, 0) / 4)
        return isLongTail(caseIndex: i) ? grown : min(grown, 8)
    }

    /// About one case index in ten.
    public static func isLongTail(caseIndex i: Int) -> Bool {
        SplitMix64.derive(0x5129_e7a1, UInt64(truncatingIfNeeded: i)) % 10 == 0
    }

    /// 2026-03-01T00:00:00Z
    public static let epoch: Millis = CivilTime.days(fromCivil: 2026, 3, 1) * CivilTime.msPerDay

    /// 2045-01-01T00:00:00Z: no action of a history comes later. Its artifacts are signed by the test PKI, whose
    /// leaves run to 2046 and intermediate to 2048; a history with a long offer (a year's trial, twelve years of
    /// pay-as-you-go) would otherwise sign renewals a correct verifier must refuse, and the oracle call them genuine.
    public static let horizon: Millis = CivilTime.days(fromCivil: 2045, 1, 1) * CivilTime.msPerDay

    enum Category: Int, CaseIterable {
        case purchase, advance, productChange, autoRenew, refund, recover, family, extend, priceIncrease, offer, restore
        case externalPurchase
        /// The developer asks Apple for a `TEST` notification.
        case testNotification
        /// Months or years pass with nothing but renewals (one action, so the shrinker removes them in one step).
        case timePasses
        /// A run of one-time purchases over some days.
        case spree
        var weight: Int {
            switch self {
            case .purchase: 20
            case .advance: 30
            case .productChange: 10
            case .autoRenew: 8
            case .refund: 10
            case .recover: 8
            case .family: 4
            case .extend: 4
            case .priceIncrease: 4
            case .offer: 2
            case .restore: 3
            case .externalPurchase: 1
            case .testNotification: 1
            case .timePasses: 18
            case .spree: 9
            }
        }
    }

    /// Raw choices drawn for each notification and each app-visible transaction, in the span of the action that
    /// made them: the delivery planner reads its decisions (delays, retries, duplicates, …) from them. Keeping them
    /// inside the action's span means that when the shrinker deletes an action, that action's delivery decisions
    /// go with it instead of shifting onto the next notification.
    public static let entropyPerItem = 16

    public func generate(_ src: ChoiceSource) -> GeneratedHistory {
        var cat = drawsCatalog ? CatalogGenerator(base: catalog).draw(src) : catalog
        let count = 1 + src.int(below: 3)
        let family = count >= 2 && src.chance(50)
        let persons = (0..<count).map { Person(index: $0, familyId: family ? 1 : nil) }
        // The app's grace setting: the catalog's when it states one (drawn all the same, so the draws after it stay
        // where they are), else one App Store Connect offers (docs/catalog.md).
        switch (src.int(below: 5), cat.graceChoice) {
        case (_, .declared), (0, _): break
        case (1, .varies): cat.gracePeriod = nil
        case (1, _): cat.gracePeriod = GracePeriodSetting(days: 16, eligibility: .allRenewals)
        case (2, _): cat.gracePeriod = GracePeriodSetting(days: 3, eligibility: .allRenewals)
        case (3, _): cat.gracePeriod = GracePeriodSetting(days: 28, eligibility: .allRenewals)
        default: cat.gracePeriod = GracePeriodSetting(days: 16, eligibility: .paidRenewalsOnly)
        }
        let start = Self.startDay(src) * CivilTime.msPerDay + Millis(src.int(below: 1440)) * CivilTime.msPerMinute
        var sim = StoreSimulator(catalog: cat, policy: policy, persons: persons, start: start)
        let clocks = Self.entropy(src)
        var notificationEntropy: [[UInt64]] = []
        var creationEntropy: [[UInt64]] = []
        var stop = false
        for step in 0..<maxActions where !stop {
            // The "one more action?" choice is inside the action's span, so deleting the span keeps the choices
            // that follow aligned with the actions they belong to.
            src.span("action") {
                let more = src.chance(85)
                if step > 0 && !more {
                    stop = true
                    return
                }
                sim.currentAction = step
                act(&sim, src)
                while notificationEntropy.count < sim.notifications.count {
                    notificationEntropy.append(Self.entropy(src))
                }
                while creationEntropy.count < sim.creations.count { creationEntropy.append(Self.entropy(src)) }
            }
        }
        return GeneratedHistory(
            sim: sim, clockEntropy: clocks, notificationEntropy: notificationEntropy, creationEntropy: creationEntropy)
    }

    static func entropy(_ src: ChoiceSource) -> [UInt64] {
        src.span("entropy") { (0..<entropyPerItem).map { _ in src.draw(below: 1 << 16) } }
    }

    // MARK: One action

    /// One action of the history at the next instant a user acts (or the next boundary, when time passes).
    func act(_ sim: inout StoreSimulator, _ src: ChoiceSource) {
        let boundary = nextBoundary(sim)
        let userTime = userActionTime(sim, boundary: boundary, src: src)
        guard let category = category(sim, src, boundary: boundary, userTime: userTime) else { return }
        switch category {
        case .purchase: purchase(&sim, src, at: userTime!)
        case .advance: advance(&sim, src, boundary: boundary!)
        case .productChange: productChange(&sim, src, at: userTime!)
        case .autoRenew:
            let c = src.pick(activeSubscriptions(sim))
            sim.setAutoRenew(c.id, on: !c.autoRenew, at: userTime!)
        case .refund: refund(&sim, src, at: userTime!)
        case .recover: sim.recover(src.pick(retrying(sim)).id, at: userTime!)
        case .family: familyChange(&sim, src, at: userTime!)
        case .extend: extend(&sim, src, at: userTime!)
        case .externalPurchase:
            sim.unreportedExternalPurchase(person: src.int(below: sim.persons.count), at: userTime!)
        case .testNotification:
            sim.requestTestNotification(at: userTime!)
        case .priceIncrease: priceIncrease(&sim, src, at: userTime!)
        case .offer:
            let c = src.pick(offerable(sim))
            sim.redeemPromotionalOffer(
                c.id, offer: src.pick(sim.catalog.product(c.productId)!.promotionalOffers), at: userTime!)
        case .restore: sim.restore(src.pick(restorable(sim, at: userTime!)).id, at: userTime!)
        case .timePasses: timePasses(&sim, src)
        case .spree: spree(&sim, src, at: userTime!)
        }
    }

    /// The category of the next action, or nil when none is available. The draw maps to a category by fixed
    /// weights, whatever is available now; an unavailable category gives way to the next available one. So the same
    /// draw keeps naming the same action when the shrinker deletes an earlier action and changes what is available
    /// (weights over the available categories only would shift every later choice onto another category).
    func category(_ sim: StoreSimulator, _ src: ChoiceSource, boundary: Boundary?, userTime: Millis?) -> Category? {
        let open = Category.allCases.filter { available($0, sim, boundary: boundary, userTime: userTime) }
        guard !open.isEmpty else { return nil }
        // Years passing and sprees make the long-lived customers of the long-tail cases (size above 8) only: in the
        // others, ordinary advances renew.
        let drawn = Category(
            rawValue: src.weighted(
                Category.allCases.map { size <= 8 && [.timePasses, .spree].contains($0) ? 0 : $0.weight }))!
        // A category that is always available (an external purchase token) must not collect the draws of every
        // unavailable one before it: it never stands in for another.
        if open.contains(drawn) { return drawn }
        return open.first {
            $0.rawValue > drawn.rawValue && ![.externalPurchase, .testNotification, .timePasses, .spree].contains($0)
        } ?? open[0]
    }

    /// An instant at which a purchaser's chain changes by itself, the chain, and how.
    typealias Boundary = (time: Millis, chain: String, kind: BoundaryKind)

    /// The earliest instant at which some purchaser's chain changes by itself (period end, grace end, retry end).
    func nextBoundary(_ sim: StoreSimulator) -> Boundary? {
        var best: (Millis, String, BoundaryKind)?
        func consider(_ t: Millis, _ id: String, _ k: BoundaryKind) {
            if best == nil || t < best!.0 { best = (t, id, k) }
        }
        for id in sim.chainOrder {
            let c = sim.chains[id]!
            guard c.kind == .autoRenewable, !c.isMember else { continue }
            switch c.phase {
            case .active: if let e = c.expires { consider(e, id, .periodEnd) }
            case .retry(_, let g, let r):
                if let g, !c.graceExpiredSent { consider(g, id, .graceEnd) }
                consider(r, id, .retryEnd)
            case .expired, .revoked: break
            }
        }
        return best.map { (time: $0.0, chain: $0.1, kind: $0.2) }
    }

    enum BoundaryKind { case periodEnd, graceEnd, retryEnd }

    static let gapUnits: [Millis] = [
        CivilTime.msPerMinute, CivilTime.msPerHour, CivilTime.msPerDay, 3 * CivilTime.msPerDay, 9 * CivilTime.msPerDay,
    ]

    /// When a customer action would happen: a drawn gap after now, kept before the next boundary.
    func userActionTime(
        _ sim: StoreSimulator, boundary: Boundary?, src: ChoiceSource
    ) -> Millis? {
        // The first action falls on the day the history starts, so a drawn month end or leap day is a purchase's
        // (docs/check.md#the-calendar).
        if sim.now == sim.start { return sim.now + Millis(1 + src.int(below: 60)) * CivilTime.msPerSecond }
        let gap =
            Self.gapUnits[src.int(below: Self.gapUnits.count)] * Millis(1 + src.int(below: 3))
            + Millis(src.int(below: 60)) * CivilTime.msPerSecond
        var t = sim.now + max(gap, 1000)
        // One action in eight moves on to the last day of its month (docs/check.md#the-calendar).
        if src.chance(12) { t = Self.lastDayOfMonth(t) }
        if let b = boundary?.time, t >= b {
            t = sim.now + (b - sim.now) / 2
            if t <= sim.now { return nil }
        }
        return t <= Self.horizon ? t : nil
    }

    func available(
        _ c: Category, _ sim: StoreSimulator, boundary: Boundary?,
        userTime: Millis?
    ) -> Bool {
        if c == .advance { return boundary.map { $0.time <= Self.horizon } ?? false }
        guard let t = userTime else { return false }
        switch c {
        case .purchase: return true
        case .advance: return false
        case .productChange: return !changeable(sim).isEmpty
        case .autoRenew: return !activeSubscriptions(sim).isEmpty
        case .refund: return !refundable(sim).isEmpty || !reversible(sim).isEmpty
        case .recover: return !retrying(sim).isEmpty
        case .family: return !sharing(sim).isEmpty || !leavers(sim).isEmpty
        case .extend: return !extendable(sim, at: t).isEmpty
        case .priceIncrease:
            return activeSubscriptions(sim).contains {
                $0.priceIncrease != .customerConsentedOrWasNotifiedWithoutNeedingConsent
            }
        case .offer: return !offerable(sim).isEmpty
        case .restore: return !restorable(sim, at: t).isEmpty
        case .externalPurchase: return [.production, .sandbox].contains(sim.catalog.environment)
        case .testNotification: return [.production, .sandbox].contains(sim.catalog.environment)
        case .timePasses: return size > 8 && activeSubscriptions(sim).contains { $0.autoRenew }
        case .spree: return size > 8 && sim.catalog.products.contains { $0.kind == .consumable }
        }
    }
}
