/*
 * CInterlock — the C shim under Interlock. Every symbol carries the prefix ilk_.
 *
 *   ilk_atomic.h    C11 atomics on 8/32/64-bit and pointer-sized integers and raw pointers
 *   ilk_bits.h      test-and-set / test-and-clear of one bit, OSAtomic's bit numbering
 *   ilk_osatomic.h  the OSAtomic table (Add, Increment, ..., barrier and barrier-free)
 *   ilk_fence.h     fences, compiler barrier, spin-wait hint, thread yield
 *   ilk_futex.h     futex wait/wake/requeue, clocks, current thread id
 */
#ifndef CINTERLOCK_H
#define CINTERLOCK_H

#include "ilk_atomic.h"
#include "ilk_bits.h"
#include "ilk_fence.h"
#include "ilk_futex.h"
#include "ilk_osatomic.h"

#endif /* CINTERLOCK_H */
