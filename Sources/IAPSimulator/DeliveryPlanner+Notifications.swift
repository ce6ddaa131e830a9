import IAPModel
import PropertyEngine

/// The notification channel. A retried notification is often overtaken: its retry comes after the next notification
/// of its subscription was sent (Apple retries on a schedule of hours and days; the webhook may have been down), so
/// a newer notification arrives before an older one. Each function below is one thing that can happen to a
/// notification; each draws from the notification's own choices in a fixed order, so a case replays.
extension DeliveryPlanner {
    /// For each notification of a subscription, when the next notification of that subscription was signed.
    static func nextOfChain(_ sim: StoreSimulator) -> [Int: Millis] {
        var next: [Int: Millis] = [:]
        var lastSeen: [String: Int] = [:]
        for (ni, n) in sim.notifications.enumerated() {
            guard let chain = n.chainId else { continue }
            if let previous = lastSeen[chain] { next[previous] = n.payload.signedDate }
            lastSeen[chain] = ni
        }
        return next
    }

    /// Everything the notification channel (or the API in its stead) delivers of one notification.
    func planNotification(
        _ n: EmittedNotification, next: Millis?, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox
    ) {
        let (first, label) = firstArrival(n, next: next, src)
        deliverOrLose(n, first: first, label: label, sim, src, into: &out)
        if perturbations.duplicates && src.chance(30) {
            // Delivered twice: a retry although the first delivery was acknowledged.
            let later = first + NotificationRetry.offsetsHours[1 + src.int(below: 5)] * CivilTime.msPerHour
            out.add(later, .notification(n.payload), .duplicate, n.person)
        }
        if perturbations.duplicates && src.chance(10), let chain = n.chainId {
            // The backend also reconciles the chain from the API hours later: the same facts again.
            let at = n.payload.signedDate + Millis(1 + src.int(below: 12)) * CivilTime.msPerHour
            let snap = sim.history(asking: Self.askingChain(chain, sim, at: at, src), at: at)
            out.add(at, .apiSnapshot(snap), .apiReconcile(lost: nil), n.person)
        }
        if perturbations.foreign && src.chance(25) { forgedNotification(n, first: first, sim, src, into: &out) }
        if perturbations.unknownValues && src.chance(25) { unusualNotification(n, first: first, src, into: &out) }
    }

    /// When a notification first arrives: within seconds, now and then an hour late; under `retries` at one of
    /// Apple's retry offsets (docs/semantics.md#delivery-and-retries), often the first one after the subscription's
    /// next notification was sent; and in any property, rarely, after a backlog.
    func firstArrival(_ n: EmittedNotification, next: Millis?, _ src: ChoiceSource) -> (Millis, DeliveryOrigin) {
        let h = CivilTime.msPerHour, m = CivilTime.msPerMinute
        let signed = n.payload.signedDate
        var first = signed + (src.chance(8) ? Millis(1 + src.int(below: 66)) * m : Millis(src.int(below: 3000)))
        var label = DeliveryOrigin.notification
        // The first retry after the subscription's next notification was sent, if one comes before Apple gives up:
        // delivered then, this notification is overtaken by a newer one.
        let overtaken = next.flatMap { next in
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
        return (first, label)
    }

    /// The notification itself, or, under `drops`, its loss for good and the API reconciliation that recovers its
    /// facts (a notification about the app has no chain to reconcile: it is just lost). A validator without the
    /// webhook reconciles from the API (when it has that channel) what the notification said
    /// (docs/semantics.md#delivery-and-retries, #app-store-server-api).
    func deliverOrLose(
        _ n: EmittedNotification, first: Millis, label: DeliveryOrigin, _ sim: StoreSimulator, _ src: ChoiceSource,
        into out: inout Outbox
    ) {
        let lost: DeliveryOrigin = .apiReconcile(lost: "\(n.payload.notificationType)")
        if perturbations.drops && src.chance(Self.dropChance(n, sim)) && channels.contains(.api) {
            let at = n.payload.signedDate + Millis(1 + src.int(below: 48)) * CivilTime.msPerHour
            if let chain = n.chainId {
                let snap = sim.history(asking: Self.askingChain(chain, sim, at: at, src), at: at)
                out.add(at, .apiSnapshot(snap), lost, n.person)
            }
        } else if channels.contains(.notification) {
            out.add(first, .notification(n.payload), label, n.person)
        } else if let chain = n.chainId {
            let snap = sim.history(asking: Self.askingChain(chain, sim, at: first, src), at: first)
            out.add(first, .apiSnapshot(snap), lost, n.person)
        }
    }

    /// Perturbation `foreign`: the notification forged by one class of the notification channel that applies in
    /// the app's environment. A replayed `notificationUUID` comes later with other content signed later: it must be
    /// recognised as already seen (a validator that only keeps "the newest signedDate" would take it)
    /// (docs/verifiers.md#forgery-classes, docs/semantics.md#ordering-and-duplicates).
    func forgedNotification(
        _ n: EmittedNotification, first: Millis, _ sim: StoreSimulator, _ src: ChoiceSource, into out: inout Outbox
    ) {
        let env = sim.catalog.environment
        // One forgery in four is a forged nested transaction in a genuine envelope: the one a verifier built on
        // Apple's libraries misses by itself (they verify the envelope, not what it carries), and among two dozen
        // classes drawn alike it came once in a hundred notifications.
        let forgery =
            src.chance(25) && n.payload.data?.transactionInfo != nil
            ? ForgeryClass.forgedNestedTransaction
            : src.pick(ForgeryClass.allCases.filter { $0.channels.contains(.notification) && $0.applies(in: env) })
        // Nil: nothing to forge in this notification's shape.
        guard var forged = Self.forged(n.payload, as: forgery, environment: env) else { return }
        if forgery == .replayedNotificationUUID {
            let minute = CivilTime.msPerMinute
            forged.signedDate += minute
            if let t = forged.data?.transactionInfo?.signedDate {
                forged.data?.transactionInfo?.signedDate = t + minute
            }
            if let r = forged.data?.renewalInfo?.signedDate { forged.data?.renewalInfo?.signedDate = r + minute }
            out.add(first + minute, .notification(forged), .forged(forgery), n.person)
        } else {
            forged.notificationUUID = "f" + forged.notificationUUID.dropFirst()
            out.add(first + 1, .notification(forged), .forged(forgery), n.person)
        }
    }

    /// A notification's content as a forger of `forgery` would send it, or nil when the class has nothing to forge
    /// in its shape. The app a notification names is in `data`, `summary` or `externalPurchaseToken`: the forger
    /// changes whichever it carries.
    static func forged(
        _ payload: ResponseBodyV2DecodedPayload, as forgery: ForgeryClass, environment env: Environment
    ) -> ResponseBodyV2DecodedPayload? {
        var forged = payload
        if var data = forged.data {
            data.transactionInfo = data.transactionInfo.map { forgery.content($0) }
            data.renewalInfo = data.renewalInfo.map { forgery.content($0) }
            forged.data = data
        }
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
            forged.data?.environment = env.counterpart
            forged.summary?.environment = env.counterpart
            if let id = forged.externalPurchaseToken?.externalPurchaseId {
                forged.externalPurchaseToken?.externalPurchaseId =
                    id.hasPrefix("SANDBOX") ? String(id.dropFirst(7)) : "SANDBOX" + id
            }
        case .xcodeEnvironment:
            forged.data?.environment = env.xcodeForgery
            forged.summary?.environment = env.xcodeForgery
            // A token's id can only say Sandbox or Production.
            if forged.externalPurchaseToken != nil { return nil }
        case .forgedNestedTransaction:
            if forged.data?.transactionInfo == nil { return nil }
        default: break
        }
        return forged
    }

    /// Perturbation `unknownValues`: a genuine notification with a type, subtype or enum value this version of the
    /// App Store does not have yet, or a TEST notification, which names the app but carries no transaction (Request
    /// a Test Notification). It must change nothing (docs/semantics.md#q16-newer-enum-values).
    func unusualNotification(_ n: EmittedNotification, first: Millis, _ src: ChoiceSource, into out: inout Outbox) {
        var odd = n.payload
        let how = src.int(below: 4)
        switch how {
        case 0: odd.notificationType = NotificationTypeV2(rawValue: "FAMILY_SHARED_MEMBER_JOINED")
        case 1: odd.subtype = Subtype(rawValue: "SOMETHING_NEW")
        case 2: odd.data?.transactionInfo?.offerDiscountType = OfferDiscountType(rawValue: "FUTURE_MODE")
        default:
            odd.notificationType = .test
            odd.subtype = nil
            odd.data?.transactionInfo = nil
            odd.data?.renewalInfo = nil
            odd.data?.status = nil
        }
        odd.notificationUUID = "e" + odd.notificationUUID.dropFirst()
        let what = ["unknown-type", "unknown-subtype", "unknown-enum-value", "test-notification"][how]
        out.add(first + 2, .notification(odd), .unusual(what), n.person)
    }
}
