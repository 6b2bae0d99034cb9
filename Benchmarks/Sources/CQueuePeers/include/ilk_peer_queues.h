/*
 * ilk_peer_queues.h — the C queue and stack peers of Interlock's LockFreeQueue and
 * LockFreeStack, behind one small C API for the queue benchmarks.
 *
 * Every peer stores `uintptr_t` values and has the same four functions:
 *   ilk_peer_<name>_create(void)                 -> an opaque handle (traps when out of memory)
 *   ilk_peer_<name>_put(handle, value)           enqueue / push
 *   ilk_peer_<name>_take(handle, &value) -> bool dequeue / pop; false when empty
 *   ilk_peer_<name>_destroy(handle)              frees the handle and any element left in it
 *
 * FIFO peers                               LIFO peers
 *   urcu_lfq   liburcu cds_lfq (RCU)         urcu_lfs   liburcu cds_lfs (RCU pop)
 *   urcu_wfcq  liburcu cds_wfcq              ck_stack   Concurrency Kit ck_stack (mpmc)
 *   ck_fifo    Concurrency Kit ck_fifo_mpmc  mutex_stack pthread mutex + array
 *   mutex_ring pthread mutex + ring buffer
 * (Boost.Lockfree's queue and stack live in the sibling C++ target CBoostQueuePeers.)
 *
 * Synchronization: every function may be called from any number of threads at once, except
 * create/destroy, which need the handle to be unshared. Memory: see each peer in the .c file.
 * Every symbol is prefixed ilk_peer_.
 */
#ifndef ILK_PEER_QUEUES_H
#define ILK_PEER_QUEUES_H

#include <stdbool.h>
#include <stdint.h>

#define ILK_PEER_DECLARE(name)                                                     \
    typedef struct ilk_peer_##name ilk_peer_##name;                                \
    ilk_peer_##name *ilk_peer_##name##_create(void);                               \
    void ilk_peer_##name##_put(ilk_peer_##name *peer, uintptr_t value);            \
    bool ilk_peer_##name##_take(ilk_peer_##name *peer, uintptr_t *value);          \
    void ilk_peer_##name##_destroy(ilk_peer_##name *peer);

ILK_PEER_DECLARE(urcu_lfq)
ILK_PEER_DECLARE(urcu_wfcq)
ILK_PEER_DECLARE(urcu_lfs)
ILK_PEER_DECLARE(ck_fifo)
ILK_PEER_DECLARE(ck_stack)
ILK_PEER_DECLARE(mutex_ring)
ILK_PEER_DECLARE(mutex_stack)

#undef ILK_PEER_DECLARE

/* Waits until every node the liburcu peers handed to call_rcu has been freed (urcu_memb_barrier):
 * the end of a urcu_lfq or urcu_lfs run, so that its backlog is not drained during the next
 * contender's run. Not inside a read-side critical section. */
void ilk_peer_urcu_drain(void);

#endif /* ILK_PEER_QUEUES_H */
