/*
 * ilk_peer_boost.h — Boost.Lockfree's queue and stack as C peers for the queue benchmarks,
 * with the same four-function shape as ilk_peer_queues.h:
 *   ilk_peer_boost_queue_*   boost::lockfree::queue<uintptr_t>  (Michael–Scott, tagged
 *                            pointers, nodes recycled through its own lock-free freelist)
 *   ilk_peer_boost_stack_*   boost::lockfree::stack<uintptr_t>  (Treiber, same freelist)
 * Every function may be called from any number of threads at once, except create/destroy.
 * Boost is header-only (Debian: libboost-dev); this C++ target exists only to give Swift a
 * C API. Every symbol is prefixed ilk_peer_.
 */
#ifndef ILK_PEER_BOOST_H
#define ILK_PEER_BOOST_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ilk_peer_boost_queue ilk_peer_boost_queue;
ilk_peer_boost_queue *ilk_peer_boost_queue_create(void);
void ilk_peer_boost_queue_put(ilk_peer_boost_queue *peer, uintptr_t value);
bool ilk_peer_boost_queue_take(ilk_peer_boost_queue *peer, uintptr_t *value);
void ilk_peer_boost_queue_destroy(ilk_peer_boost_queue *peer);

typedef struct ilk_peer_boost_stack ilk_peer_boost_stack;
ilk_peer_boost_stack *ilk_peer_boost_stack_create(void);
void ilk_peer_boost_stack_put(ilk_peer_boost_stack *peer, uintptr_t value);
bool ilk_peer_boost_stack_take(ilk_peer_boost_stack *peer, uintptr_t *value);
void ilk_peer_boost_stack_destroy(ilk_peer_boost_stack *peer);

#ifdef __cplusplus
}
#endif

#endif /* ILK_PEER_BOOST_H */
