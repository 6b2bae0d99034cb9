/*
 * The pthread peers of the condition benchmarks (see include/ilk_peer_condition.h).
 * Default mutex and condvar attributes: what NSCondition and most C code use.
 */
#include "ilk_peer_condition.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ilk_peer_pingpong {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int turn;
};

struct ilk_peer_condlock {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    long condition;
};

static void ilk_peer_check(int rc, const char *what) {
    if (rc != 0) {
        fprintf(stderr, "ilk_peer_condition: %s failed: %s\n", what, strerror(rc));
        abort();
    }
}

static void *ilk_peer_alloc(size_t size) {
    void *p = NULL;
    ilk_peer_check(posix_memalign(&p, 128, size < 128 ? 128 : size), "posix_memalign");
    memset(p, 0, size);
    return p;
}

ilk_peer_pingpong *ilk_peer_pingpong_create(void) {
    ilk_peer_pingpong *p = ilk_peer_alloc(sizeof *p);
    ilk_peer_check(pthread_mutex_init(&p->mutex, NULL), "pthread_mutex_init");
    ilk_peer_check(pthread_cond_init(&p->cond, NULL), "pthread_cond_init");
    p->turn = 0;
    return p;
}

void ilk_peer_pingpong_destroy(ilk_peer_pingpong *p) {
    ilk_peer_check(pthread_cond_destroy(&p->cond), "pthread_cond_destroy");
    ilk_peer_check(pthread_mutex_destroy(&p->mutex), "pthread_mutex_destroy");
    free(p);
}

void ilk_peer_pingpong_run(ilk_peer_pingpong *p, int me, int other, int rounds) {
    for (int i = 0; i < rounds; i++) {
        ilk_peer_check(pthread_mutex_lock(&p->mutex), "pthread_mutex_lock");
        while (p->turn != me) ilk_peer_check(pthread_cond_wait(&p->cond, &p->mutex), "pthread_cond_wait");
        p->turn = other;
        ilk_peer_check(pthread_cond_signal(&p->cond), "pthread_cond_signal");
        ilk_peer_check(pthread_mutex_unlock(&p->mutex), "pthread_mutex_unlock");
    }
}

ilk_peer_condlock *ilk_peer_condlock_create(long condition) {
    ilk_peer_condlock *c = ilk_peer_alloc(sizeof *c);
    ilk_peer_check(pthread_mutex_init(&c->mutex, NULL), "pthread_mutex_init");
    ilk_peer_check(pthread_cond_init(&c->cond, NULL), "pthread_cond_init");
    c->condition = condition;
    return c;
}

void ilk_peer_condlock_destroy(ilk_peer_condlock *c) {
    ilk_peer_check(pthread_cond_destroy(&c->cond), "pthread_cond_destroy");
    ilk_peer_check(pthread_mutex_destroy(&c->mutex), "pthread_mutex_destroy");
    free(c);
}

void ilk_peer_condlock_lock_when(ilk_peer_condlock *c, long condition) {
    ilk_peer_check(pthread_mutex_lock(&c->mutex), "pthread_mutex_lock");
    while (c->condition != condition)
        ilk_peer_check(pthread_cond_wait(&c->cond, &c->mutex), "pthread_cond_wait");
}

void ilk_peer_condlock_unlock_with(ilk_peer_condlock *c, long condition) {
    c->condition = condition;
    ilk_peer_check(pthread_cond_broadcast(&c->cond), "pthread_cond_broadcast");
    ilk_peer_check(pthread_mutex_unlock(&c->mutex), "pthread_mutex_unlock");
}
