/*
 * ilk_osqueue.h — the heads of Apple's intrusive queues (<libkern/OSAtomicQueue.h>) and the
 * double-width compare-and-swap that makes the LIFO one ABA-safe (InterlockCompat's
 * OSQueue.swift and OSFifoQueue.swift); the same compare-and-swap keeps LockFreeStack's head
 * and the node pool's global lists ABA-safe (LockFreeStack.swift, ilk_node_pool.c).
 *
 * The heads are declared here, not in Swift, for their alignment: Darwin declares both
 * `__attribute__((aligned(16)))` (cmpxchg16b faults on a misaligned operand), and a Swift
 * struct of two words is only 8-byte aligned. Imported, they have Darwin's Swift shape:
 * `opaque1: UnsafeMutableRawPointer?`, `opaque2: Int` (`void *` for the FIFO), `opaque3:
 * Int32`, `init()` and the memberwise initializer.
 *
 *   ilk_dwcas(address, &lo, &hi, new_lo, new_hi)
 *       Sequentially consistent compare-and-swap of the two words at `address` (16-byte
 *       aligned): when they hold (lo, hi), stores (new_lo, new_hi) and returns true; otherwise
 *       stores the two words found into lo and hi (read atomically as a pair) and returns false.
 *   ilk_dwcas_is_lock_free()
 *       Whether ilk_dwcas is a single instruction sequence: x86-64 (`lock cmpxchg16b`, when
 *       the CPU has it, which CPUID tells once (ilk_dwcas_probe): the x86-64 baseline does not
 *       promise it and a few early CPUs and virtual CPU models lack it; and when
 *       ThreadSanitizer's runtime is not linked in: it does not see inline assembly) and
 *       AArch64 (the compiler's 16-byte __atomic builtin: LDAXP/STLXP, or CASPAL with LSE).
 *       Elsewhere ilk_dwcas takes one of 64 spin locks chosen by the address (ilk_dwcas.c).
 *
 * fork(): the RCU fork handlers hold every stripe across fork(), so the striped-lock form is
 * fork-safe too; the first LockFreeStack or LockFreeQueue installs them, or else the first
 * striped operation (ilk_dwcas.c).
 *
 * A reader that loads the two words separately (ilk_atomic_load_uptr) may see them from two
 * different updates; OSQueue.swift reads the generation before the pointer, so that a torn
 * pair only makes its CAS fail.
 */
#ifndef ILK_OSQUEUE_H
#define ILK_OSQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "ilk_atomic.h"
#include "ilk_flag_asm.h"

/* Darwin's OSQueueHead: opaque1 the first element, opaque2 a generation count. */
typedef struct __attribute__((aligned(16))) ilk_os_queue_head {
    void *opaque1;
    long opaque2;
} ilk_os_queue_head;

/* Darwin's OSFifoQueueHead: opaque1 the first element, opaque2 the last, opaque3 a lock word. */
typedef struct __attribute__((aligned(16))) ilk_os_fifo_queue_head {
    void *opaque1;
    void *opaque2;
    int opaque3;
} ilk_os_fifo_queue_head;

_Static_assert(sizeof(ilk_os_queue_head) == 16, "OSQueueHead layout");
_Static_assert(sizeof(void *) != 8 || sizeof(ilk_os_fifo_queue_head) == 32, "OSFifoQueueHead layout");

/* The striped-lock form (ilk_dwcas.c): where no double-width instruction is used. */
bool ilk_dwcas_locked(uintptr_t *address, uintptr_t *lo, uintptr_t *hi, uintptr_t new_lo,
                      uintptr_t new_hi);

/* fork(): take every stripe before, give them back after (in the parent and the child); called
 * by the RCU fork handlers (ilk_rcu.c), so that no stripe stays held in the child. */
void ilk_dwcas_fork_prepare(void);
void ilk_dwcas_fork_release(void);

/* Whether this x86-64 CPU has CMPXCHG16B: 0 not asked yet, 1 yes, 2 no. Read and written
 * relaxed: every thread that asks computes the same answer from CPUID, so a thread that reads
 * 0 only asks again (ilk_dwcas.c). */
extern int ilk_dwcas_cx16_state;
int ilk_dwcas_probe(void);

/* Whether ilk_dwcas uses the instruction (see the file comment). */
ILK_INLINE bool ilk_dwcas_is_lock_free(void) {
#if defined(__x86_64__) && defined(ILK_FLAG_ASM)
    if (!ilk_flag_asm_usable()) return false;
    int state = __atomic_load_n(&ilk_dwcas_cx16_state, __ATOMIC_RELAXED);
    return (state != 0 ? state : ilk_dwcas_probe()) == 1;
#elif defined(__aarch64__)
    return true;
#else
    return false;
#endif
}

ILK_INLINE bool ilk_dwcas(void *address, uintptr_t *lo, uintptr_t *hi, uintptr_t new_lo,
                          uintptr_t new_hi) {
#if defined(__x86_64__) && defined(ILK_FLAG_ASM)
    if (ilk_dwcas_is_lock_free()) {
        typedef struct { uintptr_t w[2]; } ilk_pair;
        bool ok;
        uintptr_t a = *lo, d = *hi;
        __asm__ __volatile__("lock cmpxchg16b %1"
                             : "=@ccz"(ok), "+m"(*(ilk_pair *)address), "+a"(a), "+d"(d)
                             : "b"(new_lo), "c"(new_hi)
                             : "memory");
        *lo = a;
        *hi = d;
        return ok;
    }
    return ilk_dwcas_locked((uintptr_t *)address, lo, hi, new_lo, new_hi);
#elif defined(__aarch64__)
    unsigned __int128 expected = ((unsigned __int128)*hi << 64) | *lo;
    unsigned __int128 desired = ((unsigned __int128)new_hi << 64) | new_lo;
    bool ok = __atomic_compare_exchange_n((unsigned __int128 *)address, &expected, desired, false,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    *lo = (uintptr_t)expected;
    *hi = (uintptr_t)(expected >> 64);
    return ok;
#else
    return ilk_dwcas_locked((uintptr_t *)address, lo, hi, new_lo, new_hi);
#endif
}

#endif /* ILK_OSQUEUE_H */
