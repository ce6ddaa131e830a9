import IAPEncoding

extension JWSTransactionDecodedPayload {
    /// The payload read by ``FlatJSON``, or nil when it is outside that reader's shape or not a well-typed
    /// transaction: then `JSONDecoder` decides (with the same result on every payload this accepts).
    public init?(flatJSON bytes: UnsafeBufferPointer<UInt8>) {
        var x = JWSTransactionDecodedPayload(
            transactionId: "", originalTransactionId: "", bundleId: "", productId: "", purchaseDate: 0, quantity: nil,
            type: .consumable, signedDate: 0, environment: .production)
        let read = FlatJSON.read(bytes, Self.flat) { index, text, number, flag in
            switch FlatField(rawValue: index)! {
            case .transactionId: x.transactionId = text!
            case .originalTransactionId: x.originalTransactionId = text!
            case .bundleId: x.bundleId = text!
            case .productId: x.productId = text!
            case .purchaseDate: x.purchaseDate = number!
            case .signedDate: x.signedDate = number!
            case .type: x.type = ProductType(rawValue: text!)
            case .inAppOwnershipType: x.inAppOwnershipType = InAppOwnershipType(rawValue: text!)
            case .environment: x.environment = Environment(rawValue: text!)
            case .webOrderLineItemId: x.webOrderLineItemId = text
            case .subscriptionGroupIdentifier: x.subscriptionGroupIdentifier = text
            case .originalPurchaseDate: x.originalPurchaseDate = number
            case .expiresDate: x.expiresDate = number
            case .quantity: x.quantity = number.map { Int($0) }
            case .appAccountToken: x.appAccountToken = text
            case .revocationReason: x.revocationReason = number.map { RevocationReason(rawValue: Int($0)) }
            case .revocationDate: x.revocationDate = number
            case .revocationType: x.revocationType = text.map(RevocationType.init(rawValue:))
            case .revocationPercentage: x.revocationPercentage = number.map { Int($0) }
            case .offerType: x.offerType = number.map { OfferType(rawValue: Int($0)) }
            case .offerIdentifier: x.offerIdentifier = text
            case .offerDiscountType: x.offerDiscountType = text.map(OfferDiscountType.init(rawValue:))
            case .offerPeriod: x.offerPeriod = text
            case .storefront: x.storefront = text
            case .storefrontId: x.storefrontId = text
            case .transactionReason: x.transactionReason = text.map(TransactionReason.init(rawValue:))
            case .currency: x.currency = text
            case .price: x.price = number
            case .appTransactionId: x.appTransactionId = text
            case .isUpgraded: x.isUpgraded = flag
            }
            return true
        }
        guard read else { return nil }
        self = x
    }

    /// The fields FlatJSON reads, named as in the JSON, in the order of ``flat``.
    package enum FlatField: Int, CaseIterable {
        case transactionId, originalTransactionId, webOrderLineItemId, bundleId, productId
        case subscriptionGroupIdentifier, purchaseDate, originalPurchaseDate, expiresDate, quantity, type
        case appAccountToken, inAppOwnershipType, signedDate, revocationReason, revocationDate, revocationType
        case revocationPercentage, isUpgraded, offerType, offerIdentifier, offerDiscountType, offerPeriod
        case environment, storefront, storefrontId, transactionReason, currency, price, appTransactionId
    }

    /// Each field's kind and whether it is required (null is then refused too).
    static let flat = FlatJSON.Table(
        FlatField.allCases.map { f -> (String, FlatJSON.Kind) in
            switch f {
            case .purchaseDate, .originalPurchaseDate, .expiresDate, .quantity, .signedDate, .revocationReason,
                .revocationDate, .revocationPercentage, .offerType, .price:
                ("\(f)", .number)
            case .isUpgraded: ("\(f)", .flag)
            default: ("\(f)", .text)
            }
        },
        required: [
            "transactionId", "originalTransactionId", "bundleId", "productId", "purchaseDate", "type",
            "inAppOwnershipType", "signedDate", "environment",
        ])
}

extension JWSTransactionDecodedPayload {
    /// The payload as `JSONFormat.compact()` encodes it (sorted keys, absent optionals left out), written by hand
    /// for the signing hot path; nil when a string would need an escape (then the caller uses JSONEncoder). A test
    /// holds the two byte for byte.
    public var compactJSON: [UInt8]? {
        var w = FlatJSON.Writer()
        func string(_ k: StaticString, _ v: String?) -> Bool { w.string(k, v) }
        func int(_ k: StaticString, _ v: Int64?) { w.int(k, v) }
        guard string("appAccountToken", appAccountToken), string("appTransactionId", appTransactionId),
            string("bundleId", bundleId), string("currency", currency), string("environment", environment.rawValue)
        else { return nil }
        int("expiresDate", expiresDate)
        guard string("inAppOwnershipType", inAppOwnershipType.rawValue) else { return nil }
        w.bool("isUpgraded", isUpgraded)
        guard string("offerDiscountType", offerDiscountType?.rawValue),
            string("offerIdentifier", offerIdentifier), string("offerPeriod", offerPeriod)
        else { return nil }
        int("offerType", offerType.map { Int64($0.rawValue) })
        int("originalPurchaseDate", originalPurchaseDate)
        guard string("originalTransactionId", originalTransactionId) else { return nil }
        int("price", price)
        guard string("productId", productId) else { return nil }
        int("purchaseDate", purchaseDate)
        int("quantity", quantity.map(Int64.init))
        int("revocationDate", revocationDate)
        int("revocationPercentage", revocationPercentage.map(Int64.init))
        int("revocationReason", revocationReason.map { Int64($0.rawValue) })
        guard string("revocationType", revocationType?.rawValue) else { return nil }
        int("signedDate", signedDate)
        guard string("storefront", storefront), string("storefrontId", storefrontId),
            string("subscriptionGroupIdentifier", subscriptionGroupIdentifier),
            string("transactionId", transactionId), string("transactionReason", transactionReason?.rawValue),
            string("type", type.rawValue), string("webOrderLineItemId", webOrderLineItemId)
        else { return nil }
        return w.finish()
    }
}

extension JWSTransactionDecodedPayload: FlatJSONCodable {}
