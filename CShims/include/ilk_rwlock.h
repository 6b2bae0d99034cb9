/*
 * ilk_rwlock.h — the memory layout of Interlock's ReadWriteLock (its algorithm is described in
 * Sources/Interlock/Locks/ReadWriteLock.swift).
 *
 * The writer side's words (written by writers and by sleepers, read by every reader) sit
 * together at the start; the reader count, which every reader writes, sits 192 bytes further
 * and has the rest of its 128-byte block to itself. An object's stored properties start 16-byte
 * aligned, so 192 bytes keep the two groups in different 128-byte blocks (the adjacent-line
 * prefetcher's unit on x86-64, the line of recent arm64 cores) wherever the object lands: a
 * reader's look at the writer word stays a hit in its own cache while other readers' increments
 * move the reader count's line between cores.
 */
#ifndef ILK_RWLOCK_H
#define ILK_RWLOCK_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t writer;           /* W: 0 free, 1 claimed, 4 writer pending */
    uint32_t writer_sleepers;  /* Sw: writers registered to sleep */
    uint32_t writer_notify;    /* N: writers sleep on it */
    uint32_t reader_sequence;  /* RS: readers sleep on it */
    uint64_t reader_sleepers;  /* Sr: grant epoch << 32 | readers registered to sleep */
    uint32_t fence_mode;       /* 0 asymmetric; 1 symmetric (set at init); 3 degraded (a
                                  sleeper's membarrier failed: symmetric, and sleepers poll) */
    uint32_t attention;        /* A: threads in a sleeper's protocol (bits 0-30) | bit 31 when
                                  fence_mode is not 0: the one word a write unlock looks at */
    uint32_t entered;          /* E: 1 while the claimant holds the lock (no reader inside) */
    uint8_t pad0[192 - 36];
    uint64_t readers;          /* R: readers inside (bits 0-62) | claimant asleep on R (bit 63) */
    uint8_t pad1[128 - 8];
} ilk_rwlock_words;

#define ILK_RWLOCK_READERS_OFFSET 192

_Static_assert(offsetof(ilk_rwlock_words, reader_sleepers) == 16, "ReadWriteLock layout");
_Static_assert(offsetof(ilk_rwlock_words, fence_mode) == 24, "ReadWriteLock layout");
_Static_assert(offsetof(ilk_rwlock_words, attention) == 28, "ReadWriteLock layout");
_Static_assert(offsetof(ilk_rwlock_words, entered) == 32, "ReadWriteLock layout");
_Static_assert(offsetof(ilk_rwlock_words, readers) == ILK_RWLOCK_READERS_OFFSET, "ReadWriteLock layout");

#endif /* ILK_RWLOCK_H */
