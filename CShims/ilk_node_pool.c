/*
 * ilk_node_pool.c — per-thread node caches in front of global lists of full batches (see
 * include/ilk_node_pool.h for the contract, type stability, and why a node is reusable at once).
 *
 * State per thread and size class c (only that thread touches them):
 *   loaded[c]    the batch alloc takes from and retire puts into (count = nodes held)
 *   previous[c]  a batch kept beside it, full or empty (or none)
 *   spare        at most one empty header, for the next batch this thread needs
 * Global, per class (each on its own 128-byte line): `ready`, a Treiber stack of full batches,
 * for threads that allocate more than they retire (producers), with an approximate count.
 * Global, one for all classes: `empty`, a Treiber stack of at most ILK_POOL_EMPTY_CAP empty
 * headers, which threads take before they malloc one.
 *
 * Transitions (Bonwick's magazine layer, with `loaded` and `previous`):
 *   alloc, loaded empty:  previous full -> swap them; else a full batch from `ready` becomes
 *                         loaded (the empty one goes to the spare or `empty`); else malloc.
 *   retire, loaded full:  previous empty (or none) -> swap; else previous goes to `ready`
 *                         (full) and an empty header (spare, `empty`, malloc) becomes loaded.
 * A balanced thread (the push-then-pop patterns) reuses the nodes it popped itself, hot in its
 * core's cache, and touches the global lists at most once per ILK_NODE_POOL_BATCH operations.
 * A consumer hands a full batch to `ready` every ILK_NODE_POOL_BATCH pops and holds at most two
 * batches; a producer takes them, so nodes flow from consumers to producers without malloc and
 * without waiting for a grace period (before, the batch waited for one: 15-23 % of a loaded
 * run's nodes were malloc'ed meanwhile, include/ilk_node_pool.h).
 *
 * Memory stays bounded: per thread and class two batches; per class a ready list of at most
 * ILK_NODE_POOL_READY_BYTES (a soft cap, read relaxed: a few batches over it change nothing but
 * memory); a full batch the ready list cannot take is freed after a grace period
 * (ilk_pool_free_later: type stability); so are the empty headers over ILK_POOL_EMPTY_CAP.
 * Threads hand their batches on at exit.
 *
 * Why the empty headers circulate: a header is 8 KiB, a large request for glibc's malloc, and
 * a large request first merges every small chunk freed into the arena's fast bins
 * (malloc_consolidate), a cost that grows with what the rest of the program has freed: beside
 * two busy loops, `perf` once found 11 % of LockFreeStack's samples in malloc_consolidate under
 * header mallocs (Benchmarks/README.md, "The lock-free containers beside a load").
 *
 * The global lists and ABA: each list's head is a (pointer, generation) pair changed only by
 * the double-width compare-and-swap ilk_dwcas (include/ilk_osqueue.h); every pop increments
 * the generation, so a pop whose top header left the list and came back meanwhile fails its
 * CAS. A pop loads the top header's `next` inside a read-side section: headers are freed only
 * after a grace period (ilk_rcu_retire, or in ilk_pool_free_later's callback), never while a
 * pop may load them. `next` is a relaxed atomic: a stale pop may load it while the header's new
 * owner stores it (the pop's CAS then fails). Orderings: ilk_dwcas is sequentially consistent
 * (a full barrier), so a pusher's writes to the batch and its nodes happen before the popper's
 * reads; the first loads of a pop are acquire (they only guess: the CAS validates).
 *
 * fork() without exec: the pool has no lock of its own, and its global lists change by single
 * double-width compare-and-swaps, so the child finds each list whole (on the striped-lock form
 * of ilk_dwcas the RCU fork handlers hold every stripe across the fork, ilk_rcu.c). The child
 * loses what the vanished threads held: their caches and a batch one of them had popped or was
 * about to push; never reused, never freed twice. A batch the parent handed to call_rcu is
 * freed by the child's new worker (ilk_rcu.c registers liburcu's fork hooks).
 */
#include "include/ilk_node_pool.h"
#include "include/ilk_osqueue.h"
#include "include/ilk_rcu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Empty headers the global list keeps: 256 (2 MiB). With 64, beside busy loops, consumers
 * still malloc'ed headers: 9 % of LockFreeStack's samples in malloc_consolidate under the
 * header path, against 2.5 % with 256. */
#define ILK_POOL_EMPTY_CAP 256

/* A global Treiber stack of batch headers (a ready list, or the empty headers). */
struct ilk_pool_list {
    struct ilk_pool_batch *head; /* with `generation`: the pair ilk_dwcas changes */
    uintptr_t generation;
    long count;
    char padding[128 - 2 * sizeof(void *) - sizeof(long)];
} __attribute__((aligned(128)));

_Static_assert(sizeof(struct ilk_pool_list) == 128, "one list per 128-byte line");

static struct ilk_pool_list ilk_pool_ready[ILK_NODE_POOL_CLASSES];
static struct ilk_pool_list ilk_pool_empty;

__thread struct ilk_pool_batch *ilk_pool_loaded[ILK_NODE_POOL_CLASSES];
static __thread struct ilk_pool_batch *ilk_pool_previous[ILK_NODE_POOL_CLASSES];
static __thread struct ilk_pool_batch *ilk_pool_spare;
static __thread int ilk_pool_thread_known;
static __thread unsigned long ilk_pool_header_mallocs; /* for tests */
static __thread unsigned long ilk_pool_node_mallocs;   /* for tests */
static pthread_key_t ilk_pool_exit_key;
static pthread_once_t ilk_pool_exit_once = PTHREAD_ONCE_INIT;

static void ilk_pool_oom(size_t size) {
    fprintf(stderr, "Interlock: out of memory allocating %zu bytes for a lock-free stack node\n",
            size);
    abort();
}

/* Pushes `batch`, owned by the caller, on `list`. */
static void ilk_pool_push(struct ilk_pool_list *list, struct ilk_pool_batch *batch) {
    __atomic_fetch_add(&list->count, 1, __ATOMIC_RELAXED); /* approximate: see the caps */
    /* Relaxed guesses: the CAS validates them, and reports the pair it found. */
    uintptr_t generation = __atomic_load_n(&list->generation, __ATOMIC_RELAXED);
    uintptr_t top = (uintptr_t)__atomic_load_n(&list->head, __ATOMIC_RELAXED);
    do {
        /* Relaxed atomic: a stale pop may still load it (see "The global lists and ABA"). */
        __atomic_store_n(&batch->next, (struct ilk_pool_batch *)top, __ATOMIC_RELAXED);
        /* A push keeps the generation: only pops must change it. */
    } while (!ilk_dwcas(&list->head, &top, &generation, (uintptr_t)batch, generation));
}

/* Pops a header from `list`, or returns NULL. */
static struct ilk_pool_batch *ilk_pool_pop(struct ilk_pool_list *list) {
    /* Relaxed peek: skip the read-side section when the list is (probably) empty. */
    if (__atomic_load_n(&list->head, __ATOMIC_RELAXED) == NULL) return NULL;
    ilk_rcu_read_lock();
    /* Acquire, generation first: a pair torn by a change between the two loads holds an old
     * generation, so the CAS fails (generations only grow). */
    uintptr_t generation = __atomic_load_n(&list->generation, __ATOMIC_ACQUIRE);
    uintptr_t top = (uintptr_t)__atomic_load_n(&list->head, __ATOMIC_ACQUIRE);
    while (top != 0) {
        /* Inside the section: the header is not freed before we unlock. */
        struct ilk_pool_batch *next =
            __atomic_load_n(&((struct ilk_pool_batch *)top)->next, __ATOMIC_RELAXED);
        if (ilk_dwcas(&list->head, &top, &generation, (uintptr_t)next, generation + 1)) break;
    }
    ilk_rcu_read_unlock();
    if (top != 0) __atomic_fetch_sub(&list->count, 1, __ATOMIC_RELAXED);
    return (struct ilk_pool_batch *)top;
}

/* Keeps an empty header (owned by the caller) for a later batch, or disposes of it when the
 * empty list is full: frees it when no pop can still load it (`settled`: past a grace period
 * since it last left a list), else retires it through a grace period. */
static void ilk_pool_give_empty(struct ilk_pool_batch *header, int settled) {
    /* Relaxed: a soft cap, as in ilk_pool_hand_on. */
    if (__atomic_load_n(&ilk_pool_empty.count, __ATOMIC_RELAXED) >= ILK_POOL_EMPTY_CAP) {
        if (settled) {
            free(header);
        } else {
            ilk_rcu_retire(header, sizeof *header);
        }
        return;
    }
    ilk_pool_push(&ilk_pool_empty, header);
}

/* Runs on liburcu's call_rcu worker after a grace period: frees a batch's nodes. */
static void ilk_pool_free_nodes(struct rcu_head *head) {
    struct ilk_pool_batch *batch = (struct ilk_pool_batch *)head;
#ifdef ILK_TSAN
    __tsan_acquire(&ilk_rcu_tsan_token); /* pairs with readers' unlocks and the hand-over */
#endif
    for (unsigned i = 0; i < batch->count; i++) free(batch->nodes[i]);
    batch->count = 0;
    ilk_pool_give_empty(batch, 1);
}

/* Frees a full batch's nodes after a grace period: a stale reader (a pop inside its read-side
 * section) may still load one of them (type stability). */
static void ilk_pool_free_later(struct ilk_pool_batch *batch) {
#ifdef ILK_TSAN
    __tsan_release(&ilk_rcu_tsan_token); /* this thread's accesses to the nodes */
#endif
    ilk_rcu_call(&batch->head, ilk_pool_free_nodes); /* call_rcu, fork-safe */
}

/* Hands on a non-empty batch the caller owns: to its class's ready list, or, when that list
 * already holds its cap, to be freed after a grace period. */
static void ilk_pool_hand_on(struct ilk_pool_batch *batch) {
    struct ilk_pool_list *ready = &ilk_pool_ready[batch->klass];
    long cap = (long)(ILK_NODE_POOL_READY_BYTES / ((batch->klass + 1u) * 16u * ILK_NODE_POOL_BATCH));
    if (cap < 4) cap = 4;
    /* Relaxed: a soft cap; a few batches over or under it change nothing but memory. */
    if (__atomic_load_n(&ready->count, __ATOMIC_RELAXED) >= cap) {
        ilk_pool_free_later(batch);
    } else {
        ilk_pool_push(ready, batch);
    }
}

/* Disposes of a batch a thread held: full or partial ones are handed on, empty ones kept. */
static void ilk_pool_release(struct ilk_pool_batch *batch) {
    if (batch == NULL) return;
    if (batch->count > 0) {
        ilk_pool_hand_on(batch);
    } else {
        ilk_pool_give_empty(batch, 0);
    }
}

static void ilk_pool_thread_exit(void *value) {
    (void)value;
    for (unsigned c = 0; c < ILK_NODE_POOL_CLASSES; c++) {
        ilk_pool_release(ilk_pool_loaded[c]);
        ilk_pool_loaded[c] = NULL;
        ilk_pool_release(ilk_pool_previous[c]);
        ilk_pool_previous[c] = NULL;
    }
    if (ilk_pool_spare != NULL) {
        ilk_pool_give_empty(ilk_pool_spare, 0);
        ilk_pool_spare = NULL;
    }
    ilk_rcu_flush();
    ilk_pool_thread_known = 0;
}

static void ilk_pool_make_exit_key(void) {
    if (pthread_key_create(&ilk_pool_exit_key, ilk_pool_thread_exit) != 0) {
        fprintf(stderr, "Interlock: pthread_key_create failed for the node pool\n");
        abort();
    }
}

/* Arms the destructor that hands this thread's batches on at exit. */
static void ilk_pool_know_thread(void) {
    if (ilk_pool_thread_known) return;
    pthread_once(&ilk_pool_exit_once, ilk_pool_make_exit_key);
    (void)pthread_setspecific(ilk_pool_exit_key, (void *)1);
    ilk_pool_thread_known = 1;
}

/* An empty header for class c: the spare, one from the empty list, or a new one. */
static struct ilk_pool_batch *ilk_pool_header(unsigned c) {
    struct ilk_pool_batch *batch = ilk_pool_spare;
    if (batch != NULL) {
        ilk_pool_spare = NULL;
    } else if ((batch = ilk_pool_pop(&ilk_pool_empty)) == NULL) {
        batch = malloc(sizeof *batch);
        if (batch == NULL) ilk_pool_oom(sizeof *batch);
        ilk_pool_header_mallocs++;
    }
    batch->klass = c;
    batch->count = 0;
    return batch;
}

/* Keeps an empty header: as this thread's spare, or on the empty list. It may have left a list
 * a moment ago (a stale pop may still load its `next`), so it is not freed here. */
static void ilk_pool_keep_empty(struct ilk_pool_batch *header) {
    if (ilk_pool_spare == NULL) {
        ilk_pool_spare = header;
    } else {
        ilk_pool_give_empty(header, 0);
    }
}

void *ilk_node_alloc_slow(size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) return ilk_block_alloc(size == 0 ? 1 : size, 16);
    /* The inline fast path found this thread's loaded batch of the class empty or missing. */
    unsigned c = ilk_node_pool_class(size);
    ilk_pool_know_thread();
    struct ilk_pool_batch *loaded = ilk_pool_loaded[c];
    struct ilk_pool_batch *previous = ilk_pool_previous[c];
    if (previous != NULL && previous->count > 0) {
        ilk_pool_loaded[c] = previous; /* swap: the empty one stays beside it */
        ilk_pool_previous[c] = loaded;
        return previous->nodes[--previous->count];
    }
    struct ilk_pool_batch *full = ilk_pool_pop(&ilk_pool_ready[c]);
    if (full != NULL) {
        /* A ready batch is never empty. Keep one empty header as `previous` for the next
         * retirements; a second goes to the spare or the empty list. */
        if (previous == NULL) {
            ilk_pool_previous[c] = loaded;
        } else if (loaded != NULL) {
            ilk_pool_keep_empty(loaded);
        }
        ilk_pool_loaded[c] = full;
        return full->nodes[--full->count];
    }
    ilk_pool_node_mallocs++;
    void *node = malloc((size_t)(c + 1) * 16);
    if (node == NULL) ilk_pool_oom(size);
    return node;
}

void ilk_node_retire_slow(void *node, size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) {
        ilk_rcu_retire(node, size == 0 ? 1 : size);
        return;
    }
    /* The inline fast path found this thread's loaded batch of the class full or missing. */
    unsigned c = ilk_node_pool_class(size);
    ilk_pool_know_thread();
    struct ilk_pool_batch *loaded = ilk_pool_loaded[c];
    struct ilk_pool_batch *previous = ilk_pool_previous[c];
    if (loaded == NULL) {
        loaded = ilk_pool_loaded[c] = ilk_pool_header(c);
    } else if (previous != NULL && previous->count == 0) {
        ilk_pool_loaded[c] = previous; /* swap: the full one stays beside it */
        ilk_pool_previous[c] = loaded;
        loaded = previous;
    } else {
        /* Both full (or no previous): the full previous goes to the producers. */
        if (previous != NULL) ilk_pool_hand_on(previous);
        ilk_pool_previous[c] = loaded;
        loaded = ilk_pool_loaded[c] = ilk_pool_header(c);
    }
    loaded->nodes[loaded->count++] = node;
}

void ilk_node_free(void *node) { free(node); }

unsigned ilk_node_pool_cached_nodes(size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) return 0;
    unsigned c = ilk_node_pool_class(size);
    unsigned count = 0;
    if (ilk_pool_loaded[c] != NULL) count += ilk_pool_loaded[c]->count;
    if (ilk_pool_previous[c] != NULL) count += ilk_pool_previous[c]->count;
    return count;
}

unsigned long ilk_node_pool_node_mallocs(void) { return ilk_pool_node_mallocs; }

unsigned long ilk_node_pool_header_mallocs(void) { return ilk_pool_header_mallocs; }
