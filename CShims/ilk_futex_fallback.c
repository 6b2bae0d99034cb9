/*
 * Portable futex emulation for platforms without futex(2), or when ILK_FUTEX_FORCE_FALLBACK is
 * defined. A fixed table of buckets, each a pthread mutex and condition variable; a word hashes
 * to one bucket. Waiters check the word under the bucket mutex, so a wake that follows a store
 * to the word cannot be lost: the waker takes the same mutex before broadcasting. Wakes
 * broadcast the whole bucket (waiters sharing a bucket see spurious wake-ups, which the futex
 * contract allows), and requeue degrades to waking everyone.
 */
#include "include/ilk_futex.h"

#if !ILK_HAVE_FUTEX

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#define ILK_FALLBACK_BUCKETS 64

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
} ilk_fallback_bucket;

static ilk_fallback_bucket ilk_buckets[ILK_FALLBACK_BUCKETS];
static pthread_once_t ilk_buckets_once = PTHREAD_ONCE_INIT;

/* Timed waits measure on CLOCK_MONOTONIC where the platform lets a condvar use it (the futex
 * contract's clock), on CLOCK_REALTIME elsewhere. */
#if defined(__APPLE__)
#define ILK_FALLBACK_CLOCK CLOCK_REALTIME
#else
#define ILK_FALLBACK_CLOCK CLOCK_MONOTONIC
#endif

static void ilk_buckets_init(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
#if !defined(__APPLE__)
    pthread_condattr_setclock(&attr, ILK_FALLBACK_CLOCK);
#endif
    for (int i = 0; i < ILK_FALLBACK_BUCKETS; i++) {
        pthread_mutex_init(&ilk_buckets[i].mutex, NULL);
        pthread_cond_init(&ilk_buckets[i].cond, &attr);
    }
    pthread_condattr_destroy(&attr);
}

static ilk_fallback_bucket *ilk_bucket_for(const uint32_t *word) {
    pthread_once(&ilk_buckets_once, ilk_buckets_init);
    uintptr_t h = (uintptr_t)word >> 2;
    h ^= h >> 7;
    return &ilk_buckets[h % ILK_FALLBACK_BUCKETS];
}

int ilk_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    ilk_fallback_bucket *b = ilk_bucket_for(word);
    int result = ILK_FUTEX_WOKEN;
    pthread_mutex_lock(&b->mutex);
    if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != expected) {
        result = ILK_FUTEX_VALUE_CHANGED;
    } else if (timeout_ns < 0) {
        pthread_cond_wait(&b->cond, &b->mutex);
    } else {
        struct timespec ts;
        clock_gettime(ILK_FALLBACK_CLOCK, &ts);
        int64_t total = (int64_t)ts.tv_nsec + timeout_ns % 1000000000;
        ts.tv_sec += (time_t)(timeout_ns / 1000000000 + total / 1000000000);
        ts.tv_nsec = (long)(total % 1000000000);
        if (pthread_cond_timedwait(&b->cond, &b->mutex, &ts) == ETIMEDOUT)
            result = ILK_FUTEX_TIMED_OUT;
    }
    pthread_mutex_unlock(&b->mutex);
    return result;
}

int ilk_futex_wake(uint32_t *word, int32_t count) {
    (void)count;
    ilk_fallback_bucket *b = ilk_bucket_for(word);
    pthread_mutex_lock(&b->mutex);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->mutex);
    return 0;
}

int ilk_futex_requeue(uint32_t *word, uint32_t expected, int32_t wake_count, uint32_t *target,
                      int32_t requeue_count) {
    (void)target;
    (void)requeue_count;
    (void)wake_count;
    if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != expected) return -EAGAIN;
    ilk_futex_wake(word, INT32_MAX);
    return 0;
}

uint32_t ilk_current_thread_id(void) {
    static uint32_t next_id = 1;
    static _Thread_local uint32_t cached;
    if (cached == 0) cached = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    return cached;
}

#endif /* !ILK_HAVE_FUTEX */
