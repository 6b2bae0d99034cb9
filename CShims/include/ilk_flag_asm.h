/*
 * ilk_flag_asm.h — when Interlock may use its inline-assembly decrements, which branch on the
 * flags of a `lock sub` instead of reading a result (ilk_mutex.h, ilk_rwlock.h).
 *
 * Why assembly at all: on x86-64 a `lock xadd` or `xchg` whose result is then compared cost
 * 0.3-0.8 ns more per lock+unlock, on a 2-vCPU AMD EPYC machine, than a `lock sub`
 * followed directly by a branch on its flags (the measurements are in the two headers). The
 * compilers emit the flag form only when the result is compared with 0 once (one of ZF or SF);
 * the unlocks need CF or OF as well, to keep their misuse traps exact.
 *
 * ThreadSanitizer does not see inline assembly. The builtin forms are taken whenever its
 * runtime is linked in: `__tsan_init` is a weak reference, null unless the runtime defines it.
 * (Swift's importer does not pass -fsanitize to the C code it inlines, so `__has_feature`
 * cannot tell.) The test costs one load outside the caller's loop and a branch that never
 * changes.
 */
#ifndef ILK_FLAG_ASM_H
#define ILK_FLAG_ASM_H

#include <stdbool.h>

#if defined(__x86_64__) && defined(__linux__)
#define ILK_FLAG_ASM 1
extern void __tsan_init(void) __attribute__((weak));
#endif

/*
 * Whether this process may use the `*_asm` forms: false where ThreadSanitizer's runtime is
 * linked in. Where there is no assembly form (not x86-64 Linux) the `*_asm` functions are the
 * builtin forms, and this is true. The caller chooses, so that its own branch hint lays the
 * assembly out as the fall-through (Swift's importer compiles C without optimization, so a
 * `__builtin_expect` here would be dropped).
 */
static inline __attribute__((always_inline)) bool ilk_flag_asm_usable(void) {
#ifdef ILK_FLAG_ASM
    return &__tsan_init == 0;
#else
    return true;
#endif
}

#endif /* ILK_FLAG_ASM_H */
