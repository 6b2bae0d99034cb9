/*
 * ilk_node_pool.c — per-thread node recycling through RCU grace periods (see
 * include/ilk_node_pool.h for the contract and the safety argument).
 *
 * State per thread and size class c:
 *   alloc[c]    a batch of reusable nodes this thread allocates from (count = nodes left)
 *   retire[c]   a batch collecting the nodes this thread retires
 *   waiting[c]  a FIFO of this thread's full retire batches, each waiting for (or past) its
 *               own grace period, requested with call_rcu when it filled up
 *   spare       at most one empty batch header, to start the next retire batch
 * Global, per class (each on its own 128-byte line): `ready`, a Treiber stack of batches whose
 * nodes are past a grace period, for threads that allocate more than they retire (producers),
 * and an approximate count of them (relaxed). Global, one for all classes: `empty`, a Treiber
 * stack of at most ILK_POOL_EMPTY_CAP empty batch headers (allocation batches used up), which
 * threads take to start a retire batch before they malloc one.
 *
 * Why the empty headers circulate: a header is 8 KiB, a large request for glibc's malloc, and
 * a large request first merges every small chunk freed into the arena's fast bins
 * (malloc_consolidate), a cost that grows with what the rest of the program has freed. Before,
 * a consumer malloc'd a header per 1,022 nodes and the producer that emptied it retired it
 * through ilk_rcu_retire: beside two busy loops, after the other queue benchmarks had run in
 * the process, `perf` found 11 % of LockFreeStack's samples in malloc_consolidate under those
 * two paths, and the stack rows read 1.9-3.2 of their fastest peer where they read 0.4-0.9
 * beside the same loops in a process of their own; with the list they read 0.71-1.42 there
 * (Benchmarks/README.md, "The lock-free containers beside a load").
 *
 * Locality: a thread reuses first the nodes IT retired (its oldest waiting batch, once that
 * batch's grace period is over), so in the common push-then-pop patterns nodes stay in the
 * cache of the core that uses them. When a thread holds more than ILK_POOL_WAITING_CAP
 * finished batches of a class, it moves them to the global ready list, where allocating
 * threads (producers) find them. A thread that filled a retire batch without refilling its
 * allocation batch even once meanwhile (a consumer) does not keep the batch at all: it asks
 * for the grace period with state ORPHAN, so the callback publishes it at once (measured: with
 * two producers and two consumers, producers otherwise often found the ready list empty and
 * fell back to malloc per node, and the transfer cost doubled, 31-37 -> 67-74 ns).
 *
 * Batch state word (`state`), for batches in a waiting FIFO:
 *   WAITING  call_rcu requested; the grace period is not known to be over.
 *   DONE     the callback ran: the grace period is over; the owner thread may reuse the nodes.
 *            Set by the callback with an acq_rel exchange, its last access to the batch.
 *   ORPHAN   the owner does not want the batch back: it exited first (set with an acq_rel
 *            exchange at thread exit; if it finds DONE instead, it publishes the batch
 *            itself), or it is a consumer (see Locality) and requested the grace period with
 *            ORPHAN, never putting the batch in its FIFO. The callback, finding ORPHAN, puts
 *            the batch on the global ready list.
 * Exactly one of callback and owner acts on a batch after the exchange, so it is never used
 * by two threads at once; acq_rel makes the loser's earlier writes visible to the winner.
 *
 * Lists and ABA: both global lists pop inside a read-side section (the pop loads the top
 * header's `next`, then compare-and-swaps), so a pop's CAS is wrong only if its header left
 * the list and came back within the pop's section. Invariant G: a header enters a list only
 * after a grace period that began after it last left that list. Ready list: a header leaves
 * it as an allocation batch, is used up, becomes a spare or an empty header, then a retire
 * batch, and returns only through its callback, after its grace period. Empty list: a header
 * leaves it as a retire batch and becomes empty again only as an allocation batch, which it
 * became after that retire batch's grace period. A header's `next` is stored with a relaxed
 * atomic: a pop that read the header before it left may still load `next` (its CAS then fails).
 *
 * fork() without exec: the pool has no lock. Its shared state, the ready lists, changes only
 * by single compare-and-swaps, so the child finds each list whole. The child loses what the
 * vanished threads held: their thread caches, a batch one of them had popped, or one it was
 * about to push (whose count it had already raised: the count is approximate anyway); at
 * most a few batches per thread, never reused, never freed twice. The callbacks the parent
 * had requested run in the child too, on liburcu's new worker (ilk_rcu.c registers liburcu's
 * fork hooks; under ThreadSanitizer only with die_after_fork=0), so the forking thread's
 * waiting batches come back to it as in the parent.
 */
#include "include/ilk_node_pool.h"
#include "include/ilk_rcu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ILK_POOL_WAITING_CAP 4 /* finished batches a thread keeps per class */
/* Empty headers the global list keeps: 256 (2 MiB) start the retire batches of 256 Ki nodes,
 * half of what a ready list of 16-byte nodes holds. With 64, beside busy loops, consumers
 * still malloc'ed headers: 9 % of LockFreeStack's samples in malloc_consolidate under
 * ilk_node_retire_slow, against 2.5 % with 256. */
#define ILK_POOL_EMPTY_CAP 256

enum { ILK_POOL_WAITING = 0, ILK_POOL_DONE = 1, ILK_POOL_ORPHAN = 2 };

/* A global Treiber stack of batch headers (a ready list, or the empty headers). */
struct ilk_pool_list {
    struct ilk_pool_batch *head;
    long count;
    char padding[128 - sizeof(void *) - sizeof(long)];
} __attribute__((aligned(128)));

struct ilk_pool_fifo {
    struct ilk_pool_batch *head, *tail;
    unsigned length;
};

static struct ilk_pool_list ilk_pool_ready[ILK_NODE_POOL_CLASSES];
static struct ilk_pool_list ilk_pool_empty;

__thread struct ilk_pool_batch *ilk_pool_alloc_batch[ILK_NODE_POOL_CLASSES];
__thread struct ilk_pool_batch *ilk_pool_retire_batch[ILK_NODE_POOL_CLASSES];
static __thread struct ilk_pool_fifo ilk_pool_waiting[ILK_NODE_POOL_CLASSES];
static __thread struct ilk_pool_batch *ilk_pool_spare;
/* Refills of this thread's allocation batch of class c since its last full retire batch: 0
 * means the thread retires more than it allocates (a consumer). A balanced thread whose
 * allocation batch happens to last across a whole retire batch is taken for a consumer once;
 * that costs it some node locality, nothing else. */
static __thread unsigned ilk_pool_refills[ILK_NODE_POOL_CLASSES];
static __thread int ilk_pool_thread_known;
static __thread unsigned long ilk_pool_header_mallocs; /* for tests */
static pthread_key_t ilk_pool_exit_key;
static pthread_once_t ilk_pool_exit_once = PTHREAD_ONCE_INIT;

static void ilk_pool_oom(size_t size) {
    fprintf(stderr, "Interlock: out of memory allocating %zu bytes for a lock-free stack node\n",
            size);
    abort();
}


/* Pushes `batch`, owned by the caller, on `list` (invariant G holds for it). */
static void ilk_pool_push(struct ilk_pool_list *list, struct ilk_pool_batch *batch) {
    __atomic_fetch_add(&list->count, 1, __ATOMIC_RELAXED); /* approximate: see the caps */
    struct ilk_pool_batch *top = __atomic_load_n(&list->head, __ATOMIC_RELAXED);
    do {
        /* Relaxed atomic: a stale pop may still load it (see "Lists and ABA"). */
        __atomic_store_n(&batch->next, top, __ATOMIC_RELAXED);
        /* Release: publishes the batch and its nodes' history to the popper's acquire. */
    } while (!__atomic_compare_exchange_n(&list->head, &top, batch, 1, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

/* Pops a header from `list`, or returns NULL. */
static struct ilk_pool_batch *ilk_pool_pop(struct ilk_pool_list *list) {
    /* Relaxed peek: skip the read-side section when the list is (probably) empty. */
    if (__atomic_load_n(&list->head, __ATOMIC_RELAXED) == NULL) return NULL;
    ilk_rcu_read_lock();
    /* Acquire: pairs with the pusher's release CAS (the batch's contents). */
    struct ilk_pool_batch *top = __atomic_load_n(&list->head, __ATOMIC_ACQUIRE);
    while (top != NULL) {
        /* Inside the section: `top` cannot come back to the list before we unlock (G). */
        struct ilk_pool_batch *next = __atomic_load_n(&top->next, __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(&list->head, &top, next, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE))
            break;
    }
    ilk_rcu_read_unlock();
    if (top != NULL) __atomic_fetch_sub(&list->count, 1, __ATOMIC_RELAXED);
    return top;
}

/* Keeps an empty header (owned by the caller) for a later retire batch, or disposes of it when
 * the empty list is full: frees it when it is past a grace period since it left any list
 * (`settled`: a batch whose nodes the callback freed), else retires it (an allocation batch
 * used up: a pop that read it on a ready list may still load its `next`). */
static void ilk_pool_give_empty(struct ilk_pool_batch *header, int settled) {
    /* Relaxed: a soft cap, as in ilk_pool_publish. */
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

/* Puts a batch that is past its grace period on the global ready list of its class, or frees
 * it when the list is full. The caller owns the batch. */
static void ilk_pool_publish(struct ilk_pool_batch *batch) {
    struct ilk_pool_list *ready = &ilk_pool_ready[batch->klass];
    /* Relaxed: a soft cap; a few batches over or under it change nothing but memory. A READY
     * batch is never empty. */
    long cap = (long)(ILK_NODE_POOL_READY_BYTES / ((batch->klass + 1u) * 16u * ILK_NODE_POOL_BATCH));
    if (cap < 4) cap = 4;
    if (batch->count == 0 || __atomic_load_n(&ready->count, __ATOMIC_RELAXED) >= cap) {
        for (unsigned i = 0; i < batch->count; i++) free(batch->nodes[i]);
        batch->count = 0;
        ilk_pool_give_empty(batch, 1); /* past its grace period: G holds for the empty list */
        return;
    }
    ilk_pool_push(ready, batch);
}

/* Runs on liburcu's call_rcu worker after a grace period. */
static void ilk_pool_grace_period_over(struct rcu_head *head) {
    struct ilk_pool_batch *batch = (struct ilk_pool_batch *)head;
#ifdef ILK_TSAN
    __tsan_acquire(&ilk_rcu_tsan_token); /* pairs with readers' unlocks and the hand-over */
#endif
    /* Acq_rel: releases the grace period to the owner (which acquires DONE), or acquires the
     * orphaning owner's last writes. After this exchange the batch is not ours unless ORPHAN. */
    if (__atomic_exchange_n(&batch->state, ILK_POOL_DONE, __ATOMIC_ACQ_REL) == ILK_POOL_ORPHAN)
        ilk_pool_publish(batch);
}

/* Requests the grace period of a full (or final) batch. */
static void ilk_pool_request(struct ilk_pool_batch *batch, int state) {
    __atomic_store_n(&batch->state, state, __ATOMIC_RELAXED); /* before call_rcu hands it on */
#ifdef ILK_TSAN
    __tsan_release(&ilk_rcu_tsan_token); /* this thread's accesses to the nodes */
#endif
    ilk_rcu_call(&batch->head, ilk_pool_grace_period_over); /* call_rcu, fork-safe */
}

static void ilk_pool_thread_exit(void *value) {
    (void)value;
    for (unsigned c = 0; c < ILK_NODE_POOL_CLASSES; c++) {
        struct ilk_pool_batch *batch = ilk_pool_retire_batch[c];
        ilk_pool_retire_batch[c] = NULL;
        if (batch != NULL) ilk_pool_request(batch, ILK_POOL_ORPHAN);
        /* The allocation batch may have come from a ready list: it must wait out a grace
         * period before it is pushed there again (a stale pop could compare against it). */
        batch = ilk_pool_alloc_batch[c];
        ilk_pool_alloc_batch[c] = NULL;
        if (batch != NULL && batch->count > 0) {
            ilk_pool_request(batch, ILK_POOL_ORPHAN);
        } else if (batch != NULL) {
            ilk_pool_give_empty(batch, 0);
        }
        struct ilk_pool_fifo *waiting = &ilk_pool_waiting[c];
        while ((batch = waiting->head) != NULL) {
            waiting->head = batch->next;
            if (__atomic_exchange_n(&batch->state, ILK_POOL_ORPHAN, __ATOMIC_ACQ_REL) == ILK_POOL_DONE)
                ilk_pool_publish(batch);
            /* else the callback publishes it */
        }
        waiting->tail = NULL;
        waiting->length = 0;
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

/* The oldest waiting batch of class c if its grace period is over (removed from the FIFO). */
static struct ilk_pool_batch *ilk_pool_take_finished(unsigned c) {
    struct ilk_pool_fifo *waiting = &ilk_pool_waiting[c];
    struct ilk_pool_batch *batch = waiting->head;
    /* Acquire: pairs with the callback's exchange (the grace period, and the token). */
    if (batch == NULL || __atomic_load_n(&batch->state, __ATOMIC_ACQUIRE) != ILK_POOL_DONE)
        return NULL;
    waiting->head = batch->next;
    if (waiting->head == NULL) waiting->tail = NULL;
    waiting->length--;
    return batch;
}

/* A header for a new retire batch of class c. */
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
    /* Relaxed atomic, not plain: the spare may be a header that left a ready list, and a popper
     * that read it as `top` before it left may still load its `next` in its read-side section
     * (its CAS then fails: the header cannot return to a ready list before a grace period). The
     * value is never used; the store must only not race with that load (ThreadSanitizer
     * reported the plain store in a stress run). The same holds for the stores in
     * ilk_node_retire_full, until the batch's own grace period is requested and over. */
    __atomic_store_n(&batch->next, NULL, __ATOMIC_RELAXED);
    return batch;
}

/* The pool's own copy of the inline fast path's refill: this thread's batch of class c is
 * empty (or missing). */
static void *ilk_node_alloc_refill(unsigned c, size_t size) {
    ilk_pool_know_thread();
    ilk_pool_refills[c]++;
    struct ilk_pool_batch *empty = ilk_pool_alloc_batch[c];
    ilk_pool_alloc_batch[c] = NULL;
    if (empty != NULL) {
        /* The emptied header may have left a ready list: reuse it as a retire batch, this
         * thread's (its spare) or another's (the empty list); either passes a grace period
         * before it can be READY again (G). */
        if (ilk_pool_spare == NULL) {
            ilk_pool_spare = empty;
        } else {
            ilk_pool_give_empty(empty, 0);
        }
    }
    struct ilk_pool_batch *batch = ilk_pool_take_finished(c);
    if (batch == NULL) batch = ilk_pool_pop(&ilk_pool_ready[c]);
    if (batch != NULL) {
        ilk_pool_alloc_batch[c] = batch;
        return batch->nodes[--batch->count]; /* a full or READY batch is never empty */
    }
    void *node = malloc((size_t)(c + 1) * 16);
    if (node == NULL) ilk_pool_oom(size);
    return node;
}

void *ilk_node_alloc_slow(size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) return ilk_block_alloc(size == 0 ? 1 : size, 16);
    /* The inline fast path found this thread's batch of the class empty or missing. */
    return ilk_node_alloc_refill(ilk_node_pool_class(size), size);
}

static __attribute__((noinline)) void ilk_node_retire_full(unsigned c) {
    struct ilk_pool_batch *batch = ilk_pool_retire_batch[c];
    ilk_pool_retire_batch[c] = NULL;
    int consumer = ilk_pool_refills[c] == 0;
    ilk_pool_refills[c] = 0;
    if (consumer) {
        /* This thread filled a batch without needing a single new node of the class: it will
         * not reuse these soon. Hand the batch to the allocating threads as soon as its grace
         * period is over (the callback publishes ORPHAN batches), rather than keeping it
         * waiting here until the next batch fills, while producers malloc node by node; and
         * pass on the finished batches it kept while it still allocated. */
        struct ilk_pool_batch *finished;
        while ((finished = ilk_pool_take_finished(c)) != NULL) ilk_pool_publish(finished);
        ilk_pool_request(batch, ILK_POOL_ORPHAN);
        return;
    }
    struct ilk_pool_fifo *waiting = &ilk_pool_waiting[c];
    /* A thread that retires more than it allocates passes its finished batches on. */
    while (waiting->length >= ILK_POOL_WAITING_CAP) {
        struct ilk_pool_batch *finished = ilk_pool_take_finished(c);
        if (finished == NULL) break; /* grace periods lag: keep waiting (bounded by the lag) */
        ilk_pool_publish(finished);
    }
    __atomic_store_n(&batch->next, NULL, __ATOMIC_RELAXED); /* see ilk_pool_header */
    if (waiting->tail != NULL) {
        __atomic_store_n(&waiting->tail->next, batch, __ATOMIC_RELAXED); /* as above */
    } else {
        waiting->head = batch;
    }
    waiting->tail = batch;
    waiting->length++;
    ilk_pool_request(batch, ILK_POOL_WAITING);
}

void ilk_node_retire_slow(void *node, size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) {
        ilk_rcu_retire(node, size == 0 ? 1 : size);
        return;
    }
    unsigned c = ilk_node_pool_class(size);
    struct ilk_pool_batch *batch = ilk_pool_retire_batch[c];
    if (batch == NULL) {
        ilk_pool_know_thread();
        batch = ilk_pool_retire_batch[c] = ilk_pool_header(c);
    }
    batch->nodes[batch->count++] = node;
    if (batch->count == ILK_NODE_POOL_BATCH) ilk_node_retire_full(c);
}

void ilk_node_free(void *node) { free(node); }

unsigned ilk_node_pool_waiting_batches(size_t size) {
    if (size == 0 || size > ILK_NODE_POOL_CLASSES * 16) return 0;
    return ilk_pool_waiting[ilk_node_pool_class(size)].length;
}

unsigned long ilk_node_pool_header_mallocs(void) { return ilk_pool_header_mallocs; }
