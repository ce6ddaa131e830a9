import IAPEncoding

extension EntitlementAnswer {
    /// What makes this answer malformed as a validator's reply: an id listed twice or holding a control character,
    /// a negative or absurd expiry. Empty for a well-formed answer. Each problem names the field.
    public var problems: [String] {
        var out: [String] = []
        func duplicates(_ ids: [String], _ field: String) {
            var seen: Set<String> = []
            for id in ids where !seen.insert(id).inserted { out.append("\(field): \"\(id)\" is listed more than once") }
        }
        // No App Store id holds a control character; printed, one would forge report lines or clear the screen.
        func controls(_ ids: [String], _ field: String) {
            for id in ids where id.unicodeScalars.contains(where: Terminal.isControl) {
                out.append("\(field): \(id.debugDescription) contains a control character")
            }
        }
        controls(products.map(\.productId), "products[].productId")
        controls(consumables.map(\.productId), "consumables[].productId")
        controls(groups.map(\.groupId), "groups[].groupId")
        controls(groups.compactMap(\.effectiveProductId), "groups[].effectiveProductId")
        controls(entitlements.map(\.entitlementId), "entitlements[].entitlementId")
        duplicates(products.map(\.productId), "products[].productId")
        duplicates(groups.map(\.groupId), "groups[].groupId")
        duplicates(consumables.map(\.productId), "consumables[].productId")
        duplicates(entitlements.map(\.entitlementId), "entitlements[].entitlementId")
        func range(_ e: Millis?, _ field: String) {
            if let e, e < 0 || e > 253_402_300_799_999 {
                out.append("\(field).expiresDate: \(e) is not an instant between 1970 and 9999")
            }
        }
        for p in products { range(p.expiresDate, "products[\(p.productId)]") }
        for g in entitlements { range(g.expiresDate, "entitlements[\(g.entitlementId)]") }
        return out
    }
}
