/*
 * ilk_dwcas.c — the striped-lock form of ilk_dwcas (ilk_osqueue.h), for targets without a
 * double-width compare-and-swap instruction, x86-64 CPUs without CMPXCHG16B, and
 * ThreadSanitizer builds on x86-64; and the CPUID probe for CMPXCHG16B.
 *
 * 64 spin locks, each on its own 128-byte block, chosen by the address's bits above the
 * 16-byte alignment. The words are read and written with atomics inside the lock, so that
 * readers outside it (ilk_atomic_load_uptr) see each word whole.
 *
 * fork(): a stripe held by another thread at the fork would stay held in the child for good.
 * The RCU fork handlers (ilk_rcu.c) take every stripe last before the fork and give them back
 * first after it, in the parent and the child (ilk_dwcas_fork_prepare, ilk_dwcas_fork_release).
 * The first LockFreeStack or LockFreeQueue installs them, and so does the first call of the
 * striped form itself: a program that uses only InterlockCompat's OSAtomicEnqueue creates no
 * stack, and its stripes need the handlers all the same. They stay in the RCU handlers rather
 * than in handlers of their own, whose order among pthread_atfork's would depend on which came
 * first: the stripes must be taken after RCU's worker is stopped (a worker's callback may
 * need one), and pthread_atfork runs prepare handlers in the reverse order of registration. A holder never waits for anything
 * while it holds a stripe, so the prepare handler only waits out the holders' few instructions.
 */
#include "include/ilk_osqueue.h"
#include "include/ilk_fence.h"
#include "include/ilk_rcu.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int ilk_dwcas_cx16_state;

int ilk_dwcas_probe(void) {
    int state = 2;
#if defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    /* CPUID leaf 1, ECX bit 13: CMPXCHG16B. */
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_CMPXCHG16B)) state = 1;
#endif
    /* Relaxed: the answer is the same for every thread (ilk_osqueue.h). */
    __atomic_store_n(&ilk_dwcas_cx16_state, state, __ATOMIC_RELAXED);
    return state;
}

#define ILK_DWCAS_STRIPES 64

static struct {
    uint32_t word;
    char padding[128 - sizeof(uint32_t)];
} ilk_dwcas_stripes[ILK_DWCAS_STRIPES] __attribute__((aligned(128)));

/* Takes a stripe (acquire), spinning, then yielding, while another thread holds it. */
static void ilk_dwcas_lock_stripe(uint32_t *lock) {
    unsigned spins = 0;
    while (__atomic_exchange_n(lock, 1u, __ATOMIC_ACQUIRE) != 0) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED) != 0) {
            if (++spins < 64) {
                ilk_spin_pause();
            } else {
                ilk_thread_yield();
            }
        }
    }
}

void ilk_dwcas_fork_prepare(void) {
    for (unsigned i = 0; i < ILK_DWCAS_STRIPES; i++) ilk_dwcas_lock_stripe(&ilk_dwcas_stripes[i].word);
}

void ilk_dwcas_fork_release(void) {
    /* Release: pairs with the next holder's acquire (in the parent; the child is alone). */
    for (unsigned i = 0; i < ILK_DWCAS_STRIPES; i++)
        __atomic_store_n(&ilk_dwcas_stripes[i].word, 0u, __ATOMIC_RELEASE);
}

bool ilk_dwcas_locked(uintptr_t *address, uintptr_t *lo, uintptr_t *hi, uintptr_t new_lo,
                      uintptr_t new_hi) {
    ilk_rcu_install_fork_handlers(); /* a pthread_once check after the first call */
    uint32_t *lock = &ilk_dwcas_stripes[((uintptr_t)address >> 4) % ILK_DWCAS_STRIPES].word;
    ilk_dwcas_lock_stripe(lock);
    uintptr_t old_lo = __atomic_load_n(&address[0], __ATOMIC_RELAXED);
    uintptr_t old_hi = __atomic_load_n(&address[1], __ATOMIC_RELAXED);
    bool ok = old_lo == *lo && old_hi == *hi;
    if (ok) {
        /* A reader outside the lock may pair one old word with one new: OSQueue.swift's CAS
         * then fails (its generation grows with every change and no change restores lo). */
        __atomic_store_n(&address[1], new_hi, __ATOMIC_SEQ_CST);
        __atomic_store_n(&address[0], new_lo, __ATOMIC_SEQ_CST);
    } else {
        *lo = old_lo;
        *hi = old_hi;
    }
    __atomic_store_n(lock, 0u, __ATOMIC_RELEASE);
    return ok;
}
