/*
 * ilk_peer_atomic.h — the C builtin peer of the atomics benchmarks.
 *
 * What a C programmer writes: the GCC/Clang __atomic builtins applied to a plain int64_t that
 * lives in a heap allocation, every operation sequentially consistent (the ordering of
 * OSAtomic's "Barrier" functions and the default of every contender in the benchmark).
 *
 * The functions are `static inline` with always_inline, so Swift's importer emits their bodies
 * into the benchmark and each call compiles to the builtin's single instruction (x86-64:
 * `lock xadd`/`lock add`, `lock cmpxchg`, `mov`, `xchg`), exactly as it would in C. The
 * compare-and-swap is the builtin's own form, with the expected value passed by address.
 *
 * Orderings: all seq_cst, on success and on failure, so the peer does the same work as the
 * Swift contenders' `.sequentiallyConsistent` operations (no ordering is weakened anywhere).
 */
#ifndef ILK_PEER_ATOMIC_H
#define ILK_PEER_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#define ILK_PEER_INLINE static inline __attribute__((always_inline))

/* Adds `delta`, sequentially consistent; returns the original value. */
ILK_PEER_INLINE int64_t ilk_peer_atomic_fetch_add(int64_t *word, int64_t delta) {
    return __atomic_fetch_add(word, delta, __ATOMIC_SEQ_CST);
}

/* Reads the word without ordering: the first read of a compare-and-swap loop, whose CAS
 * then validates it. */
ILK_PEER_INLINE int64_t ilk_peer_atomic_load_relaxed(const int64_t *word) {
    return __atomic_load_n(word, __ATOMIC_RELAXED);
}

/* Reads the word, sequentially consistent. */
ILK_PEER_INLINE int64_t ilk_peer_atomic_load(const int64_t *word) {
    return __atomic_load_n(word, __ATOMIC_SEQ_CST);
}

/* Writes the word, sequentially consistent. */
ILK_PEER_INLINE void ilk_peer_atomic_store(int64_t *word, int64_t value) {
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
}

/* Strong compare-and-swap, seq_cst on success and failure; on failure *expected receives the
 * value found. */
ILK_PEER_INLINE bool ilk_peer_atomic_compare_exchange(int64_t *word, int64_t *expected,
                                                      int64_t desired) {
    return __atomic_compare_exchange_n(word, expected, desired, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

#endif
