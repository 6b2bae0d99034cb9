/*
 * ilk_peer_channels.h — the C peers of Interlock's BoundedChannel, behind one small C API for
 * the channel benchmarks. Each stores `uintptr_t` values in a bounded FIFO shared by any number of
 * producers and consumers:
 *
 *   condvar_ring  a pthread mutex, a ring of `capacity` slots and two condition variables (not
 *                 full, not empty): the bounded buffer people write by hand. Capacity 0 makes
 *                 a rendezvous (one slot, and the sender waits on a third condition until a
 *                 receiver has taken its element).
 *   ck_ring       Concurrency Kit's ck_ring in its multi-producer, multi-consumer mode: never
 *                 waits; a full enqueue or an empty dequeue fails, and the benchmark's caller
 *                 spins (pause, then yield every 64 attempts). Capacity: a power of two; ck_ring
 *                 keeps one slot empty, so it is created with twice the asked-for capacity
 *                 rounded up (the non-blocking reference, not the same guarantees).
 *
 *   ilk_peer_<name>_create(capacity)          -> handle (traps when out of memory)
 *   ilk_peer_<name>_send(handle, value)        blocks while full (condvar_ring); or try once
 *   ilk_peer_<name>_receive(handle) -> value   blocks while empty (condvar_ring)
 *   ilk_peer_ck_ring_try_send / _try_receive   the non-blocking forms
 *   ilk_peer_<name>_destroy(handle)
 *
 * Every symbol is prefixed ilk_peer_.
 */
#ifndef ILK_PEER_CHANNELS_H
#define ILK_PEER_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ilk_peer_condvar_ring ilk_peer_condvar_ring;
ilk_peer_condvar_ring *ilk_peer_condvar_ring_create(size_t capacity);
void ilk_peer_condvar_ring_send(ilk_peer_condvar_ring *peer, uintptr_t value);
uintptr_t ilk_peer_condvar_ring_receive(ilk_peer_condvar_ring *peer);
void ilk_peer_condvar_ring_destroy(ilk_peer_condvar_ring *peer);

typedef struct ilk_peer_ck_ring ilk_peer_ck_ring;
ilk_peer_ck_ring *ilk_peer_ck_ring_create(size_t capacity);
bool ilk_peer_ck_ring_try_send(ilk_peer_ck_ring *peer, uintptr_t value);
bool ilk_peer_ck_ring_try_receive(ilk_peer_ck_ring *peer, uintptr_t *value);
void ilk_peer_ck_ring_destroy(ilk_peer_ck_ring *peer);

#endif /* ILK_PEER_CHANNELS_H */
