/*
 * ilk_node_pool.h — recycling of small fixed-size nodes, for LockFreeStack (one node per
 * element). A node retired to the pool is reusable AT ONCE; its memory goes back to malloc only
 * after an RCU grace period.
 *
 *   ilk_node_alloc(size)    a node of `size` bytes, 16-byte aligned (size 0 is served as 1,
 *                           outside the pool): from this thread's cache of the size class,
 *                           else a full batch from the global ready list of the class, else
 *                           malloc. Never NULL.
 *   ilk_node_retire(node, size)
 *                           `node` (from ilk_node_alloc with the same size) is unlinked. It goes
 *                           into this thread's cache, where the next ilk_node_alloc of the class
 *                           may return it at once; the cache's overflow goes to the ready list
 *                           in batches, and what the ready list cannot hold
 *                           (ILK_NODE_POOL_READY_BYTES per class) is freed after a grace period.
 *   ilk_node_free(node)     free a node nobody can reach or still read: only for nodes made by
 *                           the large-node path (size 0 or over 256), never a pooled one.
 *
 * TYPE STABILITY, the contract that makes immediate reuse safe: memory that was ever a pooled
 * node of class c stays a node of class c, readable, until a grace period that began after it
 * was last retired. So a reader inside a read-side section that loaded a pointer to a node may
 * load the node's first word (`next`) at any later time in that section and read some node's
 * `next`: not freed memory, though maybe a newer value. The user must make such a stale read
 * harmless: LockFreeStack's head carries a generation count that every pop increments, so a
 * pop whose node was popped and reused meanwhile fails its double-width compare-and-swap
 * (LockFreeStack.swift, "ABA").
 *
 * Why at once: before, a retired node waited out a grace period, which liburcu's worker
 * completes in rounds separated by a 10 ms nap; on a loaded machine push found no reusable
 * node and malloc'ed 15-23 % of its nodes (20 % of LockFreeStack's samples beside the
 * neighbour process in glibc's malloc, Benchmarks/README.md "The stack beside the neighbour").
 * Concurrency Kit's ck_stack with a free list recycles at once the same way.
 *
 * Cache per thread and class (Bonwick's magazines: J. Bonwick, J. Adams, "Magazines and Vmem",
 * USENIX 2001): `loaded`, which alloc takes from and retire puts into (the inline fast paths
 * below), and `previous`, a full or empty batch kept beside it, so that a thread that allocates
 * and retires about equally moves a batch to or from the global lists at most once per
 * ILK_NODE_POOL_BATCH operations, never back and forth at a boundary. The fast paths are static
 * inline so that LockFreeStack's Swift code inlines them (the out-of-line calls cost about
 * 1.3 ns of a 15 ns push+pop); in an executable the thread-local accesses are one
 * %fs-relative load each. Alloc also prefetches the node the next alloc will return.
 *
 * Size classes: sizes 1..256 in steps of 16 (16 classes); larger nodes bypass the pool (malloc,
 * and retirement through ilk_rcu_retire).
 *
 * Synchronization table: alloc/retire from any thread, inside or outside read-side sections
 * (the global lists' pops take their own read-side section, nested if need be).
 */
#ifndef ILK_NODE_POOL_H
#define ILK_NODE_POOL_H

#include <stddef.h>

#include "ilk_rcu.h"

#define ILK_NODE_POOL_CLASSES 16
#define ILK_NODE_POOL_BATCH 1022
#define ILK_NODE_POOL_READY_BYTES (8u << 20) /* node bytes a class's ready list may hold */

/* A batch of nodes of one size class (ilk_node_pool.c). Its layout is here only so that the
 * fast paths below can be inlined into the Swift code that calls them. */
struct ilk_pool_batch {
    struct rcu_head head; /* first: call_rcu hands it back */
    struct ilk_pool_batch *next;
    unsigned klass;
    unsigned count;
    void *nodes[ILK_NODE_POOL_BATCH];
};

/* This thread's loaded batch per size class, which alloc takes from and retire puts into
 * (defined in ilk_node_pool.c; only this thread touches it). */
extern __thread struct ilk_pool_batch *ilk_pool_loaded[ILK_NODE_POOL_CLASSES];

/* The out-of-line halves: an empty or full loaded batch (or none yet), large nodes. */
void *ilk_node_alloc_slow(size_t size);
void ilk_node_retire_slow(void *node, size_t size);
void ilk_node_free(void *node);
/* For tests: how many nodes of `size`'s class the calling thread's cache holds. */
unsigned ilk_node_pool_cached_nodes(size_t size);
/* For tests: how many pooled nodes the calling thread has malloc'ed. */
unsigned long ilk_node_pool_node_mallocs(void);
/* For tests: how many batch headers the calling thread has malloc'ed (the others it took from
 * the global list of empty headers, or were its own spare). */
unsigned long ilk_node_pool_header_mallocs(void);

static inline unsigned ilk_node_pool_class(size_t size) {
    return (unsigned)((size + 15) / 16) - 1; /* size 1...256 -> class 0...15 */
}

static inline __attribute__((always_inline)) void *ilk_node_alloc(size_t size) {
    if (__builtin_expect(size - 1 < ILK_NODE_POOL_CLASSES * 16, 1)) {
        struct ilk_pool_batch *batch = ilk_pool_loaded[ilk_node_pool_class(size)];
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
        struct ilk_pool_batch *batch = ilk_pool_loaded[ilk_node_pool_class(size)];
        if (__builtin_expect(batch != NULL && batch->count < ILK_NODE_POOL_BATCH, 1)) {
            batch->nodes[batch->count++] = node;
            return;
        }
    }
    ilk_node_retire_slow(node, size);
}

#endif /* ILK_NODE_POOL_H */
