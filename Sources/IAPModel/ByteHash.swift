/// A fast 64-bit hash of a byte range, eight bytes at a time, for caches keyed by kilobytes of bytes (a token's
/// header, a payload's JSON) where SipHash would cost more than the lookup saves. Not for adversarial keys: every
/// user compares the bytes on a hit, so a collision costs a miss, never a wrong answer.
public enum ByteHash {
    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        var i = 0
        while i + 8 <= bytes.count {
            let w = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            h = (h ^ w) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            i += 8
        }
        while i < bytes.count {
            h = (h ^ UInt64(bytes[i])) &* 0x100_0000_01b3
            i += 1
        }
        return h
    }
}
