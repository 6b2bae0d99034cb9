/*
 * ilk_rcu.c — per-thread retirement batches over liburcu's call_rcu (see include/ilk_rcu.h).
 *
 * State per thread: `ilk_rcu_pending`, a batch being filled (NULL until the first retire).
 * A batch is owned by its thread until it is full (or flushed); then it is handed to
 * call_rcu, after which only liburcu's worker touches it, in ilk_rcu_free_batch, after a
 * grace period. A pthread_key destructor hands over a partial batch when the thread exits.
 */
#include "include/ilk_rcu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char ilk_rcu_tsan_token;

struct ilk_rcu_batch {
    struct rcu_head head; /* first: the callback gets it back */
    size_t count;
    size_t bytes;
    void *blocks[ILK_RCU_BATCH_BLOCKS];
};

static __thread struct ilk_rcu_batch *ilk_rcu_pending;
static pthread_key_t ilk_rcu_exit_key;
static pthread_once_t ilk_rcu_exit_once = PTHREAD_ONCE_INIT;
static long ilk_rcu_in_flight; /* batches handed to call_rcu, not yet freed (statistics) */

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
    free(batch);
    __atomic_fetch_sub(&ilk_rcu_in_flight, 1, __ATOMIC_RELAXED); /* statistics only */
}

static void ilk_rcu_hand_over(struct ilk_rcu_batch *batch) {
#ifdef ILK_TSAN
    __tsan_release(&ilk_rcu_tsan_token);
#endif
    __atomic_fetch_add(&ilk_rcu_in_flight, 1, __ATOMIC_RELAXED); /* statistics only */
    call_rcu(&batch->head, ilk_rcu_free_batch);
}

static void ilk_rcu_thread_exit(void *value) {
    (void)value;
    struct ilk_rcu_batch *batch = ilk_rcu_pending;
    ilk_rcu_pending = NULL;
    if (batch != NULL && batch->count > 0) {
        ilk_rcu_hand_over(batch);
    } else {
        free(batch);
    }
}

static void ilk_rcu_make_exit_key(void) {
    if (pthread_key_create(&ilk_rcu_exit_key, ilk_rcu_thread_exit) != 0) {
        fprintf(stderr, "Interlock: pthread_key_create failed for the RCU retirement batches\n");
        abort();
    }
}

static __attribute__((noinline)) struct ilk_rcu_batch *ilk_rcu_new_batch(void) {
    struct ilk_rcu_batch *batch = malloc(sizeof *batch);
    if (batch == NULL) ilk_rcu_oom(sizeof *batch);
    batch->count = 0;
    batch->bytes = 0;
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
        ilk_rcu_hand_over(batch);
    }
}

void ilk_rcu_flush(void) {
    struct ilk_rcu_batch *batch = ilk_rcu_pending;
    if (batch != NULL && batch->count > 0) {
        ilk_rcu_pending = NULL;
        ilk_rcu_hand_over(batch);
    }
}

void ilk_rcu_barrier(void) {
    ilk_rcu_flush();
    rcu_barrier();
}

long ilk_rcu_batches_in_flight(void) {
    return __atomic_load_n(&ilk_rcu_in_flight, __ATOMIC_RELAXED);
}
