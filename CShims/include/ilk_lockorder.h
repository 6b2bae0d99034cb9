/*
 * ilk_lockorder.h — the per-thread part of lock-order checking (Sources/Interlock/LockOrder/):
 * the stack of locks the calling thread holds, and backtraces for the reports.
 *
 * Used only in builds with the package trait LockOrderChecking (INTERLOCK_LOCK_ORDER); the
 * definitions cost nothing otherwise (one thread-local array that no code touches).
 *
 * The stack holds at most ILK_LOCKORDER_MAX_HELD entries; deeper nesting is counted in
 * `overflow` and not checked (a report says so). Entries are removed from anywhere (an unlock
 * out of acquisition order is allowed), the most recent occurrence of the lock first.
 */
#ifndef ILK_LOCKORDER_H
#define ILK_LOCKORDER_H

#include <stdint.h>

#define ILK_LOCKORDER_MAX_HELD 64

struct ilk_lockorder_held {
    const void *lock[ILK_LOCKORDER_MAX_HELD];
    uint8_t kind[ILK_LOCKORDER_MAX_HELD]; /* _LockOrderKind's raw value */
    uint32_t count;
    uint32_t overflow;
};

/* The process's mode as the hooks test it: 0 until Swift has read INTERLOCK_LOCK_ORDER
 * (LockOrderChecking.swift), then 1 off, 2 on (report or trap). Written once, with relaxed
 * stores of the same value by any thread that computes it first; read with a relaxed load (the
 * value is all the reader needs: the mode's details live in Swift's lazily initialised global,
 * whose own initialisation is thread-safe). */
extern uint8_t ilk_lockorder_mode_cache;

static inline __attribute__((always_inline)) uint8_t ilk_lockorder_mode_cached(void) {
    return __atomic_load_n(&ilk_lockorder_mode_cache, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void ilk_lockorder_set_mode_cache(uint8_t mode) {
    __atomic_store_n(&ilk_lockorder_mode_cache, mode, __ATOMIC_RELAXED);
}

/* The calling thread's stack (thread-local, zero at thread start). */
struct ilk_lockorder_held *ilk_lockorder_thread_held(void);

/* Captures up to `max` return addresses of the calling thread (backtrace(3)); returns how many. */
int ilk_lockorder_backtrace(void **frames, int max);

/* Writes `count` frames, symbolized as well as the dynamic symbol table allows, one per line,
 * each prefixed by `indent`, to standard error (backtrace_symbols_fd(3)). */
void ilk_lockorder_print_frames(void *const *frames, int count, const char *indent);

#endif
