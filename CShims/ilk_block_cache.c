/*
 * ilk_block_cache.c — the cache of large blocks past their grace period (see
 * include/ilk_block_cache.h for the contract, the reason and the memory bound).
 *
 * State per slot: `key`, 0 until a (size, align) claims it (CAS, never released), then
 * size << 8 | log2(align); `cells`, each NULL or a block of that key owned by the cache.
 * Invariants: a non-NULL cell holds a block no thread reads or writes; a block is in at most
 * one cell; a slot never holds more than its cell limit (cells beyond it stay NULL).
 * Progress: every operation is a bounded scan with single-word atomics: wait-free.
 */
#include "include/ilk_block_cache.h"
#include "include/ilk_rcu.h"

#include <stdint.h>
#include <string.h>

struct ilk_block_cache_slot {
    uint64_t key;
    void *cells[ILK_BLOCK_CACHE_CELLS];
} __attribute__((aligned(128)));

static struct ilk_block_cache_slot ilk_block_cache_slots[ILK_BLOCK_CACHE_SIZES];

static uint64_t ilk_block_cache_key(size_t size, size_t align) {
    return (uint64_t)size << 8 | (uint64_t)__builtin_ctzll(align < 1 ? 1 : align);
}

/* The cells a slot for blocks of `size` bytes may fill. */
static unsigned ilk_block_cache_limit(size_t size) {
    size_t limit = ILK_BLOCK_CACHE_BYTES / (size < 1 ? 1 : size);
    if (limit < 1) limit = 1;
    return limit > ILK_BLOCK_CACHE_CELLS ? ILK_BLOCK_CACHE_CELLS : (unsigned)limit;
}

/* The slot claimed for `key`, claiming a free one when `claim`; NULL when none. */
static struct ilk_block_cache_slot *ilk_block_cache_slot(uint64_t key, int claim) {
    for (unsigned i = 0; i < ILK_BLOCK_CACHE_SIZES; i++) {
        struct ilk_block_cache_slot *slot = &ilk_block_cache_slots[i];
        /* Relaxed: the key only routes; the blocks are published by the cells. */
        uint64_t seen = __atomic_load_n(&slot->key, __ATOMIC_RELAXED);
        if (seen == key) return slot;
        if (seen == 0 && claim) {
            if (__atomic_compare_exchange_n(&slot->key, &seen, key, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                return slot;
            if (seen == key) return slot; /* another thread claimed it for the same key */
        }
    }
    return NULL;
}

int ilk_block_cache_put(void *block, size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 0);
    if (slot == NULL) return 0;
    unsigned limit = ilk_block_cache_limit(size);
    for (unsigned i = 0; i < limit; i++) {
        void *expected = NULL;
        /* Relaxed peek, then release CAS: hands the block (and everything that happened to it
         * before, the grace period included) to the take that empties the cell. */
        if (__atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) == NULL &&
            __atomic_compare_exchange_n(&slot->cells[i], &expected, block, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

void *ilk_block_cache_alloc_zeroed(size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 1);
    if (slot != NULL) {
        unsigned limit = ilk_block_cache_limit(size);
        for (unsigned i = 0; i < limit; i++) {
            /* Relaxed peek; acquire exchange: pairs with the put's release CAS. */
            if (__atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) == NULL) continue;
            void *block = __atomic_exchange_n(&slot->cells[i], NULL, __ATOMIC_ACQUIRE);
            if (block != NULL) {
                memset(block, 0, size);
                return block;
            }
        }
    }
    return ilk_block_alloc_zeroed(size, align);
}

unsigned ilk_block_cache_count(size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 0);
    unsigned count = 0;
    for (unsigned i = 0; slot != NULL && i < ILK_BLOCK_CACHE_CELLS; i++)
        count += __atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) != NULL; /* a snapshot */
    return count;
}
