import IAPModel
import IAPValidatorAPI

/// A backend that calls the App Store Server API of its own accord, on a purchase, a notification or a question
/// (docs/mock-app-store.md#a-backend-that-asks-on-its-own): the mock App Store answers it as Apple would at each step.
extension HTTPValidator {
    public var mayAskTheAPI: Bool { store != nil }
    public func serveAPI(_ source: APIAnswerSource?) { store?.serve(source) }
    public func takeServedByAPI() -> [String] { store?.takeServed() ?? [] }

    /// Whether the app route leaves the signed transaction out (it posts the ids, and the backend asks Apple): its
    /// accepting status cannot say it verified a token it never saw, so what it must refuse is judged by its effect.
    var appRouteLeavesTheTokenOut: Bool {
        guard let route = target.routes["appTransaction"], !route.isPlain else { return false }
        return !route.asks(.signedTransaction)
    }
}
