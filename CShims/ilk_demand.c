/*
 * ilk_demand.c — the recent-demand counter of the memory caches (see include/ilk_demand.h for
 * the contract, the epoch and the state).
 */
#include "include/ilk_demand.h"

#include <time.h>

static uint64_t ilk_demand_fixed_epoch; /* tests: ilk_demand_fix_epoch; 0 = the clock */

static uint64_t ilk_demand_now(void) {
    uint64_t epoch = __atomic_load_n(&ilk_demand_fixed_epoch, __ATOMIC_RELAXED); /* tests */
    if (epoch != 0) return epoch;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return ((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec) >> ILK_DEMAND_EPOCH_SHIFT;
}

/* Rolls the counts over when the clock has moved on. Relaxed throughout: policy only. */
static void ilk_demand_tick(struct ilk_demand *demand) {
    uint64_t epoch = ilk_demand_now();
    uint64_t seen = __atomic_load_n(&demand->epoch, __ATOMIC_RELAXED);
    if (seen == epoch) return;
    if (!__atomic_compare_exchange_n(&demand->epoch, &seen, epoch, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return; /* another thread rolled it over */
    uint32_t current = __atomic_exchange_n(&demand->current, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&demand->previous, epoch == seen + 1 ? current : 0, __ATOMIC_RELAXED);
}

static uint32_t ilk_demand_max(uint32_t current, struct ilk_demand *demand) {
    uint32_t previous = __atomic_load_n(&demand->previous, __ATOMIC_RELAXED); /* policy only */
    return current > previous ? current : previous;
}

uint32_t ilk_demand_add(struct ilk_demand *demand, uint32_t units) {
    ilk_demand_tick(demand);
    uint32_t current = __atomic_add_fetch(&demand->current, units, __ATOMIC_RELAXED); /* policy */
    return ilk_demand_max(current, demand);
}

uint32_t ilk_demand_recent(struct ilk_demand *demand) {
    ilk_demand_tick(demand);
    return ilk_demand_max(__atomic_load_n(&demand->current, __ATOMIC_RELAXED), demand); /* policy */
}

void ilk_demand_fix_epoch(unsigned long long epoch) {
    __atomic_store_n(&ilk_demand_fixed_epoch, epoch, __ATOMIC_RELAXED); /* tests */
}
