// ilk_peer_boost.cpp — Boost.Lockfree's queue and stack behind the C API of ilk_peer_boost.h.
//
// Both are created with an initial freelist of 1024 nodes (the documented way to avoid
// allocating on the hot path); push allocates more only when the freelist is empty, and popped
// nodes go back to the freelist (never to the system while the container lives), which is how
// Boost.Lockfree makes its tagged-pointer CAS safe from ABA and use-after-free.

#include "ilk_peer_boost.h"

#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/stack.hpp>

struct ilk_peer_boost_queue {
    boost::lockfree::queue<uintptr_t> queue{1024};
};

struct ilk_peer_boost_stack {
    boost::lockfree::stack<uintptr_t> stack{1024};
};

extern "C" {

ilk_peer_boost_queue *ilk_peer_boost_queue_create(void) { return new ilk_peer_boost_queue(); }

void ilk_peer_boost_queue_put(ilk_peer_boost_queue *peer, uintptr_t value) {
    while (!peer->queue.push(value)) {}  // fails only when a node cannot be allocated
}

bool ilk_peer_boost_queue_take(ilk_peer_boost_queue *peer, uintptr_t *value) {
    return peer->queue.pop(*value);
}

void ilk_peer_boost_queue_destroy(ilk_peer_boost_queue *peer) { delete peer; }

ilk_peer_boost_stack *ilk_peer_boost_stack_create(void) { return new ilk_peer_boost_stack(); }

void ilk_peer_boost_stack_put(ilk_peer_boost_stack *peer, uintptr_t value) {
    while (!peer->stack.push(value)) {}  // fails only when a node cannot be allocated
}

bool ilk_peer_boost_stack_take(ilk_peer_boost_stack *peer, uintptr_t *value) {
    return peer->stack.pop(*value);
}

void ilk_peer_boost_stack_destroy(ilk_peer_boost_stack *peer) { delete peer; }

}  // extern "C"
