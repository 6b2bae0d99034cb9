/*
 * The shim is header-only (static inline functions that Swift inlines); this file gives the
 * target a translation unit and checks at build time the assumptions the headers make.
 */
#include "include/CInterlock.h"

_Static_assert(__atomic_always_lock_free(sizeof(int64_t), 0), "64-bit atomics must be lock-free");
_Static_assert(__atomic_always_lock_free(sizeof(void *), 0), "pointer atomics must be lock-free");
_Static_assert(ILK_ORDER_RELAXED == 0 && ILK_ORDER_SEQ_CST == 5, "orders are the C11 values");
