/*
 * ilk_sync.h — the memory of `synchronized(_:_:)` (Objective-C's @synchronized): the table of
 * per-object lock records, the layout of a record, and each thread's stack of the objects it
 * holds. The algorithm is described in Sources/Interlock/Synchronized/SynchronizedTable.swift;
 * this header holds only layout and the few accesses Swift cannot make itself (a C
 * `_Thread_local`, a zero-initialised table in static storage).
 *
 *   ilk_sync_bucket_at(i)        bucket i of ILK_SYNC_BUCKET_COUNT (a power of two), each on its
 *                                own 128-byte block (the adjacent-line prefetcher's unit on
 *                                x86-64, the line of recent arm64 cores), zeroed at load time:
 *                                no lazy initialisation on the hot path.
 *   ilk_sync_bucket_lock/head_word(b), ilk_sync_record_<field>(r)
 *                                the address of one field of a bucket or a record.
 *   ilk_sync_held_contains(obj)  whether `obj` is on the calling thread's held stack.
 *   ilk_sync_held_push(obj) / ilk_sync_held_pop()
 *                                the calling thread's stack of the objects it has taken
 *                                through the table, innermost last. Only the first
 *                                ILK_SYNC_HELD_SLOTS entries are stored; deeper pushes only
 *                                count, and a lookup misses them (the table's owner check then
 *                                answers instead). ilk_sync_held_count() says how many
 *                                pushes are outstanding (0 outside every body; tests).
 *   ilk_sync_counter_allocated() / ilk_sync_counter_freed()
 *                                records ever allocated, and ever unlinked and retired (freed
 *                                after an RCU grace period) (tests, diagnostics).
 *
 *   ilk_sync_hook_word()         a word that is 0 unless a test has armed the table's walk hook
 *                                (SynchronizedTable.swift, `_walkHook`).
 *
 * Synchronization table: a record's `word` and `owner` are read and written only with atomics;
 * its `object` and `next`, and a bucket's `head`, are written only with the bucket's lock word
 * held (and `object` only while the record's word is DEAD or before it is published) but read
 * without it by lock-free walkers, so with atomics too; `depth` only by the thread that holds
 * the record; `garbage` only by the thread that unlinked the record. The held stack is
 * thread-local and needs none. The counters and the hook word are relaxed atomics.
 */
#ifndef ILK_SYNC_H
#define ILK_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ilk_atomic.h"

/* Buckets in the table: 128, each 128 bytes (16 KiB of zeroed static memory). */
#define ILK_SYNC_BUCKET_SHIFT 7
#define ILK_SYNC_BUCKET_COUNT 128

_Static_assert(ILK_SYNC_BUCKET_COUNT == 1 << ILK_SYNC_BUCKET_SHIFT, "synchronized: bucket count");

/* Objects a thread's held stack stores (nesting on distinct objects deeper than this is
 * correct but takes the table's path for the deeper ones). */
#define ILK_SYNC_HELD_SLOTS 8

/* One object's lock: a futex word counting the record's users and holding its lock state, the
 * holder's id and depth, and its place in a bucket list. 64 bytes and 64-byte aligned (the
 * allocation asks for it), so two records' words never share a line. */
typedef struct ilk_sync_record {
    uint32_t word;                    /* DEAD (bit 31) | users (bits 2-30) | lock (bits 0-1) */
    uint32_t owner;                   /* kernel tid of the holder, 0 when free (relaxed atomics) */
    uint32_t depth;                   /* the holder's table acquisitions (plain, holder only) */
    uint32_t pad0;
    uintptr_t object;                 /* the key: the object's address (atomics) */
    struct ilk_sync_record *next;     /* the bucket list (atomics) */
    struct ilk_sync_record *garbage;  /* the unlinking thread's list of records to retire */
    uint8_t pad[64 - 40];
} ilk_sync_record;

_Static_assert(sizeof(ilk_sync_record) == 64, "synchronized: record layout");

typedef struct {
    uint32_t lock;          /* _MutexWord guarding writes of `head` and the records' `object`, `next` */
    uint32_t pad0;
    ilk_sync_record *head;  /* the bucket's records, in use or spare */
    uint8_t pad1[128 - 16];
} ilk_sync_bucket;  /* 128 bytes; the table is 128-byte aligned (Swift cannot import an
                        over-aligned struct, so the alignment is the array's) */

_Static_assert(sizeof(ilk_sync_bucket) == 128, "synchronized: bucket layout");

typedef struct {
    uint32_t count;  /* table acquisitions of this thread in progress, stored or not */
    uint32_t pad;
    uintptr_t objects[ILK_SYNC_HELD_SLOTS];
} ilk_sync_held;

typedef struct {
    uint64_t allocated;  /* records ever allocated */
    uint64_t freed;      /* records ever unlinked and handed to RCU to be freed */
    uint32_t hook;       /* non-zero while a test's walk hook is armed */
    uint32_t pad;
} ilk_sync_counter_words;

/* Defined in ilk_sync.c. */
extern ilk_sync_bucket ilk_sync_buckets[ILK_SYNC_BUCKET_COUNT] __attribute__((aligned(128)));
extern ilk_sync_counter_words ilk_sync_counter_storage;
extern _Thread_local ilk_sync_held ilk_sync_held_by_thread;

ILK_INLINE ilk_sync_bucket *ilk_sync_bucket_at(uint32_t index) {
    return &ilk_sync_buckets[index & (ILK_SYNC_BUCKET_COUNT - 1)];
}

/* Field addresses. Swift code reaches every field through these, never as `pointee.field` of a
 * whole struct: Swift (and its ThreadSanitizer instrumentation) treats an access to a field of
 * `pointee` as an access to the whole struct, which would overlap the other fields' atomics. */
ILK_INLINE uint32_t *ilk_sync_bucket_lock(ilk_sync_bucket *bucket) { return &bucket->lock; }
ILK_INLINE uint32_t *ilk_sync_record_word(ilk_sync_record *record) { return &record->word; }
ILK_INLINE uint32_t *ilk_sync_record_owner(ilk_sync_record *record) { return &record->owner; }
ILK_INLINE uint32_t *ilk_sync_record_depth(ilk_sync_record *record) { return &record->depth; }
ILK_INLINE uintptr_t *ilk_sync_record_object(ilk_sync_record *record) { return &record->object; }
/* `head` and `next` as untyped pointer words, for ilk_atomic_load_ptr / ilk_atomic_store_ptr. */
ILK_INLINE ilk_ptr *ilk_sync_bucket_head_word(ilk_sync_bucket *bucket) { return (ilk_ptr *)&bucket->head; }
ILK_INLINE ilk_ptr *ilk_sync_record_next_word(ilk_sync_record *record) { return (ilk_ptr *)&record->next; }
ILK_INLINE ilk_sync_record **ilk_sync_record_garbage(ilk_sync_record *record) { return &record->garbage; }

ILK_INLINE uint64_t *ilk_sync_counter_allocated(void) { return &ilk_sync_counter_storage.allocated; }
ILK_INLINE uint64_t *ilk_sync_counter_freed(void) { return &ilk_sync_counter_storage.freed; }
ILK_INLINE uint32_t *ilk_sync_hook_word(void) { return &ilk_sync_counter_storage.hook; }

ILK_INLINE bool ilk_sync_held_contains(uintptr_t object) {
    ilk_sync_held *held = &ilk_sync_held_by_thread;
    uint32_t stored = held->count < ILK_SYNC_HELD_SLOTS ? held->count : ILK_SYNC_HELD_SLOTS;
    for (uint32_t i = 0; i < stored; i++) {
        if (held->objects[i] == object) return true;
    }
    return false;
}

ILK_INLINE void ilk_sync_held_push(uintptr_t object) {
    ilk_sync_held *held = &ilk_sync_held_by_thread;
    if (held->count < ILK_SYNC_HELD_SLOTS) held->objects[held->count] = object;
    held->count++;
}

ILK_INLINE void ilk_sync_held_pop(void) { ilk_sync_held_by_thread.count--; }

/* How many table acquisitions the calling thread has in progress (tests). */
ILK_INLINE uint32_t ilk_sync_held_count(void) { return ilk_sync_held_by_thread.count; }

#endif /* ILK_SYNC_H */
