import IAPModel

/// Which offer a purchase uses.
public enum PurchaseOffer: Codable, Hashable, Sendable {
    case none
    case introductory
    case promotional(OfferSpec)
    case offerCode(OfferSpec)
    case winBack(OfferSpec)

    var wire: OfferType? {
        switch self {
        case .none: nil
        case .introductory: .introductory
        case .promotional: .promotional
        case .offerCode: .offerCode
        case .winBack: .winBack
        }
    }
}
