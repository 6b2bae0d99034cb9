/*
 * ilk_fence.h — memory fences and spin-wait hints.
 *
 * ilk_fence_full        sequentially consistent thread fence (OSMemoryBarrier; `mfence` on x86-64)
 * ilk_fence_acquire     acquire thread fence (a compiler barrier on x86-64, `dmb ishld` on arm64)
 * ilk_fence_release     release thread fence
 * ilk_thread_fence(o)   thread fence with any order; relaxed is a no-op, as in C11
 * ilk_compiler_barrier  signal fence: stops compiler reordering, emits no instruction
 * ilk_spin_pause        CPU hint inside a spin-wait loop (`pause` on x86, `yield` on arm64)
 * ilk_thread_yield      give the rest of the time slice to another runnable thread
 * ilk_spin_jitter       a cheap, fast-changing number (the CPU's cycle counter where there is
 *                       one) to de-synchronize the backoff of spinning threads; not random
 * ilk_spin_loaded_until the process-wide word in which spinners record until when the cores
 *                       count as oversubscribed (a CLOCK_MONOTONIC time in nanoseconds; 0 at
 *                       start); alone on its 128 bytes. Read and written only with relaxed
 *                       atomics: a heuristic (Sources/Interlock/Locks/AdaptiveSpin.swift)
 * ilk_spin_run_delay_permille(now, interval)
 *                       the share of the time since the calling thread's previous check, in
 *                       thousandths, that the thread spent runnable but not running (waiting
 *                       for a CPU: Linux's /proc/thread-self/schedstat), or -1: when the
 *                       previous check is less than `interval` ns before `now` (no system call
 *                       then), on a thread's first check (which only records), and where the
 *                       file cannot be read (other systems, a sandbox without /proc)
 *
 * Note for lock authors: ThreadSanitizer does not model standalone fences. Interlock's own
 * primitives synchronize through acquire/release operations on the atomics themselves.
 */
#ifndef ILK_FENCE_H
#define ILK_FENCE_H

#include "ilk_atomic.h"

#include <stdint.h>
#include <time.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#endif

ILK_INLINE void ilk_fence_full(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
ILK_INLINE void ilk_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
ILK_INLINE void ilk_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
ILK_INLINE void ilk_thread_fence(int order) { __atomic_thread_fence(order); }
ILK_INLINE void ilk_compiler_barrier(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

ILK_INLINE void ilk_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

ILK_INLINE void ilk_thread_yield(void) {
#if defined(__unix__) || defined(__APPLE__)
    (void)sched_yield();
#endif
}

ILK_INLINE uint32_t ilk_spin_jitter(void) {
#if defined(__x86_64__) || defined(__i386__)
    return (uint32_t)__builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t ticks;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(ticks));
    return (uint32_t)ticks;
#else
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)ts.tv_nsec;
#endif
}

/* The storage of ilk_spin_loaded_until(), defined (128-byte aligned) in ilk_shim.c. */
extern int64_t ilk_spin_loaded_until_storage[16];

ILK_INLINE int64_t *ilk_spin_loaded_until(void) { return &ilk_spin_loaded_until_storage[0]; }


int ilk_spin_run_delay_permille(int64_t now, int64_t interval);

#endif /* ILK_FENCE_H */
