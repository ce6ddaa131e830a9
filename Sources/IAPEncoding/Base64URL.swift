import CByteLoops

/// base64url without padding (RFC 7515 §2), hand-written: the string-replacing route through Foundation costs
/// about twice a signature verification (docs/performance-notes.md#targets-for-the-hot-path), and this sits on the verification hot path.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let reverse: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// The two characters of every 12-bit value, first in the low byte: the encoder writes them 16 bits at a time.
    static let pairs: [UInt16] = (0..<4096).map { i in UInt16(alphabet[i >> 6]) | UInt16(alphabet[i & 63]) << 8 }

    /// Contiguous bytes (arrays, `Data`, buffers) go straight to the byte loop; anything else is copied once.
    @inlinable
    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        if let s = bytes.withContiguousStorageIfAvailable({ encode(raw: UnsafeRawBufferPointer($0)) }) { return s }
        return Array(bytes).withUnsafeBytes { encode(raw: $0) }
    }

    /// The encoder proper, into a new string.
    public static func encode(raw bytes: UnsafeRawBufferPointer) -> String {
        let length = encodedLength(bytes.count)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length) { encode(raw: bytes, into: $0) }
    }

    /// The number of characters `count` bytes encode to.
    public static func encodedLength(_ count: Int) -> Int { count / 3 * 4 + [0, 2, 3][count % 3] }

    /// Three bytes to four characters, written into `out` (at least ``encodedLength(_:)`` long); returns how many.
    public static func encode(raw bytes: UnsafeRawBufferPointer, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let n = bytes.count
        let length = encodedLength(n)
        precondition(out.count >= length, "base64url output buffer too small")
        guard length > 0 else { return 0 }
        // Whole blocks with SIMD where the processor has it, the rest below.
        var i = n >= 16 ? iapcheck_base64url_encode_blocks(bytes.baseAddress, n, out.baseAddress) : 0
        var o = i / 3 * 4
        pairs.withUnsafeBufferPointer { two in
            let raw = UnsafeMutableRawPointer(out.baseAddress!)
            while i + 3 <= n {
                let w = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
                raw.storeBytes(of: two[w >> 12].littleEndian, toByteOffset: o, as: UInt16.self)
                raw.storeBytes(of: two[w & 0xFFF].littleEndian, toByteOffset: o + 2, as: UInt16.self)
                i += 3
                o += 4
            }
        }
        alphabet.withUnsafeBufferPointer { abc in
            if n - i == 1 {
                let a = bytes[i]
                out[o] = abc[Int(a >> 2)]
                out[o + 1] = abc[Int((a & 0x03) << 4)]
            } else if n - i == 2 {
                let a = bytes[i], b = bytes[i + 1]
                out[o] = abc[Int(a >> 2)]
                out[o + 1] = abc[Int((a & 0x03) << 4 | b >> 4)]
                out[o + 2] = abc[Int((b & 0x0F) << 2)]
            }
        }
        return length
    }

    /// Decodes base64url without padding; nil on any character outside the alphabet or an impossible length.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var result: [UInt8]?
        var copy = String(text)
        copy.withUTF8 { result = decode(utf8: $0) }
        return result
    }

    /// Four characters to three bytes, written straight into the array's storage; nil on a character outside the
    /// alphabet or a length of 4k+1.
    public static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let n = input.count
        if n % 4 == 1 { return nil }
        let length = n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1)
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: length) { out, written in
            reverse.withUnsafeBufferPointer { rev in
                // 0xFF marks a character outside the alphabet; OR-ed with any sextet it stays above 0x3F.
                var bad: UInt8 = 0
                // Whole blocks with SIMD where the processor has it (stopping before a block with a character
                // outside the alphabet, which the loop below then finds), the rest here.
                var i =
                    n >= 16
                    ? iapcheck_base64url_decode_blocks(input.baseAddress, n, out.baseAddress, length) : 0
                var o = i / 4 * 3
                while i + 4 <= n {
                    let a = rev[Int(input[i])], b = rev[Int(input[i + 1])], c = rev[Int(input[i + 2])],
                        d = rev[Int(input[i + 3])]
                    bad |= a | b | c | d
                    out[o] = a << 2 | b >> 4
                    out[o + 1] = b << 4 | c >> 2
                    out[o + 2] = c << 6 | d
                    i += 4
                    o += 3
                }
                if n - i >= 2 {
                    let a = rev[Int(input[i])], b = rev[Int(input[i + 1])]
                    bad |= a | b
                    out[o] = a << 2 | b >> 4
                    if n - i == 3 {
                        let c = rev[Int(input[i + 2])]
                        bad |= c
                        out[o + 1] = b << 4 | c >> 2
                    }
                }
                valid = bad <= 0x3F
            }
            written = length
        }
        return valid ? out : nil
    }
}
