/*
 * ilk_peer_lock.h — the C peers of Interlock's lock benchmarks: glibc's pthread mutex (default
 * and PTHREAD_MUTEX_ADAPTIVE_NP, which spins before sleeping), recursive mutex, spin lock, and
 * reader-writer lock (default, which prefers readers, and
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP); and Concurrency Kit's fastest spin locks and
 * reader-writer lock (libck-dev; its lock operations are header-only inline functions, so no
 * library is linked).
 *
 *   ilk_peer_mutex      a pthread_mutex_t of a given kind; lock/unlock are static inline, so a
 *                       Swift caller pays exactly the call into glibc that a C caller pays
 *   ilk_peer_spin       a pthread_spinlock_t
 *   ilk_peer_rwlock     a pthread_rwlock_t of a given kind
 *   ilk_peer_ck_fas     a ck_spinlock_fas_t: fetch-and-store spin lock (a waiter spins on a
 *                       load, then swaps again)
 *   ilk_peer_ck_ticket  a ck_spinlock_ticket_t: FIFO ticket spin lock
 *   ilk_peer_ck_rwlock  a ck_rwlock_t: spinning reader-writer lock (a writer claims the lock,
 *                       then waits for the readers to drain; readers wait while it is claimed)
 * CK's lock operations are themselves static inline in CK's headers, so through these wrappers
 * the whole lock and unlock inline into the Swift loop, as into a C one. They never sleep: a
 * waiter spins (pause) until the lock is free, however long its holder is preempted.
 *
 * Every object lives in its own heap allocation, 128-byte aligned (nothing else shares its
 * cache lines), and never moves (pthread objects must not). Creation checks every pthread
 * result and aborts naming the function and the error; lock and unlock results are not checked
 * in the measured loop (none of these can fail when used correctly), as in most C code.
 * The creation functions live in ilk_peer_lock.c, which defines _GNU_SOURCE for the _NP kinds.
 */
#ifndef ILK_PEER_LOCK_H
#define ILK_PEER_LOCK_H

#include <ck_rwlock.h>
#include <ck_spinlock.h>
#include <pthread.h>

typedef struct ilk_peer_mutex {
    pthread_mutex_t mutex;
} ilk_peer_mutex;

typedef struct ilk_peer_spin {
    pthread_spinlock_t spin;
} ilk_peer_spin;

typedef struct ilk_peer_rwlock {
    pthread_rwlock_t rwlock;
} ilk_peer_rwlock;

typedef struct ilk_peer_ck_fas {
    ck_spinlock_fas_t lock;
} ilk_peer_ck_fas;

typedef struct ilk_peer_ck_ticket {
    ck_spinlock_ticket_t lock;
} ilk_peer_ck_ticket;

typedef struct ilk_peer_ck_rwlock {
    ck_rwlock_t lock;
} ilk_peer_ck_rwlock;

enum {
    ILK_PEER_MUTEX_DEFAULT = 0,   /* PTHREAD_MUTEX_NORMAL attributes left at their defaults */
    ILK_PEER_MUTEX_ADAPTIVE = 1,  /* PTHREAD_MUTEX_ADAPTIVE_NP: spins a while before sleeping */
    ILK_PEER_MUTEX_RECURSIVE = 2, /* PTHREAD_MUTEX_RECURSIVE */
};

enum {
    ILK_PEER_RWLOCK_DEFAULT = 0,       /* glibc's default: prefers readers */
    ILK_PEER_RWLOCK_PREFER_WRITER = 1, /* PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP */
};

ilk_peer_mutex *ilk_peer_mutex_create(int kind);
void ilk_peer_mutex_destroy(ilk_peer_mutex *m);
ilk_peer_spin *ilk_peer_spin_create(void);
void ilk_peer_spin_destroy(ilk_peer_spin *s);
ilk_peer_rwlock *ilk_peer_rwlock_create(int kind);
void ilk_peer_rwlock_destroy(ilk_peer_rwlock *l);
ilk_peer_ck_fas *ilk_peer_ck_fas_create(void);
void ilk_peer_ck_fas_destroy(ilk_peer_ck_fas *s);
ilk_peer_ck_ticket *ilk_peer_ck_ticket_create(void);
void ilk_peer_ck_ticket_destroy(ilk_peer_ck_ticket *s);
ilk_peer_ck_rwlock *ilk_peer_ck_rwlock_create(void);
void ilk_peer_ck_rwlock_destroy(ilk_peer_ck_rwlock *l);

static inline __attribute__((always_inline)) void ilk_peer_mutex_lock(ilk_peer_mutex *m) {
    (void)pthread_mutex_lock(&m->mutex);
}
static inline __attribute__((always_inline)) void ilk_peer_mutex_unlock(ilk_peer_mutex *m) {
    (void)pthread_mutex_unlock(&m->mutex);
}
static inline __attribute__((always_inline)) void ilk_peer_spin_lock(ilk_peer_spin *s) {
    (void)pthread_spin_lock(&s->spin);
}
static inline __attribute__((always_inline)) void ilk_peer_spin_unlock(ilk_peer_spin *s) {
    (void)pthread_spin_unlock(&s->spin);
}
static inline __attribute__((always_inline)) void ilk_peer_rwlock_rdlock(ilk_peer_rwlock *l) {
    (void)pthread_rwlock_rdlock(&l->rwlock);
}
static inline __attribute__((always_inline)) void ilk_peer_rwlock_wrlock(ilk_peer_rwlock *l) {
    (void)pthread_rwlock_wrlock(&l->rwlock);
}
static inline __attribute__((always_inline)) void ilk_peer_rwlock_unlock(ilk_peer_rwlock *l) {
    (void)pthread_rwlock_unlock(&l->rwlock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_fas_lock(ilk_peer_ck_fas *s) {
    ck_spinlock_fas_lock(&s->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_fas_unlock(ilk_peer_ck_fas *s) {
    ck_spinlock_fas_unlock(&s->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_ticket_lock(ilk_peer_ck_ticket *s) {
    ck_spinlock_ticket_lock(&s->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_ticket_unlock(ilk_peer_ck_ticket *s) {
    ck_spinlock_ticket_unlock(&s->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_rwlock_read_lock(ilk_peer_ck_rwlock *l) {
    ck_rwlock_read_lock(&l->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_rwlock_read_unlock(ilk_peer_ck_rwlock *l) {
    ck_rwlock_read_unlock(&l->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_rwlock_write_lock(ilk_peer_ck_rwlock *l) {
    ck_rwlock_write_lock(&l->lock);
}
static inline __attribute__((always_inline)) void ilk_peer_ck_rwlock_write_unlock(ilk_peer_ck_rwlock *l) {
    ck_rwlock_write_unlock(&l->lock);
}

#endif /* ILK_PEER_LOCK_H */
