#include "CByteLoops.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* The processor's features, read from what the runtime's constructor filled in (no cache of our own: a static
   written by the first caller would be a data race between jobs' threads). */
static int has_ssse3(void) { return __builtin_cpu_supports("ssse3"); }
static int has_avx2(void) { return __builtin_cpu_supports("avx2"); }

/* Three bytes per 32-bit lane, as four 6-bit indices, then each index moved to its character by adding an offset
   chosen per range: 0–25 'A'…, 26–51 'a'…, 52–61 '0'…, 62 '-', 63 '_'. */
__attribute__((target("ssse3"))) static size_t encode_ssse3(const uint8_t *in, size_t count, uint8_t *out) {
    const __m128i spread = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m128i offsets = _mm_setr_epi8(
        'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
        '0' - 52, '-' - 62, '_' - 63, 'A', 0, 0);
    size_t i = 0, o = 0;
    while (i + 16 <= count) {
        __m128i v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(in + i)), spread);
        /* Per lane, bytes b1 b0 b2 b1 (little-endian words: w0 = b0b1, w1 = b1b2). */
        __m128i hi = _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0FC0FC00)), _mm_set1_epi32(0x04000040));
        __m128i lo = _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003F03F0)), _mm_set1_epi32(0x01000010));
        __m128i idx = _mm_or_si128(hi, lo);
        /* 0 for 0–51, 1–10 for the digits, 11 and 12 for 62 and 63; then 13 for the capitals. */
        __m128i range = _mm_subs_epu8(idx, _mm_set1_epi8(51));
        __m128i capital = _mm_cmpgt_epi8(_mm_set1_epi8(26), idx);
        range = _mm_or_si128(range, _mm_and_si128(capital, _mm_set1_epi8(13)));
        _mm_storeu_si128((__m128i *)(out + o), _mm_add_epi8(idx, _mm_shuffle_epi8(offsets, range)));
        i += 12;
        o += 16;
    }
    return i;
}

/* 0xFF where lo <= c <= hi. */
__attribute__((target("ssse3"))) static inline __m128i in_range(__m128i c, char lo, char hi) {
    __m128i above = _mm_cmpgt_epi8(c, _mm_set1_epi8((char)(lo - 1)));
    return _mm_and_si128(above, _mm_cmplt_epi8(c, _mm_set1_epi8((char)(hi + 1))));
}

/* Each character's sextet by range, with a mask of the characters in no range; then four sextets packed into three
   bytes per lane and the lanes' bytes moved together. */
__attribute__((target("ssse3"))) static size_t decode_ssse3(
    const uint8_t *in, size_t count, uint8_t *out, size_t capacity) {
    const __m128i pack = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t i = 0, o = 0;
    while (i + 16 <= count && o + 16 <= capacity) {
        __m128i c = _mm_loadu_si128((const __m128i *)(in + i));
        /* Signed compares: bytes from 0x80 up are negative and fall in no range. */
        __m128i upper = in_range(c, 'A', 'Z'), lower = in_range(c, 'a', 'z'), digit = in_range(c, '0', '9');
        __m128i dash = _mm_cmpeq_epi8(c, _mm_set1_epi8('-'));
        __m128i under = _mm_cmpeq_epi8(c, _mm_set1_epi8('_'));
        __m128i known = _mm_or_si128(_mm_or_si128(upper, lower), _mm_or_si128(digit, _mm_or_si128(dash, under)));
        if (_mm_movemask_epi8(known) != 0xFFFF) break;
        __m128i shift = _mm_or_si128(
            _mm_or_si128(_mm_and_si128(upper, _mm_set1_epi8(-65)), _mm_and_si128(lower, _mm_set1_epi8(-71))),
            _mm_or_si128(
                _mm_and_si128(digit, _mm_set1_epi8(4)),
                _mm_or_si128(
                    _mm_and_si128(dash, _mm_set1_epi8(62 - '-')), _mm_and_si128(under, _mm_set1_epi8(63 - '_')))));
        __m128i sextets = _mm_add_epi8(c, shift);
        /* a b c d → (a << 6 | b) and (c << 6 | d) per 16 bits → (ab << 12 | cd) per 32 bits. */
        __m128i pairs = _mm_maddubs_epi16(sextets, _mm_set1_epi32(0x01400140));
        __m128i words = _mm_madd_epi16(pairs, _mm_set1_epi32(0x00011000));
        _mm_storeu_si128((__m128i *)(out + o), _mm_shuffle_epi8(words, pack));
        i += 16;
        o += 12;
    }
    return i;
}

/* The same steps on two blocks at once: AVX2 shuffles and multiplies within each 128-bit lane, so the lanes are
   loaded from two places (12 bytes apart) and each works as the SSSE3 code does. */
__attribute__((target("avx2"))) static size_t encode_avx2(const uint8_t *in, size_t count, uint8_t *out) {
    const __m256i spread = _mm256_setr_epi8(
        1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m256i offsets = _mm256_setr_epi8(
        'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
        '0' - 52, '-' - 62, '_' - 63, 'A', 0, 0, 'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
        '0' - 52, '0' - 52, '0' - 52, '0' - 52, '-' - 62, '_' - 63, 'A', 0, 0);
    size_t i = 0, o = 0;
    while (i + 28 <= count) {
        __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(in + i))),
            _mm_loadu_si128((const __m128i *)(in + i + 12)), 1);
        v = _mm256_shuffle_epi8(v, spread);
        __m256i hi =
            _mm256_mulhi_epu16(_mm256_and_si256(v, _mm256_set1_epi32(0x0FC0FC00)), _mm256_set1_epi32(0x04000040));
        __m256i lo =
            _mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi32(0x003F03F0)), _mm256_set1_epi32(0x01000010));
        __m256i idx = _mm256_or_si256(hi, lo);
        __m256i range = _mm256_subs_epu8(idx, _mm256_set1_epi8(51));
        __m256i capital = _mm256_cmpgt_epi8(_mm256_set1_epi8(26), idx);
        range = _mm256_or_si256(range, _mm256_and_si256(capital, _mm256_set1_epi8(13)));
        _mm256_storeu_si256((__m256i *)(out + o), _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, range)));
        i += 24;
        o += 32;
    }
    return i;
}

/* 0xFF where lo <= c <= hi. */
__attribute__((target("avx2"))) static inline __m256i in_range256(__m256i c, char lo, char hi) {
    __m256i above = _mm256_cmpgt_epi8(c, _mm256_set1_epi8((char)(lo - 1)));
    return _mm256_and_si256(above, _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(hi + 1)), c));
}

/* 32 characters a step: each lane decodes 16 into its low 12 bytes; the lanes are stored 12 bytes apart, the second
   store overwriting the first's 4 spare bytes. */
__attribute__((target("avx2"))) static size_t decode_avx2(
    const uint8_t *in, size_t count, uint8_t *out, size_t capacity) {
    const __m256i pack = _mm256_setr_epi8(
        2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    size_t i = 0, o = 0;
    while (i + 32 <= count && o + 28 <= capacity) {
        __m256i c = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i upper = in_range256(c, 'A', 'Z'), lower = in_range256(c, 'a', 'z'), digit = in_range256(c, '0', '9');
        __m256i dash = _mm256_cmpeq_epi8(c, _mm256_set1_epi8('-'));
        __m256i under = _mm256_cmpeq_epi8(c, _mm256_set1_epi8('_'));
        __m256i known =
            _mm256_or_si256(_mm256_or_si256(upper, lower), _mm256_or_si256(digit, _mm256_or_si256(dash, under)));
        if ((unsigned)_mm256_movemask_epi8(known) != 0xFFFFFFFFu) break;
        __m256i shift = _mm256_or_si256(
            _mm256_or_si256(
                _mm256_and_si256(upper, _mm256_set1_epi8(-65)), _mm256_and_si256(lower, _mm256_set1_epi8(-71))),
            _mm256_or_si256(
                _mm256_and_si256(digit, _mm256_set1_epi8(4)),
                _mm256_or_si256(
                    _mm256_and_si256(dash, _mm256_set1_epi8(62 - '-')),
                    _mm256_and_si256(under, _mm256_set1_epi8(63 - '_')))));
        __m256i sextets = _mm256_add_epi8(c, shift);
        __m256i pairs = _mm256_maddubs_epi16(sextets, _mm256_set1_epi32(0x01400140));
        __m256i words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
        __m256i packed = _mm256_shuffle_epi8(words, pack);
        _mm_storeu_si128((__m128i *)(out + o), _mm256_castsi256_si128(packed));
        _mm_storeu_si128((__m128i *)(out + o + 12), _mm256_extracti128_si256(packed, 1));
        i += 32;
        o += 24;
    }
    return i;
}

/* AVX2 for the bulk, then SSSE3 for a last block or two; each stops where the other takes over. */
size_t iapcheck_base64url_encode_blocks(const uint8_t *in, size_t count, uint8_t *out) {
    size_t i = has_avx2() ? encode_avx2(in, count, out) : 0;
    if (has_ssse3()) i += encode_ssse3(in + i, count - i, out + i / 3 * 4);
    return i;
}

size_t iapcheck_base64url_decode_blocks(const uint8_t *in, size_t count, uint8_t *out, size_t capacity) {
    size_t i = has_avx2() ? decode_avx2(in, count, out, capacity) : 0;
    /* The AVX2 loop stops before a block with a character outside the alphabet, or near the end: SSSE3 goes on
       from there in 16-character blocks (and stops at that block too). */
    if (has_ssse3()) i += decode_ssse3(in + i, count - i, out + i / 4 * 3, capacity - i / 4 * 3);
    return i;
}

#else

size_t iapcheck_base64url_encode_blocks(const uint8_t *in, size_t count, uint8_t *out) {
    (void)in; (void)count; (void)out;
    return 0;
}

size_t iapcheck_base64url_decode_blocks(const uint8_t *in, size_t count, uint8_t *out, size_t capacity) {
    (void)in; (void)count; (void)out; (void)capacity;
    return 0;
}

#endif
