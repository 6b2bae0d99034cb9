/*
 * ilk_block_cache.c — the cache of large blocks past their grace period (see
 * include/ilk_block_cache.h for the contract, the retention, the reason and the memory bound).
 *
 * State per slot: `key`, 0 until a (size, align) claims it (CAS, never released), then
 * size << 8 | log2(align); `cells`, each NULL or a block of that key owned by the cache;
 * `count`, the cells filled (raised after a fill, lowered after a take, so it can lag by the
 * operations under way: read as a hint, clamped to 0); `demand`, the allocations counted in
 * the current epoch and the one before (ilk_demand.h).
 * Invariants: a non-NULL cell holds a block no thread reads or writes; a block is in at most
 * one cell; no cell at or beyond the slot's cap (ILK_BLOCK_CACHE_MAX_BYTES / size, clamped to
 * 1...ILK_BLOCK_CACHE_CELLS) is ever filled.
 * Scans: cells below `count` are mostly full, those above mostly empty, so a put scans up from
 * `count` and a take down from `count - 1`, each wrapping around the cap: one or two probes
 * when no other operation is under way, the whole cap at worst; a take finds an empty cache
 * (count 0) with no scan.
 * Progress: every operation is a bounded scan with single-word atomics: wait-free.
 */
#include "include/ilk_block_cache.h"
#include "include/ilk_demand.h"
#include "include/ilk_rcu.h"

#include <stdint.h>
#include <string.h>

struct ilk_block_cache_slot {
    uint64_t key;
    struct ilk_demand demand; /* allocations, by epoch (ilk_demand.h) */
    int32_t count;            /* cells filled, as a hint (see above) */
    void *cells[ILK_BLOCK_CACHE_CELLS];
} __attribute__((aligned(128)));

static struct ilk_block_cache_slot ilk_block_cache_slots[ILK_BLOCK_CACHE_SIZES];

static uint64_t ilk_block_cache_key(size_t size, size_t align) {
    return (uint64_t)size << 8 | (uint64_t)__builtin_ctzll(align < 1 ? 1 : align);
}

/* `bytes` worth of blocks of `size`, clamped to 1...ILK_BLOCK_CACHE_CELLS. */
static unsigned ilk_block_cache_cells_for(size_t bytes, size_t size) {
    size_t cells = bytes / (size < 1 ? 1 : size);
    if (cells < 1) cells = 1;
    return cells > ILK_BLOCK_CACHE_CELLS ? ILK_BLOCK_CACHE_CELLS : (unsigned)cells;
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

/* How many blocks a slot of `size` whose recent demand is `wanted` may hold now (see
 * "Retention" in the header). */
static unsigned ilk_block_cache_retention(unsigned wanted, size_t size) {
    unsigned floor = ilk_block_cache_cells_for(ILK_BLOCK_CACHE_BYTES, size);
    unsigned cap = ilk_block_cache_cells_for(ILK_BLOCK_CACHE_MAX_BYTES, size);
    if (wanted < floor) wanted = floor;
    return wanted > cap ? cap : wanted;
}

static unsigned ilk_block_cache_filled(struct ilk_block_cache_slot *slot) {
    int32_t count = __atomic_load_n(&slot->count, __ATOMIC_RELAXED); /* a hint */
    return count < 0 ? 0 : (unsigned)count;
}

/* Empties one full cell, scanning down from the count; NULL when every cell is empty. */
static void *ilk_block_cache_take(struct ilk_block_cache_slot *slot, unsigned cap) {
    unsigned filled = ilk_block_cache_filled(slot);
    /* An empty cache costs one load, not a scan of every cell: a block put a moment ago whose
     * count is not raised yet is missed, and the caller mallocs. */
    if (filled == 0) return NULL;
    unsigned start = (filled - 1) % cap;
    for (unsigned k = 0; k < cap; k++) {
        unsigned i = (start + cap - k) % cap;
        /* Relaxed peek; acquire exchange: pairs with the put's release CAS. */
        if (__atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) == NULL) continue;
        void *block = __atomic_exchange_n(&slot->cells[i], NULL, __ATOMIC_ACQUIRE);
        if (block != NULL) {
            __atomic_fetch_sub(&slot->count, 1, __ATOMIC_RELAXED); /* a hint */
            return block;
        }
    }
    return NULL;
}

int ilk_block_cache_put(void *block, size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 0);
    if (slot == NULL) return 0;
    unsigned filled = ilk_block_cache_filled(slot);
    if (filled >= ilk_block_cache_retention(ilk_demand_recent(&slot->demand), size)) return 0;
    unsigned cap = ilk_block_cache_cells_for(ILK_BLOCK_CACHE_MAX_BYTES, size);
    unsigned start = filled % cap;
    for (unsigned k = 0; k < cap; k++) {
        unsigned i = (start + k) % cap;
        void *expected = NULL;
        /* Relaxed peek, then release CAS: hands the block (and everything that happened to it
         * before, the grace period included) to the take that empties the cell. */
        if (__atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) == NULL &&
            __atomic_compare_exchange_n(&slot->cells[i], &expected, block, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&slot->count, 1, __ATOMIC_RELAXED); /* a hint */
            return 1;
        }
    }
    return 0;
}

void *ilk_block_cache_alloc_zeroed(size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 1);
    if (slot == NULL) return ilk_block_alloc_zeroed(size, align);
    unsigned wanted = ilk_demand_add(&slot->demand, 1); /* one clock read per allocation */
    unsigned cap = ilk_block_cache_cells_for(ILK_BLOCK_CACHE_MAX_BYTES, size);
    void *block = ilk_block_cache_take(slot, cap);
    /* Shrinking: one block beyond the retention goes back to malloc per allocation. */
    if (ilk_block_cache_filled(slot) > ilk_block_cache_retention(wanted, size)) {
        void *excess = ilk_block_cache_take(slot, cap);
        if (excess != NULL) ilk_block_free(excess);
    }
    if (block == NULL) return ilk_block_alloc_zeroed(size, align);
    memset(block, 0, size);
    return block;
}

unsigned ilk_block_cache_count(size_t size, size_t align) {
    struct ilk_block_cache_slot *slot = ilk_block_cache_slot(ilk_block_cache_key(size, align), 0);
    unsigned count = 0;
    for (unsigned i = 0; slot != NULL && i < ILK_BLOCK_CACHE_CELLS; i++)
        count += __atomic_load_n(&slot->cells[i], __ATOMIC_RELAXED) != NULL; /* a snapshot */
    return count;
}
