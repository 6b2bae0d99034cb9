/*
 * ilk_node_pool.h — recycling of small fixed-size nodes through RCU grace periods, for
 * LockFreeStack (one node per element).
 *
 *   ilk_node_alloc(size)    a node of `size` bytes, 16-byte aligned: from this thread's cache,
 *                           else a batch from the global ready list of its size class, else
 *                           malloc. Never NULL.
 *   ilk_node_retire(node, size)
 *                           `node` (from ilk_node_alloc with the same size) is unlinked; it may
 *                           be reused once every read-side section that might hold it has
 *                           ended. Appends to this thread's retire batch; a full batch is
 *                           handed to call_rcu, whose callback (after a grace period) puts it
 *                           on the global ready list of its class, or frees it when that list
 *                           already holds ILK_NODE_POOL_READY_BYTES of nodes (memory stays bounded).
 *   ilk_node_free(node)     free a node nobody else can reach (a container's deinit).
 *
 * Why: malloc plus a deferred free costs ~30-100 ns per element and moves every node between
 * threads' arenas; recycling costs a few array operations per element and one call_rcu per
 * ILK_NODE_POOL_BATCH nodes. A thread reuses the nodes it retired itself first (once their
 * grace period is over), so nodes stay in the cache of the core that uses them; threads that
 * retire more than they allocate pass finished batches to a global ready list per class.
 *
 * Limit: a node becomes reusable only after a grace period, which liburcu's worker thread
 * completes; when that thread is descheduled (an oversubscribed machine), threads allocate
 * fresh nodes meanwhile. Pools that recycle a node at once (Concurrency Kit's ck_stack with a
 * free list, which avoids ABA with a generation-counted double-width CAS instead) do not pay
 * this, and win the push-then-pop workloads on an oversubscribed machine.
 *
 * Size classes: sizes 1..256 in steps of 16 (16 classes); larger nodes bypass the pool (malloc,
 * and retirement through ilk_rcu_retire).
 *
 * Synchronization table: alloc/retire/free from any thread, inside or outside read-side
 * sections (the ready-list pop takes its own read-side section, nested if need be).
 *
 * Reuse safety (no use-after-free, no ABA): a node re-enters circulation only through the
 * callback of a call_rcu made after it was retired, i.e. after a grace period that began after
 * it was unlinked. The ready lists are Treiber stacks of batches; a batch header is reachable
 * from a ready list only after such a grace period too (a header emptied by an allocating
 * thread becomes that thread's next retire batch, or is retired with ilk_rcu_retire), and the
 * pop reads `head->ready_next` inside a read-side section, so the pop's CAS cannot see a header
 * that left and came back (the ABA of the classic Treiber stack). ThreadSanitizer sees the
 * reuse ordered by: reader's unlock (release token) -> callback (acquire token) -> ready-list
 * push (release CAS) -> pop (acquire CAS) -> the new owner's writes.
 */
#ifndef ILK_NODE_POOL_H
#define ILK_NODE_POOL_H

#include <stddef.h>

#define ILK_NODE_POOL_CLASSES 16
#define ILK_NODE_POOL_BATCH 1022
#define ILK_NODE_POOL_READY_BYTES (8u << 20) /* node bytes a class's ready list may hold */

void *ilk_node_alloc(size_t size);
void ilk_node_retire(void *node, size_t size);
void ilk_node_free(void *node);

#endif /* ILK_NODE_POOL_H */
