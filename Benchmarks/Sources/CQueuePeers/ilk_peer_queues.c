/*
 * ilk_peer_queues.c — the C queue and stack peers (see ilk_peer_queues.h), each used the way
 * its library documents, with its own memory reclamation:
 *
 *   urcu_lfq   liburcu's RCU lock-free queue (Michael–Scott with RCU). Enqueue and dequeue run
 *              inside an RCU read-side critical section; a dequeued node is freed with
 *              call_rcu once no reader can hold it. Flavor: urcu-memb (membarrier-based: the
 *              cheapest read side that needs no signals); threads register lazily on first use
 *              and unregister at exit (pthread key destructor), so any thread may call it.
 *   urcu_lfs   liburcu's lock-free stack (Treiber). Push needs nothing; __cds_lfs_pop runs in
 *              an RCU read-side critical section, nodes are freed with call_rcu (technique 1
 *              of lfstack.h).
 *   urcu_wfcq  liburcu's wait-free concurrent queue: wait-free enqueue (one exchange); the
 *              multi-consumer dequeue takes the queue's internal mutex
 *              (cds_wfcq_dequeue_blocking), after which the node may be freed at once.
 *   ck_fifo    Concurrency Kit's ck_fifo_mpmc (Michael–Scott with double-width CAS and
 *              generation counters). Entries are type-stable and recycled (node pool below):
 *              the generation counters make reuse ABA-safe, and pool memory is never
 *              returned to the system, so a late reader of a recycled entry reads valid memory.
 *   ck_stack   Concurrency Kit's ck_stack, push_mpmc / pop_mpmc (generation-counted DCAS pop),
 *              entries recycled through the same node pool ("ck_stack with node reuse").
 *   mutex_ring / mutex_stack   a pthread mutex around a growable ring buffer / array.
 *
 * Node pool (ck peers): a per-thread free list in front of a global, mutex-protected list of
 * batches. A thread gives a batch of POOL_BATCH nodes back to the global list when its own
 * list reaches 2 * POOL_BATCH, and takes a whole batch when its own list is empty, so the
 * mutex is taken once per POOL_BATCH nodes. In a 1-producer/1-consumer run the consumer's
 * garbage flows back to the producer this way; nodes are allocated only until the pool covers
 * the peak number of elements in flight.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE /* liburcu's inline fast paths (read lock/unlock, queue operations) */

#include "ilk_peer_queues.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>
#include <urcu/rculfqueue.h>
#include <urcu/lfstack.h>
#include <urcu/wfcqueue.h>

#include <ck_fifo.h>
#include <ck_stack.h>

static void *ilk_peer_alloc(size_t size) {
    void *memory = NULL;
    if (posix_memalign(&memory, 64, size) != 0 || memory == NULL) {
        fprintf(stderr, "ilk_peer_queues: out of memory allocating %zu bytes\n", size);
        abort();
    }
    memset(memory, 0, size);
    return memory;
}

/* ---- urcu-memb thread registration: lazily, once per thread; undone at thread exit. ---- */

static pthread_key_t ilk_peer_rcu_key;
static pthread_once_t ilk_peer_rcu_once = PTHREAD_ONCE_INIT;
static __thread int ilk_peer_rcu_registered;

static void ilk_peer_rcu_unregister(void *unused) {
    (void)unused;
    urcu_memb_unregister_thread();
}

static void ilk_peer_rcu_make_key(void) {
    if (pthread_key_create(&ilk_peer_rcu_key, ilk_peer_rcu_unregister) != 0) {
        fprintf(stderr, "ilk_peer_queues: pthread_key_create failed\n");
        abort();
    }
}

static inline void ilk_peer_rcu_ensure_registered(void) {
    if (__builtin_expect(ilk_peer_rcu_registered, 1)) return;
    pthread_once(&ilk_peer_rcu_once, ilk_peer_rcu_make_key);
    urcu_memb_register_thread();
    pthread_setspecific(ilk_peer_rcu_key, (void *)1); /* non-NULL: the destructor runs */
    ilk_peer_rcu_registered = 1;
}

/* ---- urcu_lfq ---- */

struct ilk_peer_urcu_lfq {
    struct cds_lfq_queue_rcu queue;
};

struct ilk_peer_lfq_node {
    struct cds_lfq_node_rcu node;
    struct rcu_head rcu;
    uintptr_t value;
};

static void ilk_peer_lfq_free(struct rcu_head *head) {
    free(caa_container_of(head, struct ilk_peer_lfq_node, rcu));
}

ilk_peer_urcu_lfq *ilk_peer_urcu_lfq_create(void) {
    ilk_peer_rcu_ensure_registered();
    ilk_peer_urcu_lfq *peer = ilk_peer_alloc(sizeof *peer);
    cds_lfq_init_rcu(&peer->queue, urcu_memb_call_rcu);
    return peer;
}

void ilk_peer_urcu_lfq_put(ilk_peer_urcu_lfq *peer, uintptr_t value) {
    ilk_peer_rcu_ensure_registered();
    struct ilk_peer_lfq_node *node = malloc(sizeof *node);
    if (node == NULL) abort();
    cds_lfq_node_init_rcu(&node->node);
    node->value = value;
    urcu_memb_read_lock();
    cds_lfq_enqueue_rcu(&peer->queue, &node->node);
    urcu_memb_read_unlock();
}

bool ilk_peer_urcu_lfq_take(ilk_peer_urcu_lfq *peer, uintptr_t *value) {
    ilk_peer_rcu_ensure_registered();
    urcu_memb_read_lock();
    struct cds_lfq_node_rcu *found = cds_lfq_dequeue_rcu(&peer->queue);
    urcu_memb_read_unlock();
    if (found == NULL) return false;
    struct ilk_peer_lfq_node *node = caa_container_of(found, struct ilk_peer_lfq_node, node);
    *value = node->value;
    urcu_memb_call_rcu(&node->rcu, ilk_peer_lfq_free);
    return true;
}

void ilk_peer_urcu_lfq_destroy(ilk_peer_urcu_lfq *peer) {
    uintptr_t ignored;
    while (ilk_peer_urcu_lfq_take(peer, &ignored)) {}
    urcu_memb_barrier(); /* every call_rcu callback has run */
    if (cds_lfq_destroy_rcu(&peer->queue) != 0) {
        fprintf(stderr, "ilk_peer_queues: cds_lfq_destroy_rcu: queue not empty\n");
        abort();
    }
    free(peer);
}

/* ---- urcu_lfs ---- */

struct ilk_peer_urcu_lfs {
    struct __cds_lfs_stack stack;
};

struct ilk_peer_lfs_node {
    struct cds_lfs_node node;
    struct rcu_head rcu;
    uintptr_t value;
};

static void ilk_peer_lfs_free(struct rcu_head *head) {
    free(caa_container_of(head, struct ilk_peer_lfs_node, rcu));
}

ilk_peer_urcu_lfs *ilk_peer_urcu_lfs_create(void) {
    ilk_peer_rcu_ensure_registered();
    ilk_peer_urcu_lfs *peer = ilk_peer_alloc(sizeof *peer);
    __cds_lfs_init(&peer->stack);
    return peer;
}

void ilk_peer_urcu_lfs_put(ilk_peer_urcu_lfs *peer, uintptr_t value) {
    struct ilk_peer_lfs_node *node = malloc(sizeof *node);
    if (node == NULL) abort();
    cds_lfs_node_init(&node->node);
    node->value = value;
    cds_lfs_push(&peer->stack, &node->node);
}

bool ilk_peer_urcu_lfs_take(ilk_peer_urcu_lfs *peer, uintptr_t *value) {
    ilk_peer_rcu_ensure_registered();
    urcu_memb_read_lock();
    struct cds_lfs_node *found = __cds_lfs_pop(&peer->stack);
    urcu_memb_read_unlock();
    if (found == NULL) return false;
    struct ilk_peer_lfs_node *node = caa_container_of(found, struct ilk_peer_lfs_node, node);
    *value = node->value;
    urcu_memb_call_rcu(&node->rcu, ilk_peer_lfs_free);
    return true;
}

void ilk_peer_urcu_drain(void) {
    urcu_memb_barrier();
}

void ilk_peer_urcu_lfs_destroy(ilk_peer_urcu_lfs *peer) {
    uintptr_t ignored;
    while (ilk_peer_urcu_lfs_take(peer, &ignored)) {}
    urcu_memb_barrier();
    free(peer);
}

/* ---- urcu_wfcq ---- */

struct ilk_peer_urcu_wfcq {
    struct cds_wfcq_head head;
    char pad[128];  /* head (with its dequeue mutex) and tail on separate cache lines */
    struct cds_wfcq_tail tail;
};

struct ilk_peer_wfcq_node {
    struct cds_wfcq_node node;
    uintptr_t value;
};

ilk_peer_urcu_wfcq *ilk_peer_urcu_wfcq_create(void) {
    ilk_peer_urcu_wfcq *peer = ilk_peer_alloc(sizeof *peer);
    cds_wfcq_init(&peer->head, &peer->tail);
    return peer;
}

void ilk_peer_urcu_wfcq_put(ilk_peer_urcu_wfcq *peer, uintptr_t value) {
    struct ilk_peer_wfcq_node *node = malloc(sizeof *node);
    if (node == NULL) abort();
    cds_wfcq_node_init(&node->node);
    node->value = value;
    cds_wfcq_enqueue(&peer->head, &peer->tail, &node->node);
}

bool ilk_peer_urcu_wfcq_take(ilk_peer_urcu_wfcq *peer, uintptr_t *value) {
    struct cds_wfcq_node *found = cds_wfcq_dequeue_blocking(&peer->head, &peer->tail);
    if (found == NULL) return false;
    struct ilk_peer_wfcq_node *node = caa_container_of(found, struct ilk_peer_wfcq_node, node);
    *value = node->value;
    free(node); /* dequeuers are mutually excluded and enqueuers never read a dequeued node */
    return true;
}

void ilk_peer_urcu_wfcq_destroy(ilk_peer_urcu_wfcq *peer) {
    uintptr_t ignored;
    while (ilk_peer_urcu_wfcq_take(peer, &ignored)) {}
    cds_wfcq_destroy(&peer->head, &peer->tail);
    free(peer);
}

/* ---- the node pool of the Concurrency Kit peers ---- */

#define POOL_NODE_SIZE 64
#define POOL_BATCH 256

struct pool_node {
    struct pool_node *next;
};

struct pool_batch_link {
    struct pool_node *first;   /* POOL_BATCH nodes chained through `next` */
    struct pool_batch_link *next;
};

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct pool_batch_link *pool_batches;       /* guarded by pool_mutex */
static struct pool_batch_link *pool_spare_links;   /* guarded by pool_mutex */
static __thread struct pool_node *pool_local;
static __thread unsigned pool_local_count;

static void *pool_get(void) {
    if (__builtin_expect(pool_local == NULL, 0)) {
        pthread_mutex_lock(&pool_mutex);
        struct pool_batch_link *batch = pool_batches;
        if (batch != NULL) {
            pool_batches = batch->next;
            pool_local = batch->first;
            pool_local_count = POOL_BATCH;
            batch->next = pool_spare_links;
            pool_spare_links = batch;
        }
        pthread_mutex_unlock(&pool_mutex);
        if (pool_local == NULL) return ilk_peer_alloc(POOL_NODE_SIZE);
    }
    struct pool_node *node = pool_local;
    pool_local = node->next;
    pool_local_count--;
    return node;
}

static void pool_put(void *memory) {
    struct pool_node *node = memory;
    node->next = pool_local;
    pool_local = node;
    if (__builtin_expect(++pool_local_count < 2 * POOL_BATCH, 1)) return;
    /* Hand the first POOL_BATCH nodes to the global list. */
    struct pool_node *first = pool_local, *last = first;
    for (unsigned i = 1; i < POOL_BATCH; i++) last = last->next;
    pool_local = last->next;
    last->next = NULL;
    pool_local_count -= POOL_BATCH;
    pthread_mutex_lock(&pool_mutex);
    struct pool_batch_link *link = pool_spare_links;
    if (link != NULL) pool_spare_links = link->next;
    else link = malloc(sizeof *link);
    if (link == NULL) abort();
    link->first = first;
    link->next = pool_batches;
    pool_batches = link;
    pthread_mutex_unlock(&pool_mutex);
}

/* ---- ck_fifo ---- */

struct ilk_peer_ck_fifo {
    struct ck_fifo_mpmc fifo; /* head and tail already a cache line apart (CK_MD_CACHELINE) */
};

_Static_assert(sizeof(struct ck_fifo_mpmc_entry) <= POOL_NODE_SIZE, "pool node too small");
_Static_assert(sizeof(ck_stack_entry_t) + sizeof(uintptr_t) <= POOL_NODE_SIZE, "pool node too small");

ilk_peer_ck_fifo *ilk_peer_ck_fifo_create(void) {
    ilk_peer_ck_fifo *peer = ilk_peer_alloc(sizeof *peer);
    ck_fifo_mpmc_init(&peer->fifo, pool_get());
    return peer;
}

void ilk_peer_ck_fifo_put(ilk_peer_ck_fifo *peer, uintptr_t value) {
    ck_fifo_mpmc_enqueue(&peer->fifo, pool_get(), (void *)value);
}

bool ilk_peer_ck_fifo_take(ilk_peer_ck_fifo *peer, uintptr_t *value) {
    struct ck_fifo_mpmc_entry *garbage;
    void *found;
    if (!ck_fifo_mpmc_dequeue(&peer->fifo, &found, &garbage)) return false;
    *value = (uintptr_t)found;
    pool_put(garbage);
    return true;
}

void ilk_peer_ck_fifo_destroy(ilk_peer_ck_fifo *peer) {
    uintptr_t ignored;
    while (ilk_peer_ck_fifo_take(peer, &ignored)) {}
    struct ck_fifo_mpmc_entry *stub;
    ck_fifo_mpmc_deinit(&peer->fifo, &stub);
    pool_put(stub);
    free(peer);
}

/* ---- ck_stack ---- */

struct ilk_peer_ck_stack {
    ck_stack_t stack;
};

struct ilk_peer_ck_stack_node {
    ck_stack_entry_t entry;
    uintptr_t value;
};

ilk_peer_ck_stack *ilk_peer_ck_stack_create(void) {
    ilk_peer_ck_stack *peer = ilk_peer_alloc(sizeof *peer);
    ck_stack_init(&peer->stack);
    return peer;
}

void ilk_peer_ck_stack_put(ilk_peer_ck_stack *peer, uintptr_t value) {
    struct ilk_peer_ck_stack_node *node = pool_get();
    node->value = value;
    ck_stack_push_mpmc(&peer->stack, &node->entry);
}

bool ilk_peer_ck_stack_take(ilk_peer_ck_stack *peer, uintptr_t *value) {
    ck_stack_entry_t *found = ck_stack_pop_mpmc(&peer->stack);
    if (found == NULL) return false;
    struct ilk_peer_ck_stack_node *node = (struct ilk_peer_ck_stack_node *)found;
    *value = node->value;
    pool_put(node);
    return true;
}

void ilk_peer_ck_stack_destroy(ilk_peer_ck_stack *peer) {
    uintptr_t ignored;
    while (ilk_peer_ck_stack_take(peer, &ignored)) {}
    free(peer);
}

/* ---- mutex_ring (FIFO) and mutex_stack (LIFO) ---- */

struct ilk_peer_mutex_ring {
    pthread_mutex_t mutex;
    uintptr_t *slots;     /* capacity is a power of two */
    size_t capacity, head, count;
};

ilk_peer_mutex_ring *ilk_peer_mutex_ring_create(void) {
    ilk_peer_mutex_ring *peer = ilk_peer_alloc(sizeof *peer);
    pthread_mutex_init(&peer->mutex, NULL);
    peer->capacity = 1024;
    peer->slots = ilk_peer_alloc(peer->capacity * sizeof(uintptr_t));
    return peer;
}

void ilk_peer_mutex_ring_put(ilk_peer_mutex_ring *peer, uintptr_t value) {
    pthread_mutex_lock(&peer->mutex);
    if (peer->count == peer->capacity) {
        uintptr_t *grown = ilk_peer_alloc(2 * peer->capacity * sizeof(uintptr_t));
        for (size_t i = 0; i < peer->count; i++)
            grown[i] = peer->slots[(peer->head + i) & (peer->capacity - 1)];
        free(peer->slots);
        peer->slots = grown;
        peer->head = 0;
        peer->capacity *= 2;
    }
    peer->slots[(peer->head + peer->count) & (peer->capacity - 1)] = value;
    peer->count++;
    pthread_mutex_unlock(&peer->mutex);
}

bool ilk_peer_mutex_ring_take(ilk_peer_mutex_ring *peer, uintptr_t *value) {
    pthread_mutex_lock(&peer->mutex);
    bool found = peer->count > 0;
    if (found) {
        *value = peer->slots[peer->head];
        peer->head = (peer->head + 1) & (peer->capacity - 1);
        peer->count--;
    }
    pthread_mutex_unlock(&peer->mutex);
    return found;
}

void ilk_peer_mutex_ring_destroy(ilk_peer_mutex_ring *peer) {
    pthread_mutex_destroy(&peer->mutex);
    free(peer->slots);
    free(peer);
}

struct ilk_peer_mutex_stack {
    pthread_mutex_t mutex;
    uintptr_t *slots;
    size_t capacity, count;
};

ilk_peer_mutex_stack *ilk_peer_mutex_stack_create(void) {
    ilk_peer_mutex_stack *peer = ilk_peer_alloc(sizeof *peer);
    pthread_mutex_init(&peer->mutex, NULL);
    peer->capacity = 1024;
    peer->slots = ilk_peer_alloc(peer->capacity * sizeof(uintptr_t));
    return peer;
}

void ilk_peer_mutex_stack_put(ilk_peer_mutex_stack *peer, uintptr_t value) {
    pthread_mutex_lock(&peer->mutex);
    if (peer->count == peer->capacity) {
        uintptr_t *grown = ilk_peer_alloc(2 * peer->capacity * sizeof(uintptr_t));
        memcpy(grown, peer->slots, peer->count * sizeof(uintptr_t));
        free(peer->slots);
        peer->slots = grown;
        peer->capacity *= 2;
    }
    peer->slots[peer->count++] = value;
    pthread_mutex_unlock(&peer->mutex);
}

bool ilk_peer_mutex_stack_take(ilk_peer_mutex_stack *peer, uintptr_t *value) {
    pthread_mutex_lock(&peer->mutex);
    bool found = peer->count > 0;
    if (found) *value = peer->slots[--peer->count];
    pthread_mutex_unlock(&peer->mutex);
    return found;
}

void ilk_peer_mutex_stack_destroy(ilk_peer_mutex_stack *peer) {
    pthread_mutex_destroy(&peer->mutex);
    free(peer->slots);
    free(peer);
}
