/*
 * CInterlock — the C shim under Interlock. Every symbol carries the prefix ilk_.
 *
 *   ilk_atomic.h    C11 atomics on 8/32/64-bit and pointer-sized integers and raw pointers
 *   ilk_bits.h      test-and-set / test-and-clear of one bit, OSAtomic's bit numbering
 *   ilk_osatomic.h  the OSAtomic table (Add, Increment, ..., barrier and barrier-free)
 *   ilk_fence.h     fences, compiler barrier, spin-wait hint, thread yield
 *   ilk_futex.h     futex wait/wake/requeue, clocks, current thread id
 *   ilk_membarrier.h the heavy half of an asymmetric fence (membarrier), for ReadWriteLock
 *   ilk_flag_asm.h  when the flag-branching assembly below may run (not under ThreadSanitizer)
 *   ilk_mutex.h     the futex mutex word's release: a decrement branching on its flags
 *   ilk_rwlock.h    ReadWriteLock's memory layout (writer words and reader count apart)
 *   ilk_rcu.h       liburcu (urcu-bp) read-side sections and batched deferred frees
 *   ilk_node_pool.h recycling of small nodes, at once; freed after RCU grace periods (LockFreeStack)
 *   ilk_block_cache.h a cache of large blocks past their grace period (LockFreeQueue's segments)
 *   ilk_demand.h    recent demand, which bounds what the block cache keeps
 *   ilk_sync.h      the per-object lock records of synchronized(_:_:)
 *   ilk_fs.h        statfs(2)'s file system type, for DistributedLock's choice of recipe
 *   ilk_osqueue.h   Darwin's OSQueueHead/OSFifoQueueHead and a double-width CAS (InterlockCompat,
 *                   LockFreeStack, the node pool)
 */
#ifndef CINTERLOCK_H
#define CINTERLOCK_H

#include "ilk_atomic.h"
#include "ilk_bits.h"
#include "ilk_fence.h"
#include "ilk_futex.h"
#include "ilk_membarrier.h"
#include "ilk_flag_asm.h"
#include "ilk_mutex.h"
#include "ilk_rwlock.h"
#include "ilk_osatomic.h"
#include "ilk_rcu.h"
#include "ilk_node_pool.h"
#include "ilk_block_cache.h"
#include "ilk_demand.h"
#include "ilk_sync.h"
#include "ilk_fs.h"
#include "ilk_lockorder.h"
#include "ilk_osqueue.h"

#endif /* CINTERLOCK_H */
