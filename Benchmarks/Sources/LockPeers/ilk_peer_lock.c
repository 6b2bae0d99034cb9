/* Creation and destruction of the pthread and Concurrency Kit peers (see include/ilk_peer_lock.h). */
#define _GNU_SOURCE
#include "ilk_peer_lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void ilk_peer_check(int rc, const char *function) {
    if (rc != 0) {
        fprintf(stderr, "LockPeers: %s failed: %s\n", function, strerror(rc));
        abort();
    }
}

static void *ilk_peer_allocate(size_t size) {
    void *p = NULL;
    size_t rounded = (size + 127) / 128 * 128;
    ilk_peer_check(posix_memalign(&p, 128, rounded), "posix_memalign");
    memset(p, 0, rounded);
    return p;
}

ilk_peer_mutex *ilk_peer_mutex_create(int kind) {
    ilk_peer_mutex *m = ilk_peer_allocate(sizeof *m);
    pthread_mutexattr_t attr;
    ilk_peer_check(pthread_mutexattr_init(&attr), "pthread_mutexattr_init");
    if (kind == ILK_PEER_MUTEX_ADAPTIVE)
        ilk_peer_check(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP), "pthread_mutexattr_settype");
    else if (kind == ILK_PEER_MUTEX_RECURSIVE)
        ilk_peer_check(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE), "pthread_mutexattr_settype");
    ilk_peer_check(pthread_mutex_init(&m->mutex, &attr), "pthread_mutex_init");
    ilk_peer_check(pthread_mutexattr_destroy(&attr), "pthread_mutexattr_destroy");
    return m;
}

void ilk_peer_mutex_destroy(ilk_peer_mutex *m) {
    ilk_peer_check(pthread_mutex_destroy(&m->mutex), "pthread_mutex_destroy");
    free(m);
}

ilk_peer_spin *ilk_peer_spin_create(void) {
    ilk_peer_spin *s = ilk_peer_allocate(sizeof *s);
    ilk_peer_check(pthread_spin_init(&s->spin, PTHREAD_PROCESS_PRIVATE), "pthread_spin_init");
    return s;
}

void ilk_peer_spin_destroy(ilk_peer_spin *s) {
    ilk_peer_check(pthread_spin_destroy(&s->spin), "pthread_spin_destroy");
    free(s);
}

ilk_peer_rwlock *ilk_peer_rwlock_create(int kind) {
    ilk_peer_rwlock *l = ilk_peer_allocate(sizeof *l);
    pthread_rwlockattr_t attr;
    ilk_peer_check(pthread_rwlockattr_init(&attr), "pthread_rwlockattr_init");
    if (kind == ILK_PEER_RWLOCK_PREFER_WRITER)
        ilk_peer_check(pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
                       "pthread_rwlockattr_setkind_np");
    ilk_peer_check(pthread_rwlock_init(&l->rwlock, &attr), "pthread_rwlock_init");
    ilk_peer_check(pthread_rwlockattr_destroy(&attr), "pthread_rwlockattr_destroy");
    return l;
}

void ilk_peer_rwlock_destroy(ilk_peer_rwlock *l) {
    ilk_peer_check(pthread_rwlock_destroy(&l->rwlock), "pthread_rwlock_destroy");
    free(l);
}

/* CK's locks hold no resources: init, and free the memory. */

ilk_peer_ck_fas *ilk_peer_ck_fas_create(void) {
    ilk_peer_ck_fas *s = ilk_peer_allocate(sizeof *s);
    ck_spinlock_fas_init(&s->lock);
    return s;
}

void ilk_peer_ck_fas_destroy(ilk_peer_ck_fas *s) {
    free(s);
}

ilk_peer_ck_ticket *ilk_peer_ck_ticket_create(void) {
    ilk_peer_ck_ticket *s = ilk_peer_allocate(sizeof *s);
    ck_spinlock_ticket_init(&s->lock);
    return s;
}

void ilk_peer_ck_ticket_destroy(ilk_peer_ck_ticket *s) {
    free(s);
}

ilk_peer_ck_rwlock *ilk_peer_ck_rwlock_create(void) {
    ilk_peer_ck_rwlock *l = ilk_peer_allocate(sizeof *l);
    ck_rwlock_init(&l->lock);
    return l;
}

void ilk_peer_ck_rwlock_destroy(ilk_peer_ck_rwlock *l) {
    free(l);
}
