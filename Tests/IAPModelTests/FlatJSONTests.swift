import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPSimulator
import IAPTesting
import PropertyEngine
import Testing

/// The hot path's transaction reader never disagrees with JSONDecoder: on every payload it reads, it gives the same
/// value; on everything else (including what JSONDecoder refuses) it gives up and JSONDecoder decides.
@Suite struct FlatJSONTests {
    static func both(_ bytes: [UInt8]) -> (fast: JWSTransactionDecodedPayload?, slow: JWSTransactionDecodedPayload?) {
        let fast = bytes.withUnsafeBufferPointer(JWSTransactionDecodedPayload.init(flatJSON:))
        let slow = try? JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(bytes))
        return (fast, slow)
    }

    /// Every transaction of generated histories, as the renderer encodes it: read the fast way, equal to JSONDecoder.
    @Test func generatedTransactionsReadAsJSONDecoderReadsThem() throws {
        let encoder = JSONFormat.compact()
        var read = 0
        for seed in 0..<80 {
            let (c, _) = Fixtures.generated(seed: UInt64(seed), drawsCatalogs: true)
            for case .deliver(let d) in c.steps {
                var txs: [JWSTransactionDecodedPayload] = []
                switch d.delivery {
                case .appTransaction(let s): txs = [s.transaction]
                case .notification(let n): txs = n.data?.transactionInfo.map { [$0] } ?? []
                case .apiSnapshot(let s): txs = s.transactions
                case .legacyReceipt: break
                }
                for tx in txs {
                    let bytes = [UInt8](try encoder.encode(tx))
                    // The hand-written encoder writes JSONEncoder's bytes exactly.
                    #expect(tx.compactJSON == bytes)
                    let (fast, slow) = Self.both(bytes)
                    #expect(fast != nil)
                    #expect(fast == slow)
                    #expect(fast == tx)
                    read += 1
                }
            }
        }
        #expect(read > 500)
    }

    /// Every renewal info of generated histories: encoded by hand as JSONEncoder encodes it, read back as
    /// JSONDecoder reads it (or left to it, with win-back offer ids).
    @Test func generatedRenewalInfosRoundTrip() throws {
        let encoder = JSONFormat.compact()
        var read = 0
        for seed in 0..<60 {
            let (c, _) = Fixtures.generated(seed: UInt64(seed), property: .idempotentDelivery, drawsCatalogs: true)
            for case .deliver(let d) in c.steps {
                var infos: [JWSRenewalInfoDecodedPayload] = []
                switch d.delivery {
                case .notification(let n): infos = n.data?.renewalInfo.map { [$0] } ?? []
                case .apiSnapshot(let s): infos = s.renewalInfos
                default: break
                }
                for r in infos {
                    let bytes = [UInt8](try encoder.encode(r))
                    #expect(r.compactJSON == bytes)
                    let fast = bytes.withUnsafeBufferPointer(JWSRenewalInfoDecodedPayload.init(flatJSON:))
                    let slow = try JSONDecoder().decode(JWSRenewalInfoDecodedPayload.self, from: Data(bytes))
                    #expect(slow == r)
                    if r.eligibleWinBackOfferIds == nil { #expect(fast == r) } else { #expect(fast == nil) }
                    read += 1
                }
            }
        }
        #expect(read > 200)
        // Win-back offer ids are an array: recognised and left to JSONDecoder, never skipped as unknown.
        let withIds = Array(
            #"{"originalTransactionId":"1","productId":"p","signedDate":1,"environment":"Production","eligibleWinBackOfferIds":["w"]}"#
                .utf8)
        #expect(withIds.withUnsafeBufferPointer(JWSRenewalInfoDecodedPayload.init(flatJSON:)) == nil)
    }

    /// Every notification of generated histories in its wire shape (nested facts as JWS strings): written by hand
    /// as JSONEncoder writes it and read back as JSONDecoder reads it, or left to them (a summary, a token).
    @Test func generatedNotificationEnvelopesRoundTrip() throws {
        let encoder = JSONFormat.compact()
        var read = 0, declined = 0
        for seed in 0..<60 {
            for property in [PropertyName.robustInput, .forgeryRejected, .orderInsensitivity] {
                let (c, _) = Fixtures.generated(seed: UInt64(seed), property: property, drawsCatalogs: true)
                for case .deliver(let d) in c.steps {
                    guard case .notification(let n) = d.delivery else { continue }
                    let wire = ResponseBodyV2SignedPayload(
                        notificationType: n.notificationType, subtype: n.subtype, notificationUUID: n.notificationUUID,
                        version: n.version, signedDate: n.signedDate,
                        data: n.data.map { x in
                            ResponseBodyV2SignedPayload.Data(
                                appAppleId: x.appAppleId, bundleId: x.bundleId, environment: x.environment,
                                signedTransactionInfo: x.transactionInfo.map {
                                    "eyJhbGciOiJFUzI1NiJ9.e30.\($0.transactionId)"
                                },
                                signedRenewalInfo: x.renewalInfo.map { _ in "eyJhbGciOiJFUzI1NiJ9.e30.r" },
                                status: x.status, consumptionRequestReason: x.consumptionRequestReason)
                        }, summary: n.summary, externalPurchaseToken: n.externalPurchaseToken)
                    let bytes = [UInt8](try encoder.encode(wire))
                    let slow = try JSONDecoder().decode(ResponseBodyV2SignedPayload.self, from: Data(bytes))
                    #expect(slow == wire)
                    if let hand = wire.compactJSON {
                        #expect(hand == bytes)
                        let fast = bytes.withUnsafeBufferPointer(ResponseBodyV2SignedPayload.init(flatJSON:))
                        #expect(fast == wire)
                        read += 1
                    } else {
                        #expect(wire.summary != nil || wire.externalPurchaseToken != nil)
                        declined += 1
                    }
                }
            }
        }
        #expect(read > 500)
    }

    /// Values of every kind and strings JSONEncoder escapes: the same bytes, or nil (then JSONEncoder encodes).
    @Test func handWrittenJSONIsJSONEncodersOrNothing() throws {
        var tx = JWSTransactionDecodedPayload(
            transactionId: "1", originalTransactionId: "1", bundleId: "com.example.app", productId: "pro",
            purchaseDate: -5, type: .autoRenewable, signedDate: 0, environment: .sandbox)
        tx.isUpgraded = true
        tx.price = Int64.min
        tx.revocationReason = RevocationReason(rawValue: 7)
        tx.offerType = OfferType(rawValue: -1)
        tx.storefront = "Zürich/日本"
        tx.revocationType = RevocationType(rawValue: "FUTURE")
        tx.appTransactionId = ""
        let encoder = JSONFormat.compact()
        #expect(tx.compactJSON == [UInt8](try encoder.encode(tx)))
        for odd in ["a\"b", "back\\slash", "tab\t", "nl\n", "\u{1}"] {
            var y = tx
            y.offerIdentifier = odd
            #expect(y.compactJSON == nil)
        }
    }

    /// The writer's escape check goes by blocks too: a character JSONEncoder escapes (a quote, a backslash, a control
    /// character) anywhere in a string of any length up to 80 makes the hand-written JSON decline, and anything else
    /// (the edges of printable ASCII, DEL, multi-byte characters) is written as JSONEncoder writes it.
    @Test func escapeCheckFindsEveryEscapeAtEveryPosition() throws {
        let encoder = JSONFormat.compact()
        var tx = JWSTransactionDecodedPayload(
            transactionId: "1", originalTransactionId: "1", bundleId: "b", productId: "p", purchaseDate: 0,
            type: .nonConsumable, signedDate: 0, environment: .production)
        for length in 1...80 {
            for p in 0..<length {
                for c in ["\"", "\\", "\u{0}", "\u{1F}", "\n", " ", "~", "\u{7F}", "é", "日"] {
                    var chars = [String](repeating: "a", count: length)
                    chars[p] = c
                    tx.offerIdentifier = chars.joined()
                    let escaped = ["\"", "\\", "\u{0}", "\u{1F}", "\n"].contains(c)
                    if escaped {
                        #expect(tx.compactJSON == nil, "\(c.unicodeScalars.first!.value) at \(p) of \(length)")
                    } else {
                        #expect(tx.compactJSON == [UInt8](try encoder.encode(tx)), "\(c) at \(p) of \(length)")
                    }
                }
            }
        }
    }

    /// Edits of a payload: wrong types, nulls, repeats, escapes, numbers in every form, unknown nested fields,
    /// truncations and random bytes. Whatever the fast reader accepts, JSONDecoder accepts with the same value.
    @Test func editedPayloadsNeverDisagree() throws {
        let base = #"""
            {"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","webOrderLineItemId":"2000000000000002","bundleId":"com.example.iapcheck","productId":"pro.monthly","subscriptionGroupIdentifier":"21000001","purchaseDate":1772323260000,"originalPurchaseDate":1772323260000,"expiresDate":1774915260000,"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":1772323260000,"environment":"Production","transactionReason":"PURCHASE","isUpgraded":false,"offerType":1,"price":4990}
            """#
        let edits: [(String, String)] = [
            (#""quantity":1"#, #""quantity":1.0"#), (#""quantity":1"#, #""quantity":1e0"#),
            (#""quantity":1"#, #""quantity":"1""#), (#""quantity":1"#, #""quantity":null"#),
            (#""quantity":1"#, #""quantity":01"#), (#""quantity":1"#, #""quantity":-0"#),
            (#""quantity":1"#, #""quantity":99999999999999999999"#), (#""price":4990"#, #""price":-4990"#),
            (#""isUpgraded":false"#, #""isUpgraded":null"#), (#""isUpgraded":false"#, #""isUpgraded":"false""#),
            (#""isUpgraded":false"#, #""isUpgraded":0"#), (#""bundleId""#, #""bundle\u0049d""#),
            (#""pro.monthly""#, #""pro.\u006donthly""#), (#""pro.monthly""#, "\"pro.m\u{00F6}nthly\""),
            (#""signedDate":1772323260000"#, #""signedDate":null"#), (#""signedDate":1772323260000,"#, ""),
            (#""offerType":1"#, #""offerType":1,"offerType":2"#),
            (#""price":4990"#, #""price":4990,"x":{"a":[1,2.5e3,{"b":null}]}"#),
            (#""price":4990"#, #""price":4990,"x":[1,]"#), (#""price":4990"#, #""price":4990,"x":1."#),
            (#""price":4990"#, #""price":4990,"transactionId":"dup""#), ("{", " \n{ "), ("}", "} x"),
            (#""environment":"Production""#, #""environment":"Xcode""#), (#""type":"#, #""type" :"#),
        ]
        var accepted = 0
        for (a, b) in edits {
            let text = base.replacingOccurrences(of: a, with: b)
            let (fast, slow) = Self.both(Array(text.utf8))
            if let fast {
                accepted += 1
                #expect(fast == slow, "\(b)")
            }
        }
        // The harmless edits (spaces, a negative price, an unknown nested field, Xcode) read fast.
        #expect(accepted >= 4)
        // Truncations and random byte flips.
        let bytes = Array(base.utf8)
        for n in stride(from: 0, to: bytes.count, by: 7) {
            let (fast, slow) = Self.both(Array(bytes.prefix(n)))
            if fast != nil { #expect(fast == slow) }
        }
        var rng = SplitMix64(seed: 14)
        for _ in 0..<3000 {
            var b = bytes
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                b[Int(rng.next() % UInt64(b.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            let (fast, slow) = Self.both(b)
            if fast != nil { #expect(fast == slow) }
        }
    }

    /// The string scan goes 32 or 16 bytes at a time (AVX2, SSE2), then byte by byte: a quote, a backslash, a control
    /// byte or a byte of 0x7F and above stops it wherever it sits in a block or in the tail, and the edges of
    /// printable ASCII (0x20, 0x7E) do not. Lengths up to 80 put the byte in the first, second and third block.
    @Test func stringScanFindsEveryStopByteAtEveryPosition() {
        func read(_ string: [UInt8]) -> [(key: String, value: FlatJSON.Value)]? {
            let text = Array(#"{"k":""#.utf8) + string + Array(#""}"#.utf8)
            return text.withUnsafeBufferPointer { FlatJSON.fields($0) }
        }
        for length in 1...80 {
            for p in 0..<length {
                var clean = [UInt8](repeating: 0x61, count: length)
                clean[p] = p % 2 == 0 ? 0x20 : 0x7E
                let fields = read(clean)
                #expect(fields?.first?.value == .string(String(decoding: clean, as: UTF8.self)), "\(length) \(p)")
                for stop: UInt8 in [0x22, 0x5C, 0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xFF] {
                    var bad = clean
                    bad[p] = stop
                    #expect(read(bad) == nil, "byte \(stop) at \(p) of \(length)")
                }
            }
        }
    }

    /// The key table finds every name at its index and nothing else: near misses (a letter changed, a prefix, one
    /// byte more) and names of the same length share slots without being confused.
    @Test func keyTablesFindExactlyTheirNames() {
        let names = JWSTransactionDecodedPayload.FlatField.allCases.map { "\($0)" }
        let keys = FlatJSON.Keys(names)
        func find(_ s: String) -> Int? { Array(s.utf8).withUnsafeBufferPointer { keys.index(of: $0) } }
        for (i, name) in names.enumerated() {
            #expect(find(name) == i)
            #expect(find(String(name.dropLast())) == nil)
            #expect(find(name + "s") == nil)
            #expect(find(name.uppercased()) == nil)
            #expect(find("x" + name.dropFirst()) == nil)
        }
        #expect(find("") == nil)
        // Many names of one length in one table: each still found, by probing past the others.
        let same = (0..<200).map { String(format: "k%03d", $0) }
        let crowded = FlatJSON.Keys(same)
        for (i, name) in same.enumerated() {
            #expect(Array(name.utf8).withUnsafeBufferPointer { crowded.index(of: $0) } == i)
        }
        #expect(Array("k999".utf8).withUnsafeBufferPointer { crowded.index(of: $0) } == nil)
    }
}
