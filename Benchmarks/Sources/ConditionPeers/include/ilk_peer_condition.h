/*
 * ilk_peer_condition.h — the C peers of Interlock's Condition and ConditionLock benchmarks:
 * glibc's pthread condition variable and mutex, and the hand-written condition lock a C
 * programmer would write (a pthread mutex, a pthread condvar and an int, NSConditionLock's
 * own design in swift-corelibs-foundation).
 *
 *   ilk_peer_pingpong      a pthread mutex + condvar + `turn`; ilk_peer_pingpong_run() is the
 *                          whole loop of one side of the ping-pong benchmark, in C
 *   ilk_peer_condlock      mutex + condvar + int condition: lock_when waits on the condvar
 *                          until the int matches; unlock_with sets it and BROADCASTS (a waiter
 *                          for another value cannot be singled out with one condvar)
 *
 * Every object lives in its own heap allocation, 128-byte aligned (no false sharing with
 * anything else) and is never moved (pthread objects must not be). Every pthread call's result
 * is checked: a failure aborts with the function's name and the error.
 */
#ifndef ILK_PEER_CONDITION_H
#define ILK_PEER_CONDITION_H

#include <stdint.h>

typedef struct ilk_peer_pingpong ilk_peer_pingpong;
typedef struct ilk_peer_condlock ilk_peer_condlock;

/* A ping-pong object with turn = 0. */
ilk_peer_pingpong *ilk_peer_pingpong_create(void);
void ilk_peer_pingpong_destroy(ilk_peer_pingpong *p);
/* `rounds` times: lock; while turn != me: wait; turn = other; signal; unlock. */
void ilk_peer_pingpong_run(ilk_peer_pingpong *p, int me, int other, int rounds);

/* A condition lock holding `condition`. */
ilk_peer_condlock *ilk_peer_condlock_create(long condition);
void ilk_peer_condlock_destroy(ilk_peer_condlock *c);
void ilk_peer_condlock_lock_when(ilk_peer_condlock *c, long condition);
void ilk_peer_condlock_unlock_with(ilk_peer_condlock *c, long condition);

#endif /* ILK_PEER_CONDITION_H */
