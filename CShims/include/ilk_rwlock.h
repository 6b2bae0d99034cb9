/*
 * ilk_rwlock.h — the memory layout of Interlock's ReadWriteLock, and its reader's decrement
 * (ilk_rwlock_reader_leave_*, below); its algorithm is described in
 * Sources/Interlock/Locks/ReadWriteLock.swift.
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ilk_flag_asm.h"

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

/* The design's one constraint on the layout (Swift reaches every field through its offset in
 * this struct, so nothing else is written twice). */
_Static_assert(offsetof(ilk_rwlock_words, readers) == ILK_RWLOCK_READERS_OFFSET, "ReadWriteLock layout");

/* R's bit 63, D: the claimant sleeps on R until the readers inside have left. */
#define ILK_RWLOCK_DRAIN_WAITING 0x8000000000000000ull

/*
 * ilk_rwlock_reader_leave — a reader's decrement of R, classified by the value R held before it
 * (`old`); a release operation, as a read unlock must be:
 *   ILK_RWLOCK_LEFT           0 < old < D: the common case, nothing else to do
 *   ILK_RWLOCK_LEFT_EMPTY     old == 0: no reader was counted (a misuse; R now wraps)
 *   ILK_RWLOCK_LEFT_DRAINED   old == D: D set and no reader counted (a misuse)
 *   ILK_RWLOCK_LEFT_DRAINING  old > D: D set, with readers counted; the caller finds out
 *                             whether it was the last of them by loading R again
 *
 * Why not `__atomic_fetch_sub` and a look at its result: on x86-64 that is `lock xadd`, and
 * anything that reads its result register before the next instruction (or a `setcc` of its
 * flags) cost 0.6-0.8 ns more per read lock+unlock than `lock sub` followed directly by a
 * branch on its flags, on a 2-vCPU AMD EPYC machine: 4.17 against 3.36 ns per read
 * lock+unlock in Swift, with a C copy of Concurrency Kit's (`lock dec` to leave) at 3.36. The
 * three cases above need CF (old == 0) and OF (old == INT64_MIN, that is D) besides the sign, so
 * on x86-64 Linux this is inline assembly (ilk_flag_asm.h says when it may run): `lock subq $1`,
 * then `jge` to the common case (taken iff old >= 1 as a signed number: neither 0 nor D set),
 * then `jb` (CF: old == 0), `jo` (OF: old == D) and `jmp` for the rest.
 * Every target is a C label of the asm goto, so all the code stays in its function's section:
 * a stub in .text.unlikely measured the same but its jumps back would break the link of a
 * COMDAT function (a C++ inline function, a Swift specialization emitted in several objects)
 * whose copy the linker discards.
 */
#define ILK_RWLOCK_LEFT 0u
#define ILK_RWLOCK_LEFT_EMPTY 1u
#define ILK_RWLOCK_LEFT_DRAINED 2u
#define ILK_RWLOCK_LEFT_DRAINING 3u

/* The portable form: the same classification from `__atomic_fetch_sub`'s result. */
static inline __attribute__((always_inline)) uint32_t ilk_rwlock_reader_leave_builtin(uint64_t *readers) {
    /* Release: pairs with the claimant's acquire of R (one release sequence of RMWs). */
    uint64_t old = __atomic_fetch_sub(readers, 1, __ATOMIC_RELEASE);
    if ((int64_t)old > 0) return ILK_RWLOCK_LEFT;
    if (old == 0) return ILK_RWLOCK_LEFT_EMPTY;
    return old == ILK_RWLOCK_DRAIN_WAITING ? ILK_RWLOCK_LEFT_DRAINED : ILK_RWLOCK_LEFT_DRAINING;
}

/* The read unlock under ThreadSanitizer (ilk_shim.c): the builtin form, out of line and cold. */
uint32_t ilk_rwlock_reader_leave_sanitized(uint64_t *readers);

/* The read unlock: on x86-64 Linux the assembly of the comment above, after a `test` of
 * `&__tsan_init` (ilk_flag_asm.h) that jumps to the builtin form, out of line, when
 * ThreadSanitizer's runtime is linked in, as ilk_mutex_release
 * (ilk_mutex.h) and for the same reason: inside a protocol-witness thunk, whose calls Swift's
 * IRGen marks noinline, the unlock costs one call, where `ilk_flag_asm_usable()` and the leave
 * were two. Elsewhere the builtin form. */
static inline __attribute__((always_inline)) uint32_t ilk_rwlock_reader_leave(uint64_t *readers) {
#ifdef ILK_FLAG_ASM
    __asm__ goto("test %1, %1\n\t"
                 "jnz %l[sanitized]\n\t"
                 "lock subq $1, %0\n\t"
                 "jge %l[left]\n\t"
                 "jb %l[empty]\n\t"
                 "jo %l[drained]\n\t"
                 "jmp %l[draining]"
                 : : "m"(*readers), "r"(&__tsan_init) : "memory", "cc"
                 : left, empty, drained, draining, sanitized);
    __builtin_unreachable();
left:
    return ILK_RWLOCK_LEFT;
empty:
    return ILK_RWLOCK_LEFT_EMPTY;
drained:
    return ILK_RWLOCK_LEFT_DRAINED;
draining:
    return ILK_RWLOCK_LEFT_DRAINING;
sanitized:
    return ilk_rwlock_reader_leave_sanitized(readers);
#else
    return ilk_rwlock_reader_leave_builtin(readers);
#endif
}

#endif /* ILK_RWLOCK_H */
