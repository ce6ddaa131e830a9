import Foundation
import IAPEncoding
import IAPModel

/// Consumable balances in a target's answer mapping (docs/http-target.md#consumable-balances): a backend's credits,
/// compared in purchased units with the oracle's balance after purchases, refunds and clawback.
extension AnswerMapping {
    /// Consumable balances (`consumables`): where each product's balance is, and how many of the backend's units one
    /// unit of a purchase's `quantity` is worth (`unitsPerPurchase`: a pack of 100 credits is 100).
    public struct Balances: Sendable {
        public var each: String
        public var eachKeyPath: String
        /// nil: the member name (`@key`).
        public var key: Field?
        public var balance: Field
        public var unitsPerPurchase: Int = 1
    }

    /// Reads `answer.consumables`; every problem is recorded on the reader with its key.
    static func parseConsumables(
        _ o: StrictJSON.Object, pointer: (String, String) -> String?,
        field: (StrictJSON.Object, String, Bool) -> Field?
    ) -> Balances? {
        guard let c = o.object("consumables", required: false) else { return nil }
        let each = c.string("each")
        var key: Field?
        let keyText = c.string("key", required: false) ?? "@key"
        if keyText != "@key", let p = pointer(keyText, c.keyPath("key")) {
            key = Field(pointer: p, format: nil, keyPath: c.keyPath("key"))
        }
        let balance = field(c, "balance", false)
        if !c.has("balance") { c.problem(c.keyPath("balance"), "required: where each entry's balance is") }
        let units = c.int("unitsPerPurchase", required: false, range: 1...1_000_000_000) ?? 1
        c.rejectUnknownKeys()
        if let each, let e = pointer(each, c.keyPath("each")), let balance {
            return Balances(
                each: e, eachKeyPath: c.keyPath("each"), key: key, balance: balance, unitsPerPurchase: Int(units))
        }
        return nil
    }

    /// The mapped consumable balances, in purchased units: the backend's balance over ``Balances/unitsPerPurchase``.
    /// A balance that is no whole number of them cannot be any purchase history's: a wrong answer, said as such.
    func balances(root: Any, body: Data) throws(Mismatch) -> [ConsumableBalance] {
        guard let c = consumables else { return [] }
        func fail(_ keyPath: String, _ why: String) -> Mismatch {
            Mismatch(
                message: "\(file): \(keyPath): \(why) (response: \(AnswerMapping.quoted(body, first: 300)))",
                fix: "point \(keyPath) in \(file) at where the response above has it (a JSON Pointer)")
        }
        guard let container = Self.resolve(c.each, in: root) else {
            throw fail(c.eachKeyPath, "\"\(c.each)\" finds nothing in the response")
        }
        var items: [(String?, Any)] = []
        if let a = container as? [Any] {
            items = a.map { (nil, $0) }
        } else if let d = container as? [String: Any] {
            items = d.keys.sorted().map { ($0, d[$0]!) }
        } else if !(container is NSNull) {
            throw fail(c.eachKeyPath, "\"\(c.each)\" is not an array or an object")
        }
        var out: [ConsumableBalance] = []
        for (name, item) in items {
            var id = name
            if let k = c.key {
                let v = Self.resolve(k.pointer, in: item)
                id = v as? String ?? (v as? NSNumber).map { "\($0)" }
                if id == nil { throw fail(k.keyPath, "\"\(k.pointer)\" finds no string in an entry") }
            }
            guard let id else {
                throw fail(c.eachKeyPath, "\"\(c.each)\" is an array: name each entry's product with \"key\"")
            }
            let v = Self.resolve(c.balance.pointer, in: item)
            guard let n = v as? NSNumber, !StrictJSON.isBool(n) else {
                throw fail(c.balance.keyPath, "\(Self.show(v)) in entry \"\(id)\" is not a whole number")
            }
            // A number, but a fraction or beyond any count of purchases: what the backend wrote, not the file.
            guard n.doubleValue.rounded() == n.doubleValue, abs(n.doubleValue) < 1e15 else {
                var m = Mismatch(message: "consumable \(id): a balance of \(Self.show(v)) is no whole number of units")
                m.isWrongAnswer = true
                throw m
            }
            let amount = Int(n.doubleValue)
            guard amount % c.unitsPerPurchase == 0 else {
                var m = Mismatch(
                    message:
                        "consumable \(id): a balance of \(amount) is not a whole number of purchases of \(c.unitsPerPurchase) (unitsPerPurchase): no history of purchases and refunds gives it"
                )
                m.isWrongAnswer = true
                throw m
            }
            out.append(ConsumableBalance(productId: id, balance: amount / c.unitsPerPurchase))
        }
        return out
    }
}
