/*
 * ilk_block_cache.h — a cache of large blocks past their grace period, for the segments of
 * LockFreeQueue (16 KiB for a queue of Int, one per 1,024 elements), that keeps what the
 * program recently used and gives the rest back. Its other users: a queue's segments that no
 * other thread reached (an enqueuer's unlinked one, a destroyed queue's) go in by
 * ilk_block_cache_put at once, and the headers of the RCU retirement batches (about 1 KiB,
 * ilk_rcu.c) come from it and go back to it.
 *
 *   ilk_block_cache_alloc_zeroed(size, align)
 *                           a zeroed block of `size` bytes aligned to `align`: a cached one of
 *                           the same size and alignment, else a new one (ilk_block_alloc_zeroed).
 *                           Never NULL. The first call for a (size, align) claims one of the
 *                           cache's ILK_BLOCK_CACHE_SIZES slots for it, if one is free. Counts
 *                           as demand, and frees one cached block when the slot holds more
 *                           than its retention (below).
 *   ilk_rcu_retire_cached(block, size, align)   (ilk_rcu.h)
 *                           as ilk_rcu_retire, but after the grace period the block goes to the
 *                           cache when its (size, align) has a slot under its retention; else
 *                           it is freed.
 *   ilk_block_cache_put(block, size, align)
 *                           keeps `block` (owned by the caller, reachable by no other thread)
 *                           when its slot is under its retention: 1; else 0 and the caller
 *                           still owns it.
 *   ilk_block_cache_count(size, align)          blocks cached for (size, align) (tests).
 *
 * Why: a block of 1 KiB or more is a large request for glibc's malloc, and a large request
 * first merges every small chunk freed into the arena's fast bins (malloc_consolidate), a cost
 * that grows with what the rest of the program has freed; freeing such a block from liburcu's
 * worker merges them too, under the arena's lock, which the queue's threads then wait for.
 * Beside two busy loops, after the other queue benchmarks had run in the process, `perf` put
 * 23-30 % of LockFreeQueue's samples in malloc, most under the segment's allocation. A queue
 * whose depth swings (a burst of a million elements, then drained) needs hundreds of segments
 * at each swing: with a fixed 128 KiB per size, 157 of 7,813 segments came from the cache, and
 * 44 % of the queue's samples beside a neighbour process were in malloc (Benchmarks/README.md,
 * "The lock-free containers beside the neighbour").
 *
 * Retention (per slot): the blocks allocated in the current epoch or the one before (an epoch
 * is about 1.07 s: ilk_demand.h), at least ILK_BLOCK_CACHE_BYTES' worth
 * and at most ILK_BLOCK_CACHE_MAX_BYTES' worth (each at least one block, at most
 * ILK_BLOCK_CACHE_CELLS). A program that cycled through N blocks in the last one to two
 * seconds finds up to N of them cached when it needs them again; once it needs fewer, puts are
 * refused and every allocation frees one block beyond the retention, so the cache shrinks to
 * the floor within two epochs of activity. A program that stops using queues altogether keeps
 * what was cached until its next allocation or retirement of a block of that size.
 * Memory bound: ILK_BLOCK_CACHE_SIZES * ILK_BLOCK_CACHE_MAX_BYTES (128 MiB) in theory; a
 * program with one kind of segment holds at most 16 MiB, and only after it used that much in
 * the last two epochs.
 *
 * Layout: per slot, a key (size and alignment; 0 = unclaimed), the demand of two epochs, a
 * count of cached blocks, and ILK_BLOCK_CACHE_CELLS cells, each NULL or a block.
 * Put claims an empty cell with a compare-and-swap (release: the block's history, and the
 * grace period the callback acquired, go with it); take empties a full cell with an exchange
 * (acquire). A block's owner is whoever holds it outside the cells, so there is no ABA and
 * nothing in a cached block is read by anyone else (no link is stored in it). The count, the
 * demand and the epoch steer the policy only (relaxed): a race among them misjudges the
 * retention by a block or two, never loses or duplicates one.
 * Slots: the first ILK_BLOCK_CACHE_SIZES (size, align) pairs to allocate through the cache keep
 * a slot for the life of the process; blocks of any other pair are malloc'ed and freed as
 * before (a program with more kinds of queue segments caches the first eight kinds).
 * fork() without exec: the child finds every cell whole (single-word updates); a block a
 * vanished thread had taken out is lost to the child (a copy), never used twice.
 */
#ifndef ILK_BLOCK_CACHE_H
#define ILK_BLOCK_CACHE_H

#include <stddef.h>

#define ILK_BLOCK_CACHE_SIZES 8
#define ILK_BLOCK_CACHE_CELLS 1024
#define ILK_BLOCK_CACHE_BYTES (128u * 1024u)
#define ILK_BLOCK_CACHE_MAX_BYTES 16777216u /* 16 MiB */

void *ilk_block_cache_alloc_zeroed(size_t size, size_t align);
int ilk_block_cache_put(void *block, size_t size, size_t align);
unsigned ilk_block_cache_count(size_t size, size_t align);

#endif /* ILK_BLOCK_CACHE_H */
