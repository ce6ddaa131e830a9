import Foundation
import IAPEncoding
import IAPModel
import PropertyEngine
import Testing

/// The comparison's shortcut for agreeing answers says "no difference" exactly when the full comparison finds none:
/// on random pairs of answers over a few ids, with duplicates, missing entries, extra groups and fields that only
/// count when both sides say active.
@Suite struct AnswerAgreementTests {
    static func answer(_ rng: inout SplitMix64) -> EntitlementAnswer {
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        let ids = ["a", "b", "c"]
        let states: [EntitlementState] = [.active, .grace, .billingRetry, .expired, .revoked]
        let expiries: [Millis?] = [nil, 1, 2]
        let owners: [InAppOwnershipType?] = [nil, .purchased, .familyShared]
        func count() -> Int { Int(rng.next() % 4) }
        return EntitlementAnswer(
            products: (0..<count()).map { _ in
                ProductEntitlement(
                    productId: pick(ids), active: rng.next() % 2 == 0, state: pick(states), expiresDate: pick(expiries),
                    ownership: pick(owners))
            },
            groups: (0..<count()).map { _ in
                GroupEntitlement(
                    groupId: pick(ids), effectiveProductId: pick([nil, "a", "b"]), introEligible: rng.next() % 2 == 0)
            },
            consumables: (0..<count()).map { _ in ConsumableBalance(productId: pick(ids), balance: pick([0, 1, 2])) },
            entitlements: (0..<count()).map { _ in
                EntitlementGrant(
                    entitlementId: pick(ids), active: rng.next() % 2 == 0, state: pick(states),
                    expiresDate: pick(expiries), ownership: pick(owners))
            })
    }

    @Test func theShortcutAgreesWithTheFullComparison() {
        var rng = SplitMix64(seed: 2026)
        var agreeing = 0
        for _ in 0..<20000 {
            let expected = Self.answer(&rng)
            // Half the time a near copy, so that agreeing pairs are common too.
            var observed = rng.next() % 2 == 0 ? expected : Self.answer(&rng)
            if rng.next() % 2 == 0 { observed.products.shuffle(using: &rng) }
            if rng.next() % 3 == 0, !observed.products.isEmpty { observed.products[0].expiresDate = 7 }
            let full = observed.allDifferences(from: expected, ignoring: [])
            #expect(observed.agrees(with: expected) == full.isEmpty, "\(observed) against \(expected): \(full)")
            if full.isEmpty { agreeing += 1 }
        }
        #expect(agreeing > 2000)
    }
}

/// base64url with its SIMD blocks: the same text as Foundation's base64 (alphabet swapped, padding dropped) at every
/// length around the 12-byte and 16-character blocks, every value of every byte, a round trip, and a refusal of a
/// character outside the alphabet at any position of a long token (inside a block or in the tail).
@Suite struct Base64URLBlockTests {
    static func foundation(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func blocksEncodeAndDecodeAsTheScalarCodeDoes() {
        var rng = SplitMix64(seed: 64)
        for n in Array(0..<200) + [4096, 4097, 4098, 19_000] {
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let text = Base64URL.encode(bytes)
            #expect(text == Self.foundation(bytes), "length \(n)")
            #expect(Base64URL.decode(text) == bytes, "length \(n)")
        }
        // Every byte value in every position of a block, and so every character in every position.
        let all = (0..<768).map { UInt8($0 & 0xFF) }
        for shift in 0..<3 {
            let bytes = Array(all.dropFirst(shift))
            #expect(Base64URL.encode(bytes) == Self.foundation(bytes))
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test func aCharacterOutsideTheAlphabetIsRefusedAnywhere() {
        let text = Array(Base64URL.encode((0..<300).map { UInt8($0 & 0xFF) }).utf8)
        for position in 0..<text.count {
            for bad in [UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "."), 0x00, 0x80, 0xFF] {
                var t = text
                t[position] = bad
                let decoded = t.withUnsafeBufferPointer { Base64URL.decode(utf8: $0) }
                #expect(decoded == nil, "\(bad) at \(position)")
            }
        }
    }
}
