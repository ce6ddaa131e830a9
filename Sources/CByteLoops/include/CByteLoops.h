#ifndef CBYTELOOPS_H
#define CBYTELOOPS_H

#include <stddef.h>
#include <stdint.h>

/// Byte loops of the hot paths in SIMD, for x86-64; elsewhere each consumes nothing and the Swift caller's scalar
/// code does all the work.

/// base64url (RFC 4648 §5) in blocks, two at a time with AVX2 and one at a time with SSSE3 where the processor has
/// them (chosen at run time). Each function converts whole blocks from the start of its input and returns how much of
/// the input it consumed; the caller converts the rest (the tail, and on decoding the block holding a character
/// outside the alphabet) with its scalar code. Where SSSE3 is missing they consume nothing.

/// Encodes 12-byte blocks of `in` (`count` bytes) into 16 characters each at `out`, while 16 bytes can be read
/// from the block's start. `out` must hold `count / 3 * 4` characters. Returns the bytes consumed (a multiple of 12).
size_t iapcheck_base64url_encode_blocks(const uint8_t *in, size_t count, uint8_t *out);

/// Decodes 16-character blocks of `in` (`count` characters) into 12 bytes each at `out` (`capacity` bytes), while
/// 16 bytes can be written at the block's output, stopping before a block with a character outside the alphabet.
/// Returns the characters consumed (a multiple of 16).
size_t iapcheck_base64url_decode_blocks(const uint8_t *in, size_t count, uint8_t *out, size_t capacity);

/// JSON strings, 32 bytes at a time with AVX2 where the processor has it, else 16 with SSE2 (part of x86-64): the
/// length of the prefix of `in` (`count` bytes) in which no byte is a quote, a backslash or below 0x20 — nor, unless
/// `allow_non_ascii`, 0x7F or above — counted in whole blocks up to the block holding the first such byte, where it
/// stops at that byte. The caller checks the rest with its scalar code (everything, on other architectures, where
/// this returns 0).
size_t iapcheck_json_plain_prefix(const uint8_t *in, size_t count, int allow_non_ascii);

#endif
