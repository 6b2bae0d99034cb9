/*
 * ilk_node_pool.h — recycling of small fixed-size nodes through RCU grace periods, for
 * LockFreeStack (one node per element).
 *
 *   ilk_node_alloc(size)    a node of `size` bytes, 16-byte aligned (size 0 is served as 1,
 *                           outside the pool): from this thread's cache,
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
 * The fast paths of alloc and retire (take the next node of this thread's batch; append to
 * this thread's retire batch) are static inline, so that the Swift code of LockFreeStack
 * inlines them: the out-of-line calls cost about 1.3 ns of a 15 ns push+pop. For that the
 * batch layout and the per-thread batch pointers are declared here; in an executable the
 * linker relaxes their thread-local accesses to one %fs-relative load (code linked into a
 * shared library keeps a __tls_get_addr call per access, as the out-of-line version did).
 * Alloc also prefetches the node the next alloc will return.
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
 * thread becomes a retire batch, its own or another thread's through the global list of empty
 * headers, or is retired with ilk_rcu_retire), and the
 * pop reads the head batch's `next` inside a read-side section, so the pop's CAS cannot see a header
 * that left and came back (the ABA of the classic Treiber stack). ThreadSanitizer sees the
 * reuse ordered by: reader's unlock (release token) -> callback (acquire token) -> ready-list
 * push (release CAS) -> pop (acquire CAS) -> the new owner's writes.
 */
#ifndef ILK_NODE_POOL_H
#define ILK_NODE_POOL_H

#include <stddef.h>

#include "ilk_rcu.h"

#define ILK_NODE_POOL_CLASSES 16
#define ILK_NODE_POOL_BATCH 1022
#define ILK_NODE_POOL_READY_BYTES (8u << 20) /* node bytes a class's ready list may hold */

/* A batch of nodes of one size class (ilk_node_pool.c describes its states). Its layout is
 * here only so that the fast paths below can be inlined into the Swift code that calls them. */
struct ilk_pool_batch {
    struct rcu_head head; /* first: call_rcu hands it back */
    struct ilk_pool_batch *next;
    int state;
    unsigned klass;
    unsigned count;
    void *nodes[ILK_NODE_POOL_BATCH];
};

/* This thread's batch to allocate from, and batch collecting retired nodes, per size class
 * (defined in ilk_node_pool.c; only this thread touches them). */
extern __thread struct ilk_pool_batch *ilk_pool_alloc_batch[ILK_NODE_POOL_CLASSES];
extern __thread struct ilk_pool_batch *ilk_pool_retire_batch[ILK_NODE_POOL_CLASSES];

/* The out-of-line halves: a new batch to allocate from, a full retire batch, large nodes. */
void *ilk_node_alloc_slow(size_t size);
void ilk_node_retire_slow(void *node, size_t size);
void ilk_node_free(void *node);
/* For tests: how many retired batches of `size`'s class the calling thread keeps waiting for
 * reuse (its waiting FIFO). */
unsigned ilk_node_pool_waiting_batches(size_t size);
/* For tests: how many batch headers the calling thread has malloc'ed (the others it took from
 * the global list of empty headers, or were its own spare). */
unsigned long ilk_node_pool_header_mallocs(void);

static inline unsigned ilk_node_pool_class(size_t size) {
    return (unsigned)((size + 15) / 16) - 1; /* size 1...256 -> class 0...15 */
}

static inline __attribute__((always_inline)) void *ilk_node_alloc(size_t size) {
    if (__builtin_expect(size - 1 < ILK_NODE_POOL_CLASSES * 16, 1)) {
        struct ilk_pool_batch *batch = ilk_pool_alloc_batch[ilk_node_pool_class(size)];
        if (__builtin_expect(batch != NULL && batch->count > 0, 1)) {
            unsigned count = --batch->count;
            /* The next push's node: start fetching it now, so that the stores that fill it
             * do not miss the cache just before the CAS that publishes it (a locked
             * instruction waits for them). On x86-64's default target clang emits a read
             * prefetch here (`prefetcht0`: the target lacks the `prfchw` feature); a true
             * write prefetch (`prefetchw` in inline assembly) measured slower,
             * LockFreeStack 2P/2C 28.9-29.5 against 30.6-32.8 ns in three alternations
             * (Benchmarks/README.md, "Two write prefetches, measured and not adopted"). */
            if (count > 0) __builtin_prefetch(batch->nodes[count - 1], 1, 3);
            return batch->nodes[count];
        }
    }
    return ilk_node_alloc_slow(size);
}

static inline __attribute__((always_inline)) void ilk_node_retire(void *node, size_t size) {
    if (__builtin_expect(size - 1 < ILK_NODE_POOL_CLASSES * 16, 1)) {
        struct ilk_pool_batch *batch = ilk_pool_retire_batch[ilk_node_pool_class(size)];
        /* The last slot is left to the slow path, which hands the full batch on. */
        if (__builtin_expect(batch != NULL && batch->count < ILK_NODE_POOL_BATCH - 1, 1)) {
            batch->nodes[batch->count++] = node;
            return;
        }
    }
    ilk_node_retire_slow(node, size);
}

#endif /* ILK_NODE_POOL_H */
