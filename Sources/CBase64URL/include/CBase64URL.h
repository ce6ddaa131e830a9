#ifndef CBASE64URL_H
#define CBASE64URL_H

#include <stddef.h>
#include <stdint.h>

/// base64url (RFC 4648 §5) in blocks, with SSSE3 where the processor has it. Each function converts whole blocks
/// from the start of its input and returns how much of the input it consumed; the caller converts the rest (the
/// tail, and on decoding the block holding a character outside the alphabet) with its scalar code. Where SSSE3 is
/// missing, or on other architectures, they consume nothing.

/// Encodes 12-byte blocks of `in` (`count` bytes) into 16 characters each at `out`, while 16 bytes can be read
/// from the block's start. `out` must hold `count / 3 * 4` characters. Returns the bytes consumed (a multiple of 12).
size_t iapcheck_base64url_encode_blocks(const uint8_t *in, size_t count, uint8_t *out);

/// Decodes 16-character blocks of `in` (`count` characters) into 12 bytes each at `out` (`capacity` bytes), while
/// 16 bytes can be written at the block's output, stopping before a block with a character outside the alphabet.
/// Returns the characters consumed (a multiple of 16).
size_t iapcheck_base64url_decode_blocks(const uint8_t *in, size_t count, uint8_t *out, size_t capacity);

#endif
