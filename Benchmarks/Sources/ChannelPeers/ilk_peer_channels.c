/*
 * ilk_peer_channels.c — the C peers of BoundedChannel (see the header).
 *
 * condvar_ring: one mutex; `count` elements from `head`; a sender waits on `not_full` while
 * count == capacity, a receiver on `not_empty` while count == 0, and each signals the other's
 * condition after its change (pthread_cond_signal with the mutex held, as in most hand-written
 * versions). Rendezvous (capacity 0): one slot and a generation counter; the sender stores its
 * element, signals `not_empty`, and waits on `taken` until a receiver has moved the generation
 * past its own; a later sender waits on `not_full` while the slot is occupied.
 */
#define _GNU_SOURCE

#include "ilk_peer_channels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <ck_ring.h>

static void *ilk_peer_channel_alloc(size_t size) {
    void *memory = NULL;
    if (posix_memalign(&memory, 64, size) != 0 || memory == NULL) {
        fprintf(stderr, "ilk_peer_channels: out of memory allocating %zu bytes\n", size);
        abort();
    }
    return memory;
}

struct ilk_peer_condvar_ring {
    pthread_mutex_t mutex;
    pthread_cond_t not_full, not_empty, taken;
    uintptr_t *slots;
    size_t capacity, head, count;
    uint64_t sent, received; /* rendezvous: elements stored and taken so far */
};

ilk_peer_condvar_ring *ilk_peer_condvar_ring_create(size_t capacity) {
    ilk_peer_condvar_ring *peer = ilk_peer_channel_alloc(sizeof *peer);
    pthread_mutex_init(&peer->mutex, NULL);
    pthread_cond_init(&peer->not_full, NULL);
    pthread_cond_init(&peer->not_empty, NULL);
    pthread_cond_init(&peer->taken, NULL);
    peer->capacity = capacity;
    peer->slots = ilk_peer_channel_alloc((capacity == 0 ? 1 : capacity) * sizeof(uintptr_t));
    peer->head = peer->count = 0;
    peer->sent = peer->received = 0;
    return peer;
}

void ilk_peer_condvar_ring_send(ilk_peer_condvar_ring *peer, uintptr_t value) {
    pthread_mutex_lock(&peer->mutex);
    if (peer->capacity == 0) {
        while (peer->count == 1) pthread_cond_wait(&peer->not_full, &peer->mutex);
        peer->slots[0] = value;
        peer->count = 1;
        uint64_t mine = ++peer->sent;
        pthread_cond_signal(&peer->not_empty);
        while (peer->received < mine) pthread_cond_wait(&peer->taken, &peer->mutex);
        pthread_cond_signal(&peer->not_full);
        pthread_mutex_unlock(&peer->mutex);
        return;
    }
    while (peer->count == peer->capacity) pthread_cond_wait(&peer->not_full, &peer->mutex);
    peer->slots[(peer->head + peer->count) % peer->capacity] = value;
    peer->count += 1;
    pthread_cond_signal(&peer->not_empty);
    pthread_mutex_unlock(&peer->mutex);
}

uintptr_t ilk_peer_condvar_ring_receive(ilk_peer_condvar_ring *peer) {
    pthread_mutex_lock(&peer->mutex);
    while (peer->count == 0) pthread_cond_wait(&peer->not_empty, &peer->mutex);
    uintptr_t value;
    if (peer->capacity == 0) {
        value = peer->slots[0];
        peer->count = 0;
        peer->received += 1;
        /* Every waiting sender checks its own generation. */
        pthread_cond_broadcast(&peer->taken);
    } else {
        value = peer->slots[peer->head];
        peer->head = (peer->head + 1) % peer->capacity;
        peer->count -= 1;
        pthread_cond_signal(&peer->not_full);
    }
    pthread_mutex_unlock(&peer->mutex);
    return value;
}

void ilk_peer_condvar_ring_destroy(ilk_peer_condvar_ring *peer) {
    pthread_cond_destroy(&peer->taken);
    pthread_cond_destroy(&peer->not_empty);
    pthread_cond_destroy(&peer->not_full);
    pthread_mutex_destroy(&peer->mutex);
    free(peer->slots);
    free(peer);
}

struct ilk_peer_ck_ring {
    ck_ring_t ring;
    ck_ring_buffer_t *buffer;
};

ilk_peer_ck_ring *ilk_peer_ck_ring_create(size_t capacity) {
    size_t size = 2;
    while (size < 2 * capacity) size *= 2;
    ilk_peer_ck_ring *peer = ilk_peer_channel_alloc(sizeof *peer);
    peer->buffer = ilk_peer_channel_alloc(size * sizeof(ck_ring_buffer_t));
    ck_ring_init(&peer->ring, (unsigned int)size);
    return peer;
}

bool ilk_peer_ck_ring_try_send(ilk_peer_ck_ring *peer, uintptr_t value) {
    return ck_ring_enqueue_mpmc(&peer->ring, peer->buffer, (void *)value);
}

bool ilk_peer_ck_ring_try_receive(ilk_peer_ck_ring *peer, uintptr_t *value) {
    void *taken = NULL;
    if (!ck_ring_dequeue_mpmc(&peer->ring, peer->buffer, &taken)) return false;
    *value = (uintptr_t)taken;
    return true;
}

void ilk_peer_ck_ring_destroy(ilk_peer_ck_ring *peer) {
    free(peer->buffer);
    free(peer);
}
