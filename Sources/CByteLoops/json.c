#include "CByteLoops.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* Read from what the runtime's constructor filled in: no cache of our own, so no race between threads. */
static int has_avx2(void) { return __builtin_cpu_supports("avx2"); }

/* 32 bytes a step. Signed compares: bytes from 0x80 up are negative, so "below 0x20" takes them too, unless they
   are let through (then only 0x00–0x1F, the non-negative ones below 0x20, stop the scan). */
__attribute__((target("avx2"))) static size_t prefix_avx2(const uint8_t *in, size_t count, int allow_non_ascii) {
    const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
    const __m256i space = _mm256_set1_epi8(0x20), del = _mm256_set1_epi8(0x7F), minus1 = _mm256_set1_epi8(-1);
    size_t i = 0;
    while (i + 32 <= count) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i stop = _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash));
        __m256i below = _mm256_cmpgt_epi8(space, v);
        if (allow_non_ascii) {
            stop = _mm256_or_si256(stop, _mm256_and_si256(below, _mm256_cmpgt_epi8(v, minus1)));
        } else {
            stop = _mm256_or_si256(stop, _mm256_or_si256(below, _mm256_cmpeq_epi8(v, del)));
        }
        unsigned mask = (unsigned)_mm256_movemask_epi8(stop);
        if (mask != 0) return i + (size_t)__builtin_ctz(mask);
        i += 32;
    }
    return i;
}

/* SSE2 is part of x86-64, so no run-time check: 16 bytes a step, a byte mask of the ones that stop the scan, and the
   first set bit is the answer. */
static size_t prefix_sse2(const uint8_t *in, size_t count, int allow_non_ascii) {
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7F), minus1 = _mm_set1_epi8(-1);
    size_t i = 0;
    while (i + 16 <= count) {
        __m128i v = _mm_loadu_si128((const __m128i *)(in + i));
        __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
        __m128i below = _mm_cmplt_epi8(v, space);
        if (allow_non_ascii) {
            stop = _mm_or_si128(stop, _mm_and_si128(below, _mm_cmpgt_epi8(v, minus1)));
        } else {
            stop = _mm_or_si128(stop, _mm_or_si128(below, _mm_cmpeq_epi8(v, del)));
        }
        unsigned mask = (unsigned)_mm_movemask_epi8(stop);
        if (mask != 0) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
    return i;
}

size_t iapcheck_json_plain_prefix(const uint8_t *in, size_t count, int allow_non_ascii) {
    size_t i = 0;
    if (count >= 32 && has_avx2()) {
        i = prefix_avx2(in, count, allow_non_ascii);
        /* Stopped at a byte before the last whole block: that is the answer (otherwise SSE2 goes on from i, and
           returns 0 at once if i is that byte). */
        if (i + 32 <= count) return i;
    }
    return i + prefix_sse2(in + i, count - i, allow_non_ascii);
}

#else

size_t iapcheck_json_plain_prefix(const uint8_t *in, size_t count, int allow_non_ascii) {
    (void)in; (void)count; (void)allow_non_ascii;
    return 0;
}

#endif
