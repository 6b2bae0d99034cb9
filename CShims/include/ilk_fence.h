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

#endif /* ILK_FENCE_H */
