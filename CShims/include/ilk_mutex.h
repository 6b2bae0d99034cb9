/*
 * ilk_mutex.h — the release of Interlock's futex mutex word (Sources/Interlock/Locks/
 * MutexWord.swift: 0 unlocked, 1 locked, 2 locked and maybe sleepers), as a decrement
 * classified by the value the word held before it (`old`); a release operation:
 *
 *   ILK_MUTEX_RELEASED          old == 1: the word is now 0, nothing else to do
 *   ILK_MUTEX_RELEASED_WAKE     old == 2: the word is now 1; the caller stores 0 (release) and
 *                               wakes one sleeper (Drepper's "mutex 3" unlock)
 *   ILK_MUTEX_NOT_LOCKED        old == 0: a misuse; the word now reads 0xFFFFFFFF and the
 *                               caller restores it before trapping
 *
 * Why a decrement and not the exchange with 0 this mutex used before: the exchange (`xchg`)
 * must be followed by a compare of its result; an uncontended lock+unlock took 4.41 ns with the
 * exchange and 4.11-4.15 with `lock sub` and a branch on its flags (the deciding figure: C, 60
 * alternating passes of 5 M pairs each, best pass, on a 2-vCPU AMD EPYC machine).
 * Telling old == 0 from old == 2 takes CF besides ZF, which no compiler derives from
 * `__atomic_fetch_sub` (it reads the result of a `lock xadd`), so on x86-64 Linux this is an
 * asm goto: `lock subl $1`, `je` to the common case, `jb` (CF: old == 0), `jmp` for the rest;
 * every target a C label (see ilk_rwlock.h on why). ilk_flag_asm.h says when it may run.
 */
#ifndef ILK_MUTEX_H
#define ILK_MUTEX_H

#include <stdint.h>

#include "ilk_flag_asm.h"

#define ILK_MUTEX_RELEASED 0u
#define ILK_MUTEX_RELEASED_WAKE 1u
#define ILK_MUTEX_NOT_LOCKED 2u

/* The portable form: the same classification from `__atomic_fetch_sub`'s result. */
static inline __attribute__((always_inline)) uint32_t ilk_mutex_release_builtin(uint32_t *word) {
    /* Release: pairs with the acquiring CAS or exchange of the next holder. */
    uint32_t old = __atomic_fetch_sub(word, 1, __ATOMIC_RELEASE);
    if (old == 1) return ILK_MUTEX_RELEASED;
    return old == 0 ? ILK_MUTEX_NOT_LOCKED : ILK_MUTEX_RELEASED_WAKE;
}

/* The form with inline assembly on x86-64 Linux (the builtin form elsewhere). */
static inline __attribute__((always_inline)) uint32_t ilk_mutex_release_asm(uint32_t *word) {
#ifdef ILK_FLAG_ASM
    /* `lock` makes the subtraction a full barrier on x86-64: at least the release needed. The
     * "memory" clobber keeps the compiler from moving memory accesses across it. */
    __asm__ goto("lock subl $1, %0\n\t"
                 "je %l[released]\n\t"
                 "jb %l[not_locked]\n\t"
                 "jmp %l[wake]"
                 : : "m"(*word) : "memory", "cc" : released, not_locked, wake);
    __builtin_unreachable();
released:
    return ILK_MUTEX_RELEASED;
not_locked:
    return ILK_MUTEX_NOT_LOCKED;
wake:
    return ILK_MUTEX_RELEASED_WAKE;
#else
    return ilk_mutex_release_builtin(word);
#endif
}

/* The release under ThreadSanitizer (ilk_shim.c): the builtin form, out of line and cold, called
 * by ilk_mutex_release when ThreadSanitizer's runtime is linked in (ilk_flag_asm.h). */
uint32_t ilk_mutex_release_sanitized(uint32_t *word);

/* The release as Swift calls it: one function, so that where Swift cannot inline it (inside a
 * protocol-witness thunk, whose calls IRGen marks noinline: Sources/Interlock/Atomics/
 * WordAtomics.swift) the unlock costs one call, not a call for the ThreadSanitizer check and
 * another for the release. Swift's own atomic builtins cannot replace it: they give `lock xadd`
 * and a compare of the old value, 5.78 against 5.25 ns per uncontended lock+unlock with
 * `lock subl` and its flags (the deciding figure: three alternating runs of a dependent's
 * release build).
 *
 * On x86-64 Linux the check is inside the assembly (`test` of `&__tsan_init`, then the
 * decrement), and the ThreadSanitizer form is a cold out-of-line call (ilk_shim.c): written as
 * a C branch, LLVM laid the assembly out of line, predicting `&__tsan_init == 0` false (a
 * pointer compared with null), and __builtin_expect is lost here (Swift's importer compiles C
 * without optimization). */
static inline __attribute__((always_inline)) uint32_t ilk_mutex_release(uint32_t *word) {
#ifdef ILK_FLAG_ASM
    __asm__ goto("test %1, %1\n\t"
                 "jnz %l[sanitized]\n\t"
                 "lock subl $1, %0\n\t"
                 "je %l[released]\n\t"
                 "jb %l[not_locked]\n\t"
                 "jmp %l[wake]"
                 : : "m"(*word), "r"(&__tsan_init) : "memory", "cc"
                 : released, not_locked, wake, sanitized);
    __builtin_unreachable();
released:
    return ILK_MUTEX_RELEASED;
not_locked:
    return ILK_MUTEX_NOT_LOCKED;
wake:
    return ILK_MUTEX_RELEASED_WAKE;
sanitized:
    return ilk_mutex_release_sanitized(word);
#else
    return ilk_mutex_release_builtin(word);
#endif
}

#endif /* ILK_MUTEX_H */
