/*
 * ilk_demand.h — how much a cache's users asked for recently: the policy clock of a cache that
 * keeps memory for reuse (ilk_block_cache.h; the same cap on the node pool measured no better for
 * LockFreeStack: Benchmarks/README.md, "Keeping what the program recently used").
 *
 *   ilk_demand_add(d, n)    counts n units asked for now and returns ilk_demand_recent(d)
 *                           as it stands after the count (one clock read for both).
 *   ilk_demand_recent(d)    the units counted in the current epoch or the one before: what a
 *                           cache keeps at most beyond its floor.
 *   ilk_demand_fix_epoch(e) the clock reads epoch e from now on (e > 0), or the real clock
 *                           again (0) (tests: no test waits for time to pass).
 *
 * An epoch is 2^30 ns of CLOCK_MONOTONIC_COARSE (about 1.07 s; the coarse clock is one vDSO
 * read, a few ns, and callers count once per block or batch of about a thousand elements).
 * So a cache that keeps `recent` units keeps what its users went through in the last one to
 * two seconds: a queue whose depth swings finds its memory again at the next swing,
 * and a program whose demand fell gets the rest back within two epochs of activity.
 *
 * State: `epoch`, the epoch `current` counts; `current`; `previous`, the count of the epoch
 * before `epoch` (0 when that epoch saw no call). The thread whose CAS moves `epoch` on rolls
 * the counts over. Every access is relaxed: the counts steer a policy and publish nothing; an
 * increment that races the roll-over may be lost, which misjudges the demand by a unit.
 */
#ifndef ILK_DEMAND_H
#define ILK_DEMAND_H

#include <stdint.h>

#define ILK_DEMAND_EPOCH_SHIFT 30

struct ilk_demand {
    uint64_t epoch;
    uint32_t current;
    uint32_t previous;
};

uint32_t ilk_demand_add(struct ilk_demand *demand, uint32_t units);
uint32_t ilk_demand_recent(struct ilk_demand *demand);
void ilk_demand_fix_epoch(unsigned long long epoch);

#endif /* ILK_DEMAND_H */
