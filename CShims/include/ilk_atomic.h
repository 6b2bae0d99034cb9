/*
 * ilk_atomic.h — C11 atomic operations for Interlock.
 *
 * Every function takes its memory order as an `int` holding one of the ILK_ORDER_* values
 * (identical to the compiler's __ATOMIC_* constants). The functions are `static inline`, so
 * Swift's importer emits their bodies into the calling module; once the caller's order is a
 * constant, LLVM folds the order switch away and each call compiles to the single instruction
 * of the builtin (for example `lock xadd` for a fetch-add on x86-64).
 *
 * Families, for each integer type T with suffix S (i8 u8 i32 u32 i64 u64 iptr uptr):
 *   ilk_atomic_load_S(p, order)               -> T     order: relaxed, acquire, seq_cst
 *   ilk_atomic_store_S(p, v, order)                    order: relaxed, release, seq_cst
 *   ilk_atomic_exchange_S(p, v, order)        -> T     the old value
 *   ilk_atomic_cas_strong_S(p, &expected, desired, success, failure) -> bool
 *   ilk_atomic_cas_weak_S(...)                -> bool  may fail spuriously (use in loops)
 *       On failure *expected receives the value found. `failure` may not be release or
 *       acq_rel and may not be stronger than `success` (C11 7.17.7.4).
 *   ilk_atomic_cas_value_S(p, expected, desired, success, failure) -> T
 *       Strong compare-and-swap returning the value found (it swapped iff that equals
 *       `expected`); takes no pointer to a local, so Swift callers need no stack protector.
 *   ilk_atomic_fetch_{add,sub,or,and,xor}_S(p, v, order) -> T   the ORIGINAL value
 *   ilk_atomic_{add,sub,or,and,xor}_fetch_S(p, v, order) -> T   the NEW value
 * and for raw pointers (suffix ptr): load, store, exchange, cas_strong, cas_weak.
 *
 * Arithmetic wraps on overflow for signed types too: the builtins are defined on the
 * two's-complement representation (C11 7.17.7.5p3), unlike ordinary signed C arithmetic.
 *
 * Validation of orders is the caller's job (the Swift layer traps on an order that is
 * invalid for the operation); passing an invalid order here is undefined, as in C11.
 *
 * These are the GCC/Clang __atomic builtins, which implement the C11 memory model on plain
 * (non-_Atomic) objects; Swift cannot import `_Atomic`-qualified types, and ThreadSanitizer
 * instruments the builtins exactly as it instruments <stdatomic.h>.
 */
#ifndef ILK_ATOMIC_H
#define ILK_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

/* Memory orders, numerically equal to the compiler's __ATOMIC_* constants. */
#define ILK_ORDER_RELAXED __ATOMIC_RELAXED
#define ILK_ORDER_ACQUIRE __ATOMIC_ACQUIRE
#define ILK_ORDER_RELEASE __ATOMIC_RELEASE
#define ILK_ORDER_ACQ_REL __ATOMIC_ACQ_REL
#define ILK_ORDER_SEQ_CST __ATOMIC_SEQ_CST

#define ILK_INLINE static inline __attribute__((always_inline))

/* Load, store, exchange and compare-and-swap: shared by integers and pointers. */
#define ILK_DEFINE_ATOMIC_BASIC(T, S)                                                          \
    ILK_INLINE T ilk_atomic_load_##S(const T *p, int order) {                                  \
        return __atomic_load_n(p, order);                                                      \
    }                                                                                          \
    ILK_INLINE void ilk_atomic_store_##S(T *p, T v, int order) {                               \
        __atomic_store_n(p, v, order);                                                         \
    }                                                                                          \
    ILK_INLINE T ilk_atomic_exchange_##S(T *p, T v, int order) {                               \
        return __atomic_exchange_n(p, v, order);                                               \
    }                                                                                          \
    ILK_INLINE bool ilk_atomic_cas_strong_##S(T *p, T *expected, T desired, int success,       \
                                              int failure) {                                   \
        return __atomic_compare_exchange_n(p, expected, desired, false, success, failure);     \
    }                                                                                          \
    ILK_INLINE bool ilk_atomic_cas_weak_##S(T *p, T *expected, T desired, int success,         \
                                            int failure) {                                     \
        return __atomic_compare_exchange_n(p, expected, desired, true, success, failure);      \
    }                                                                                          \
    ILK_INLINE T ilk_atomic_cas_value_##S(T *p, T expected, T desired, int success,            \
                                          int failure) {                                       \
        __atomic_compare_exchange_n(p, &expected, desired, false, success, failure);           \
        return expected;                                                                       \
    }

/* Read-modify-write arithmetic and bitwise operations: integers only. */
#define ILK_DEFINE_ATOMIC_RMW(T, S, OP)                                                        \
    ILK_INLINE T ilk_atomic_fetch_##OP##_##S(T *p, T v, int order) {                           \
        return __atomic_fetch_##OP(p, v, order);                                               \
    }                                                                                          \
    ILK_INLINE T ilk_atomic_##OP##_fetch_##S(T *p, T v, int order) {                           \
        return __atomic_##OP##_fetch(p, v, order);                                             \
    }

#define ILK_DEFINE_ATOMIC_INTEGER(T, S)                                                        \
    ILK_DEFINE_ATOMIC_BASIC(T, S)                                                              \
    ILK_DEFINE_ATOMIC_RMW(T, S, add)                                                           \
    ILK_DEFINE_ATOMIC_RMW(T, S, sub)                                                           \
    ILK_DEFINE_ATOMIC_RMW(T, S, or)                                                            \
    ILK_DEFINE_ATOMIC_RMW(T, S, and)                                                           \
    ILK_DEFINE_ATOMIC_RMW(T, S, xor)

ILK_DEFINE_ATOMIC_INTEGER(int8_t, i8)
ILK_DEFINE_ATOMIC_INTEGER(uint8_t, u8)
ILK_DEFINE_ATOMIC_INTEGER(int32_t, i32)
ILK_DEFINE_ATOMIC_INTEGER(uint32_t, u32)
ILK_DEFINE_ATOMIC_INTEGER(int64_t, i64)
ILK_DEFINE_ATOMIC_INTEGER(uint64_t, u64)
ILK_DEFINE_ATOMIC_INTEGER(intptr_t, iptr)
ILK_DEFINE_ATOMIC_INTEGER(uintptr_t, uptr)

typedef void *ilk_ptr;
ILK_DEFINE_ATOMIC_BASIC(ilk_ptr, ptr)

#undef ILK_DEFINE_ATOMIC_INTEGER
#undef ILK_DEFINE_ATOMIC_RMW
#undef ILK_DEFINE_ATOMIC_BASIC

#endif /* ILK_ATOMIC_H */
