/*
 * ilk_bits.h — atomic test-and-set / test-and-clear of one bit in raw memory, with OSAtomic's
 * bit numbering: bit n is the mask (0x80 >> (n & 7)) of the byte at address + (n >> 3).
 * Bit 0 is therefore the MOST significant bit of the first byte; on a zeroed little-endian
 * int32_t, setting bit 0 gives 128, bit 7 gives 1 and bit 15 gives 256.
 *
 * The operation is a single byte-wide fetch-or / fetch-and, so it never touches the
 * neighbouring bytes and needs no alignment. Both return the bit's previous value.
 */
#ifndef ILK_BITS_H
#define ILK_BITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ilk_atomic.h"

ILK_INLINE bool ilk_atomic_test_and_set_bit(size_t n, void *address, int order) {
    uint8_t *byte = (uint8_t *)address + (n >> 3);
    uint8_t mask = (uint8_t)(0x80u >> (n & 7u));
    return (__atomic_fetch_or(byte, mask, order) & mask) != 0;
}

ILK_INLINE bool ilk_atomic_test_and_clear_bit(size_t n, void *address, int order) {
    uint8_t *byte = (uint8_t *)address + (n >> 3);
    uint8_t mask = (uint8_t)(0x80u >> (n & 7u));
    return (__atomic_fetch_and(byte, (uint8_t)~mask, order) & mask) != 0;
}

#endif /* ILK_BITS_H */
