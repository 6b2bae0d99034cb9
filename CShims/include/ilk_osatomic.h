/*
 * ilk_osatomic.h — the OSAtomic table of Apple's <libkern/OSAtomic.h>, under ilk_ names.
 *
 * Each operation comes in a barrier form and a barrier-free form (relaxed). The barrier form is
 * a full barrier, as OSAtomic's header documents its *Barrier variants: no load or store before
 * it may be performed after it, nor one after it before it. A sequentially consistent
 * read-modify-write alone is not that on a weakly ordered CPU: on AArch64 without LSE it is an
 * LDAXR/STLXR loop, and a plain store before it and a plain load after it may both fall inside
 * the loop's window and reorder (store buffering); a failed compare-and-swap stores nothing and
 * releases nothing. So on every target but x86-64 the barrier form is the sequentially
 * consistent operation followed by a sequentially consistent fence (DMB ISH), which orders
 * everything before the operation's last instruction with everything after. On x86-64 every
 * locked instruction, a failed `lock cmpxchg` included, is already a full barrier, and the
 * fence is left out. Darwin's own arm64 code is the bare sequentially consistent operation;
 * this is the documented contract, at the cost of one DMB there. Conventions follow OSAtomic
 * exactly:
 *   ilk_osatomic_add32(amount, &value)           -> new value   (OSAtomicAdd32)
 *   ilk_osatomic_increment32 / decrement32       -> new value
 *   ilk_osatomic_or32 / and32 / xor32            -> new value   (OSAtomicOr32 ...)
 *   ilk_osatomic_or32_orig / and32_orig / xor32_orig -> original value (OSAtomicOr32Orig ...)
 *   ilk_osatomic_cas32(old, new, &value)         -> true when swapped (OSAtomicCompareAndSwap32)
 *   ilk_osatomic_test_and_set(n, address)        -> old bit, OSAtomic bit numbering
 *   ilk_osatomic_test_and_clear(n, address)      -> old bit
 * with 64-bit (…64), pointer-sized (…ptr, CAS only, like OSAtomicCompareAndSwapPtr) forms,
 * and the suffix _barrier for the barrier form.
 */
#ifndef ILK_OSATOMIC_H
#define ILK_OSATOMIC_H

#include "ilk_atomic.h"
#include "ilk_bits.h"

/* The fence that completes a barrier form (see above): none on x86-64. */
#if defined(__x86_64__)
#define ILK_OSATOMIC_BARRIER_TAIL() ((void)0)
#else
#define ILK_OSATOMIC_BARRIER_TAIL() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
#define ILK_OSATOMIC_NO_TAIL() ((void)0)

#define ILK_OSATOMIC_FAMILY(T, W, S, SUFFIX, ORDER, TAIL)                                      \
    ILK_INLINE T ilk_osatomic_add##W##SUFFIX(T amount, T *value) {                             \
        T r = ilk_atomic_add_fetch_##S(value, amount, ORDER); TAIL; return r;                  \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_increment##W##SUFFIX(T *value) {                                 \
        T r = ilk_atomic_add_fetch_##S(value, 1, ORDER); TAIL; return r;                       \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_decrement##W##SUFFIX(T *value) {                                 \
        T r = ilk_atomic_sub_fetch_##S(value, 1, ORDER); TAIL; return r;                       \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_or##W##SUFFIX(T mask, T *value) {                                \
        T r = ilk_atomic_or_fetch_##S(value, mask, ORDER); TAIL; return r;                     \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_and##W##SUFFIX(T mask, T *value) {                               \
        T r = ilk_atomic_and_fetch_##S(value, mask, ORDER); TAIL; return r;                    \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_xor##W##SUFFIX(T mask, T *value) {                               \
        T r = ilk_atomic_xor_fetch_##S(value, mask, ORDER); TAIL; return r;                    \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_or##W##_orig##SUFFIX(T mask, T *value) {                         \
        T r = ilk_atomic_fetch_or_##S(value, mask, ORDER); TAIL; return r;                     \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_and##W##_orig##SUFFIX(T mask, T *value) {                        \
        T r = ilk_atomic_fetch_and_##S(value, mask, ORDER); TAIL; return r;                    \
    }                                                                                          \
    ILK_INLINE T ilk_osatomic_xor##W##_orig##SUFFIX(T mask, T *value) {                        \
        T r = ilk_atomic_fetch_xor_##S(value, mask, ORDER); TAIL; return r;                    \
    }                                                                                          \
    ILK_INLINE bool ilk_osatomic_cas##W##SUFFIX(T old_value, T new_value, T *value) {          \
        bool r = ilk_atomic_cas_strong_##S(value, &old_value, new_value, ORDER, ORDER);        \
        TAIL;                                                                                  \
        return r;                                                                              \
    }

ILK_OSATOMIC_FAMILY(int32_t, 32, i32, , ILK_ORDER_RELAXED, ILK_OSATOMIC_NO_TAIL())
ILK_OSATOMIC_FAMILY(int32_t, 32, i32, _barrier, ILK_ORDER_SEQ_CST, ILK_OSATOMIC_BARRIER_TAIL())
ILK_OSATOMIC_FAMILY(int64_t, 64, i64, , ILK_ORDER_RELAXED, ILK_OSATOMIC_NO_TAIL())
ILK_OSATOMIC_FAMILY(int64_t, 64, i64, _barrier, ILK_ORDER_SEQ_CST, ILK_OSATOMIC_BARRIER_TAIL())

#undef ILK_OSATOMIC_FAMILY

ILK_INLINE bool ilk_osatomic_casptr(void *old_value, void *new_value, void **value) {
    return ilk_atomic_cas_strong_ptr(value, &old_value, new_value, ILK_ORDER_RELAXED,
                                     ILK_ORDER_RELAXED);
}
ILK_INLINE bool ilk_osatomic_casptr_barrier(void *old_value, void *new_value, void **value) {
    bool r = ilk_atomic_cas_strong_ptr(value, &old_value, new_value, ILK_ORDER_SEQ_CST,
                                       ILK_ORDER_SEQ_CST);
    ILK_OSATOMIC_BARRIER_TAIL();
    return r;
}
ILK_INLINE bool ilk_osatomic_test_and_set(uint32_t n, void *address) {
    return ilk_atomic_test_and_set_bit(n, address, ILK_ORDER_RELAXED);
}
ILK_INLINE bool ilk_osatomic_test_and_set_barrier(uint32_t n, void *address) {
    bool r = ilk_atomic_test_and_set_bit(n, address, ILK_ORDER_SEQ_CST);
    ILK_OSATOMIC_BARRIER_TAIL();
    return r;
}
ILK_INLINE bool ilk_osatomic_test_and_clear(uint32_t n, void *address) {
    return ilk_atomic_test_and_clear_bit(n, address, ILK_ORDER_RELAXED);
}
ILK_INLINE bool ilk_osatomic_test_and_clear_barrier(uint32_t n, void *address) {
    bool r = ilk_atomic_test_and_clear_bit(n, address, ILK_ORDER_SEQ_CST);
    ILK_OSATOMIC_BARRIER_TAIL();
    return r;
}

#endif /* ILK_OSATOMIC_H */
