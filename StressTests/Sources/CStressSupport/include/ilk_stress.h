/*
 * ilk_stress.h: the two CPU hints the stress workloads use in their own spin loops (the
 * library's C shim is not a product that a dependent package can import).
 *
 * ilk_stress_spin_pause    CPU hint inside a spin-wait loop (`pause` on x86, `yield` on arm64)
 * ilk_stress_thread_yield  give the rest of the time slice to another runnable thread
 */
#ifndef ILK_STRESS_H
#define ILK_STRESS_H

#include <sched.h>

static inline __attribute__((always_inline)) void ilk_stress_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

static inline __attribute__((always_inline)) void ilk_stress_thread_yield(void) { sched_yield(); }

#endif /* ILK_STRESS_H */
