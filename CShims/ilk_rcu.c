/*
 * ilk_rcu.c — per-thread retirement batches over liburcu's call_rcu (see include/ilk_rcu.h).
 *
 * State per thread: `ilk_rcu_pending`, a batch being filled (NULL until the first retire),
 * and `ilk_rcu_pending_cached`, the same for blocks bound for the block cache (one size and
 * alignment per batch). A batch is owned by its thread until it is full (or flushed); then it
 * is handed to call_rcu, after which only liburcu's worker touches it, in ilk_rcu_free_batch
 * (or ilk_rcu_recycle_batch, which offers each block to the cache first), after a grace
 * period. A pthread_key destructor hands over the partial batches when the thread exits.
 *
 * fork() without exec: the child has one thread, the one that called fork(); liburcu's
 * call_rcu worker is gone, so nothing retired in the child would ever be freed, and an RCU
 * barrier would wait forever. liburcu leaves it to the application to call its fork hooks;
 * ilk_rcu_install_fork_handlers registers them with pthread_atfork, once per process, in this
 * order (prepare handlers run in this order, the parent's and child's in the reverse one):
 *
 *   1. the hand-over gate closes (below) and waits until no thread is inside call_rcu;
 *   2. call_rcu_before_fork: takes liburcu's call_rcu mutex and pauses every worker between
 *      two rounds of callbacks (none is half done; a paused worker holds no lock, is in no
 *      grace period);
 *   3. urcu_bp_before_fork: blocks signals, takes the grace-period and registry mutexes.
 *   4. ilk_dwcas_fork_prepare: takes the stripes of ilk_dwcas's striped-lock form (the
 *      node pool's lists and LockFreeStack's head use it under ThreadSanitizer).
 *   child:  the stripes are given back; urcu_bp_after_fork_child drops the registry entries
 *           of the threads that did not survive (a reader that was inside a section would
 *           otherwise block every grace period), call_rcu_after_fork_child starts a new
 *           worker and moves every callback still queued (the parent's backlog included)
 *           onto it, then the gate opens.
 *   parent: the stripes are given back; urcu_bp_after_fork_parent,
 *           call_rcu_after_fork_parent, the gate opens.
 * Why this order: a worker waiting for a grace period needs the mutexes of step 3, so the
 * workers pause (2) before those are taken; a thread inside call_rcu may need the call_rcu
 * mutex (the first call creates the worker) or the registry mutex (its first read-side
 * section registers it), so the gate (1) waits for it before either is taken.
 * liburcu's hooks must run once per fork: a program that registers urcu-bp's own fork hooks
 * as well would take their mutexes twice and deadlock in fork().
 *
 * The gate: call_rcu enqueues on a wait-free queue in two steps (swap the tail, then link the
 * old tail to the new node). A thread that fork() catches between the two leaves the child a
 * queue whose dequeue waits forever for the link, which no thread will write: the child's new
 * worker, and call_rcu_after_fork_child itself (which splices the old queues), would hang.
 * So every call_rcu of Interlock runs inside the gate, a word holding the number of threads
 * inside and a FORKING bit. One forker at a time: glibc's fork() runs the prepare handlers and
 * the parent's (or child's) under its own atfork lock when the process has several threads.
 *
 * A hand-over never waits for the fork: it is usually made inside a read-side section (a
 * queue's consumer retires the segment it just left), and the forker's step 2 waits for the
 * worker, whose grace period waits for that section to end; a retirer asleep on the gate
 * would deadlock the fork (seen in CI: a fork test beside queue consumers hung for good). So
 * a call that finds FORKING set pushes its rcu_head, func stored in it, on `ilk_rcu_deferred`
 * (a Treiber stack linked through the head's own `next` field: no memory of its own) and
 * returns. The forker, in the parent and in the child, reopens the gate with itself inside,
 * takes the whole stack (one exchange: no ABA) and hands each entry to call_rcu.
 * Invariant D: every deferred entry is handed over by the end of the next gate opening, or by
 * its pusher. Proof: the pusher's push and its next load of the gate word are seq_cst, as are
 * the forker's store that opens the gate and its exchange of the stack. If the load still
 * sees FORKING, it precedes the opening store in the single order (it read a value that store
 * overwrote), so push < load < open < exchange: the forker takes the entry. If it sees the
 * gate open, the pusher tries to enter and drains the stack itself; when that try meets a
 * newer fork, the same argument hands the entry to that fork's opening.
 * In the child only the forking thread survives; the entries of the parent's other threads
 * are handed to the child's new worker and freed there too (copies, unreachable in the child).
 *
 * Cost: call_rcu_before_fork waits until every worker has paused, and an idle worker looks
 * at the request only after a 10 ms nap that follows each wake-up (liburcu 0.13's batching);
 * call_rcu_after_fork_parent then waits for it to resume (1 ms polls). So once Interlock has
 * handed anything to call_rcu, each fork() takes about 12 ms in the parent (a 50-iteration
 * C loop on a 2-vCPU x86-64 machine: 11.8 ms, against 51 us without the hooks). posix_spawn
 * and vfork, which run no fork handlers, cost nothing more; Swift's and Foundation's process
 * launching use posix_spawn.
 *
 * ThreadSanitizer: TSan kills a child of a multi-threaded process that starts a thread (its
 * option die_after_fork, on by default), and call_rcu_after_fork_child starts the worker. In a
 * process that carries the TSan runtime, the call_rcu hooks are therefore left out unless
 * TSAN_OPTIONS sets die_after_fork=0 (read once, when the handlers are installed); without
 * them a child may fork and exec, or use anything else, but a child that keeps using the
 * stacks and queues leaks what it retires (the state before these handlers existed). The gate
 * and the urcu-bp hooks stay.
 *
 * liburcu's README discourages these hooks in pthread_atfork for programs whose callbacks call
 * free() (ours do): in 2012, glibc's fork() locked the allocator from a fork handler of its
 * own, among the others, so a worker paused while the allocator was locked could hang. Since
 * glibc 2.24 fork() locks the allocator after every prepare handler has run and unlocks it
 * before the parent's and child's handlers run, so the workers finish their callbacks, free()
 * included, before the allocator is locked.
 */
#include "include/ilk_rcu.h"
#include "include/ilk_block_cache.h"
#include "include/ilk_futex.h"
#include "include/ilk_osqueue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char ilk_rcu_tsan_token;

struct ilk_rcu_batch {
    struct rcu_head head; /* first: the callback gets it back */
    size_t count;
    size_t bytes;
    size_t block_size, align; /* a batch for the block cache: every block's (size, align) */
    void *blocks[ILK_RCU_BATCH_BLOCKS];
};
/* Under 1 KiB: a small request for malloc (see ILK_RCU_BATCH_BLOCKS). */
_Static_assert(sizeof(struct ilk_rcu_batch) < 1024 - 16, "an RCU batch must stay a small malloc request");

/* Batch headers come from the block cache and go back to it (ilk_block_cache.h): a header is
 * malloc'ed by a retiring thread and freed by liburcu's worker, so glibc never reuses it
 * locally, and when the rest of the process has freed many small chunks, the malloc of a
 * header merged them first (malloc_consolidate): 6 % of LockFreeQueue's samples beside the
 * neighbour process, 4 alternating threads (Benchmarks/README.md, "The segment an enqueuer
 * did not link, and the retirement batches"). */
#define ILK_RCU_BATCH_ALIGN 16

static struct ilk_rcu_batch *ilk_rcu_batch_alloc(void) {
    return ilk_block_cache_alloc_zeroed(sizeof(struct ilk_rcu_batch), ILK_RCU_BATCH_ALIGN);
}

static void ilk_rcu_batch_release(struct ilk_rcu_batch *batch) {
    if (!ilk_block_cache_put(batch, sizeof *batch, ILK_RCU_BATCH_ALIGN)) free(batch);
}

static __thread struct ilk_rcu_batch *ilk_rcu_pending;
/* The batch being filled with blocks for the block cache (ilk_rcu_retire_cached). */
static __thread struct ilk_rcu_batch *ilk_rcu_pending_cached;
static pthread_key_t ilk_rcu_exit_key;
static pthread_once_t ilk_rcu_exit_once = PTHREAD_ONCE_INIT;
static long ilk_rcu_in_flight; /* batches handed to call_rcu, not yet freed (statistics) */

/* The hand-over gate (see the file comment): bit 31 FORKING, bits 0-30 threads inside. */
#define ILK_RCU_GATE_FORKING 0x80000000u
static uint32_t ilk_rcu_gate;
static pthread_once_t ilk_rcu_fork_once = PTHREAD_ONCE_INIT;
/* Whether the fork handlers include liburcu's call_rcu hooks ("ThreadSanitizer" above);
 * written once, in the pthread_once, before the handlers are registered. */
static int ilk_rcu_fork_restarts_worker;
/* TSan's entry point: non-null in a process that carries the TSan runtime. */
extern void __tsan_init(void) __attribute__((weak));

/* The hand-overs that met a fork under way (invariant D in the file comment). */
static struct rcu_head *ilk_rcu_deferred;

/* Tries to enter the gate: 1 when inside (leave it with ilk_rcu_gate_leave), 0 when a fork is
 * under way. Never waits. */
static int ilk_rcu_gate_try_enter(void) {
    uint32_t seen = __atomic_load_n(&ilk_rcu_gate, __ATOMIC_RELAXED); /* a guess for the CAS */
    for (;;) {
        if (seen & ILK_RCU_GATE_FORKING) return 0;
        /* Acquire: pairs with the release that opened the gate after the last fork, so the
         * call_rcu below comes after liburcu's after-fork handlers. The CAS and the forker's
         * fetch-or are read-modify-writes of one word, so one of them sees the other: either
         * the forker counts this thread, or this thread sees FORKING. Seq_cst on failure: the
         * FORKING it reads orders a deferred push before the opening (invariant D). */
        if (__atomic_compare_exchange_n(&ilk_rcu_gate, &seen, seen + 1, 1, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return 1;
    }
}

/* Enters the gate, sleeping while a fork is under way. Only where no read-side section is
 * open (ilk_rcu_gate_run, for tests). */
static void ilk_rcu_gate_enter(void) {
    while (!ilk_rcu_gate_try_enter()) {
        uint32_t seen = __atomic_load_n(&ilk_rcu_gate, __ATOMIC_RELAXED); /* rechecked by futex */
        if (seen & ILK_RCU_GATE_FORKING) (void)ilk_futex_wait(&ilk_rcu_gate, seen, -1);
    }
}

static void ilk_rcu_gate_leave(void) {
    /* Release: the enqueue made inside the gate happens before the forker's acquire that
     * sees the count at 0, hence before the fork itself. */
    uint32_t before = __atomic_fetch_sub(&ilk_rcu_gate, 1, __ATOMIC_RELEASE);
    if (before == (ILK_RCU_GATE_FORKING | 1)) (void)ilk_futex_wake_all(&ilk_rcu_gate);
}

static void ilk_rcu_before_fork(void) {
    /* Acquire (with the loads below): pairs with the leavers' release. */
    uint32_t seen = __atomic_fetch_or(&ilk_rcu_gate, ILK_RCU_GATE_FORKING, __ATOMIC_ACQUIRE);
    seen |= ILK_RCU_GATE_FORKING;
    while (seen != ILK_RCU_GATE_FORKING) {
        (void)ilk_futex_wait(&ilk_rcu_gate, seen, -1);
        seen = __atomic_load_n(&ilk_rcu_gate, __ATOMIC_ACQUIRE);
    }
    if (ilk_rcu_fork_restarts_worker) call_rcu_before_fork();
    urcu_bp_before_fork();
    ilk_dwcas_fork_prepare(); /* last: a stripe holder waits for nothing (ilk_dwcas.c) */
}

static void ilk_rcu_free_batch(struct rcu_head *head);
static void ilk_rcu_recycle_batch(struct rcu_head *head);

/* Inside the gate: call_rcu, counting the retirement batches, so that a fork never sees the
 * count raised without the call made (the child's barrier then leaves it at 0). */
static void ilk_rcu_call_inside(struct rcu_head *head, void (*func)(struct rcu_head *head)) {
    if (func == ilk_rcu_free_batch || func == ilk_rcu_recycle_batch)
        __atomic_fetch_add(&ilk_rcu_in_flight, 1, __ATOMIC_RELAXED); /* statistics only */
    call_rcu(head, func);
}

/* Inside the gate: hands every deferred entry to call_rcu. */
static void ilk_rcu_drain_deferred(void) {
    /* Seq_cst: after the pusher's push or the opening store in the single order (invariant
     * D); acquires the pushers' writes to the heads. */
    struct rcu_head *head = __atomic_exchange_n(&ilk_rcu_deferred, NULL, __ATOMIC_SEQ_CST);
    while (head != NULL) {
        struct rcu_head *next = (struct rcu_head *)head->next.next; /* before call_rcu reuses it */
        ilk_rcu_call_inside(head, head->func);
        head = next;
    }
}

static void ilk_rcu_open_gate(void) {
    /* Seq_cst store (a release too, pairing with the enterers' acquire): opens the gate with
     * this thread inside, before the drain's exchange (invariant D). Nobody entered while
     * FORKING was set. */
    __atomic_store_n(&ilk_rcu_gate, 1, __ATOMIC_SEQ_CST);
    (void)ilk_futex_wake_all(&ilk_rcu_gate);
    ilk_rcu_drain_deferred();
    ilk_rcu_gate_leave();
}

static void ilk_rcu_after_fork_in_parent(void) {
    ilk_dwcas_fork_release();
    urcu_bp_after_fork_parent();
    if (ilk_rcu_fork_restarts_worker) call_rcu_after_fork_parent();
    ilk_rcu_open_gate();
}

static void ilk_rcu_after_fork_in_child(void) {
    ilk_dwcas_fork_release();
    urcu_bp_after_fork_child();
    if (ilk_rcu_fork_restarts_worker) call_rcu_after_fork_child();
    ilk_rcu_open_gate(); /* nobody else waits in the child: only this thread exists */
}

/* Whether ThreadSanitizer's option die_after_fork is off in TSAN_OPTIONS (the last setting
 * wins, as in TSan's parser; "0", "false" and "no" are off). */
static int ilk_rcu_tsan_lets_child_start_threads(void) {
    const char *options = getenv("TSAN_OPTIONS");
    int off = 0;
    static const char key[] = "die_after_fork=";
    for (const char *at = options; at != NULL && (at = strstr(at, key)) != NULL; at++) {
        if (at != options && at[-1] != ' ' && at[-1] != ':' && at[-1] != ',') continue;
        char value = at[sizeof key - 1];
        off = value == '0' || value == 'f' || value == 'n';
    }
    return off;
}

/* Whether the handlers are registered (tests: ilk_rcu_fork_handlers_installed). */
static int ilk_rcu_fork_handlers_registered;

static void ilk_rcu_register_fork_handlers(void) {
    ilk_rcu_fork_restarts_worker = __tsan_init == 0 || ilk_rcu_tsan_lets_child_start_threads();
    int error = pthread_atfork(ilk_rcu_before_fork, ilk_rcu_after_fork_in_parent,
                               ilk_rcu_after_fork_in_child);
    if (error != 0) {
        fprintf(stderr, "Interlock: pthread_atfork failed for the RCU fork handlers: %s\n",
                strerror(error));
        abort();
    }
    /* Relaxed: a test's question only, asked after a call that installed them on its thread. */
    __atomic_store_n(&ilk_rcu_fork_handlers_registered, 1, __ATOMIC_RELAXED);
}

bool ilk_rcu_fork_handlers_installed(void) {
    /* Relaxed: pairs with nothing (see ilk_rcu_fork_handlers_registered). */
    return __atomic_load_n(&ilk_rcu_fork_handlers_registered, __ATOMIC_RELAXED) != 0;
}

void ilk_rcu_install_fork_handlers(void) {
    pthread_once(&ilk_rcu_fork_once, ilk_rcu_register_fork_handlers);
}

void ilk_rcu_gate_run(void (*body)(void *context), void *context) {
    ilk_rcu_install_fork_handlers();
    ilk_rcu_gate_enter();
    body(context);
    ilk_rcu_gate_leave();
}

uint32_t *ilk_rcu_gate_word(void) { return &ilk_rcu_gate; }

int ilk_rcu_fork_starts_worker(void) {
    ilk_rcu_install_fork_handlers(); /* pthread_once: the flag is written before this reads it */
    return ilk_rcu_fork_restarts_worker;
}

void ilk_rcu_call(struct rcu_head *head, void (*func)(struct rcu_head *head)) {
    ilk_rcu_install_fork_handlers();
    if (__builtin_expect(ilk_rcu_gate_try_enter(), 1)) {
        ilk_rcu_call_inside(head, func);
        ilk_rcu_gate_leave();
        return;
    }
    /* A fork is under way: defer (invariant D), never wait (see the file comment). */
    head->func = func;
    struct rcu_head *top = __atomic_load_n(&ilk_rcu_deferred, __ATOMIC_RELAXED);
    do {
        head->next.next = (struct cds_wfcq_node *)top; /* private until the CAS publishes it */
        /* Seq_cst: before the gate load below in the single order (invariant D); publishes
         * the head to the drain's exchange. */
    } while (!__atomic_compare_exchange_n(&ilk_rcu_deferred, &top, head, 1, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED));
    if (__atomic_load_n(&ilk_rcu_gate, __ATOMIC_SEQ_CST) & ILK_RCU_GATE_FORKING) return;
    /* The gate opened after the push, maybe after the forker's drain: drain here. */
    if (ilk_rcu_gate_try_enter()) {
        ilk_rcu_drain_deferred();
        ilk_rcu_gate_leave();
    }
}

static void ilk_rcu_oom(size_t size) {
    fprintf(stderr, "Interlock: out of memory allocating %zu bytes for a lock-free queue block\n",
            size);
    abort();
}

void *ilk_block_alloc(size_t size, size_t align) {
    void *p;
    if (size == 0) size = 1;
    if (align <= 16) {
        p = malloc(size);
    } else {
        size_t rounded = (size + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple */
        p = aligned_alloc(align, rounded);
    }
    if (p == NULL) ilk_rcu_oom(size);
    return p;
}

void *ilk_block_alloc_zeroed(size_t size, size_t align) {
    void *p = ilk_block_alloc(size, align);
    memset(p, 0, size);
    return p;
}

void ilk_block_free(void *block) { free(block); }

/* Runs on liburcu's call_rcu worker after a grace period. */
static void ilk_rcu_free_batch(struct rcu_head *head) {
    struct ilk_rcu_batch *batch = (struct ilk_rcu_batch *)head;
#ifdef ILK_TSAN
    __tsan_acquire(&ilk_rcu_tsan_token); /* pairs with the readers' and retirers' releases */
#endif
    for (size_t i = 0; i < batch->count; i++) free(batch->blocks[i]);
    ilk_rcu_batch_release(batch);
    __atomic_fetch_sub(&ilk_rcu_in_flight, 1, __ATOMIC_RELAXED); /* statistics only */
}

/* Runs on liburcu's call_rcu worker after a grace period: the blocks go to the block cache
 * while it has room, the rest are freed. */
static void ilk_rcu_recycle_batch(struct rcu_head *head) {
    struct ilk_rcu_batch *batch = (struct ilk_rcu_batch *)head;
#ifdef ILK_TSAN
    __tsan_acquire(&ilk_rcu_tsan_token); /* pairs with the readers' and retirers' releases */
#endif
    for (size_t i = 0; i < batch->count; i++) {
        if (!ilk_block_cache_put(batch->blocks[i], batch->block_size, batch->align))
            free(batch->blocks[i]);
    }
    ilk_rcu_batch_release(batch);
    __atomic_fetch_sub(&ilk_rcu_in_flight, 1, __ATOMIC_RELAXED); /* statistics only */
}

static void ilk_rcu_hand_over(struct ilk_rcu_batch *batch, void (*func)(struct rcu_head *head)) {
#ifdef ILK_TSAN
    __tsan_release(&ilk_rcu_tsan_token);
#endif
    ilk_rcu_call(&batch->head, func); /* never waits: may be in a section */
}

/* Hands over (or frees, when empty) the batch `*pending`, and clears it. */
static void ilk_rcu_flush_pending(struct ilk_rcu_batch **pending, void (*func)(struct rcu_head *head)) {
    struct ilk_rcu_batch *batch = *pending;
    *pending = NULL;
    if (batch != NULL && batch->count > 0) {
        ilk_rcu_hand_over(batch, func);
    } else if (batch != NULL) {
        ilk_rcu_batch_release(batch);
    }
}

static void ilk_rcu_thread_exit(void *value) {
    (void)value;
    ilk_rcu_flush_pending(&ilk_rcu_pending, ilk_rcu_free_batch);
    ilk_rcu_flush_pending(&ilk_rcu_pending_cached, ilk_rcu_recycle_batch);
}

static void ilk_rcu_make_exit_key(void) {
    if (pthread_key_create(&ilk_rcu_exit_key, ilk_rcu_thread_exit) != 0) {
        fprintf(stderr, "Interlock: pthread_key_create failed for the RCU retirement batches\n");
        abort();
    }
}

static __attribute__((noinline)) struct ilk_rcu_batch *ilk_rcu_new_batch(void) {
    struct ilk_rcu_batch *batch = ilk_rcu_batch_alloc(); /* zeroed; never NULL */
    batch->count = 0;
    batch->bytes = 0;
    batch->block_size = 0;
    batch->align = 0;
    pthread_once(&ilk_rcu_exit_once, ilk_rcu_make_exit_key);
    /* Any non-NULL value makes the destructor run at thread exit. */
    (void)pthread_setspecific(ilk_rcu_exit_key, (void *)1);
    return batch;
}

void ilk_rcu_retire(void *block, size_t size) {
    struct ilk_rcu_batch *batch = ilk_rcu_pending;
    if (__builtin_expect(batch == NULL, 0)) batch = ilk_rcu_pending = ilk_rcu_new_batch();
    batch->blocks[batch->count++] = block;
    batch->bytes += size;
    if (batch->count == ILK_RCU_BATCH_BLOCKS || batch->bytes >= ILK_RCU_BATCH_BYTES) {
        ilk_rcu_pending = NULL;
        ilk_rcu_hand_over(batch, ilk_rcu_free_batch);
    }
}

void ilk_rcu_retire_cached(void *block, size_t size, size_t align) {
    struct ilk_rcu_batch *batch = ilk_rcu_pending_cached;
    /* One (size, align) per batch: a thread that retires another kind hands the batch on. */
    if (batch != NULL && (batch->block_size != size || batch->align != align))
        ilk_rcu_flush_pending(&ilk_rcu_pending_cached, ilk_rcu_recycle_batch);
    batch = ilk_rcu_pending_cached;
    if (__builtin_expect(batch == NULL, 0)) {
        batch = ilk_rcu_pending_cached = ilk_rcu_new_batch();
        batch->block_size = size;
        batch->align = align;
    }
    batch->blocks[batch->count++] = block;
    batch->bytes += size;
    if (batch->count == ILK_RCU_BATCH_BLOCKS || batch->bytes >= ILK_RCU_BATCH_BYTES) {
        ilk_rcu_pending_cached = NULL;
        ilk_rcu_hand_over(batch, ilk_rcu_recycle_batch);
    }
}

void ilk_rcu_flush(void) {
    if (ilk_rcu_pending != NULL && ilk_rcu_pending->count > 0)
        ilk_rcu_flush_pending(&ilk_rcu_pending, ilk_rcu_free_batch);
    if (ilk_rcu_pending_cached != NULL && ilk_rcu_pending_cached->count > 0)
        ilk_rcu_flush_pending(&ilk_rcu_pending_cached, ilk_rcu_recycle_batch);
}

void ilk_rcu_barrier(void) {
    ilk_rcu_flush();
    rcu_barrier();
}

size_t ilk_rcu_batch_header_bytes(void) { return sizeof(struct ilk_rcu_batch); }

size_t ilk_rcu_batch_header_alignment(void) { return ILK_RCU_BATCH_ALIGN; }

long ilk_rcu_batches_in_flight(void) {
    return __atomic_load_n(&ilk_rcu_in_flight, __ATOMIC_RELAXED);
}
