/*
 * ilk_contention.h — the recording half of contention profiling (Sources/Interlock/Contention/):
 * the process's on/off state and sampling period, a per-thread sampling decision, one
 * lock-free table of sites that every thread adds to, and each thread's holds in progress.
 *
 * The target CInterlockContention, built only with the package trait ContentionProfiling
 * (INTERLOCK_CONTENTION): without it none of this is compiled or linked.
 *
 * The site table (ilk_contention.c has the argument for it):
 *
 *   state   meaning
 *   -----   -----------------------------------------------------------------------------
 *     0     empty
 *     1     being filled by the thread whose CAS 0 -> 1 claimed it (key fields being written)
 *     2     published: the key fields are immutable from now on; counters change by atomic adds
 *
 *   A site's key is (kind, lock: its name's hash if named, else its address, the call stack).
 *   Invariants: a key is written only by the claiming thread, before its release store of 2;
 *   a reader compares a key only after an acquire load of 2. Probing is linear, at most
 *   ILK_CONTENTION_PROBES slots, then the "other" site (index ILK_CONTENTION_SITES), so the
 *   table is bounded. Sites are never removed; reset() zeroes their counters.
 */
#ifndef ILK_CONTENTION_H
#define ILK_CONTENTION_H

#include <stdint.h>

#define ILK_CONTENTION_SITES 4096 /* a power of two */
#define ILK_CONTENTION_PROBES 64
#define ILK_CONTENTION_FRAMES 24
#define ILK_CONTENTION_HOLDS 1024 /* holds in progress, all threads (ilk_contention.c) */

struct ilk_contention_site {
    uint32_t state; /* 0 empty, 1 filling, 2 published (the file comment) */
    uint8_t kind;   /* _ContentionKind's raw value */
    uint8_t frame_count;
    uint16_t warned; /* 1 once a hold warning was printed for this site */
    uint64_t hash;
    uint64_t lock_id; /* the lock's address, 0 when keyed by name */
    uint64_t name_hash;
    const char *name; /* malloc'ed copy of the lock's name, or NULL; immutable once published */
    void *frames[ILK_CONTENTION_FRAMES];
    /* Counters: atomic adds (relaxed: statistics, read by snapshots that order nothing). */
    uint64_t acquisitions;
    uint64_t wait_ns;
    uint64_t max_wait_ns;
    uint64_t hold_ns;
    uint64_t holds;
};

/* 0 until Swift has read INTERLOCK_CONTENTION (ContentionSettings.swift), then 1 off, 2 on.
 * Written with relaxed stores of the same value by whichever thread computes it; read relaxed
 * (the value is all a reader needs, as ilk_lockorder_mode_cache). */
extern uint8_t ilk_contention_state;

static inline __attribute__((always_inline)) uint8_t ilk_contention_state_cached(void) {
    return __atomic_load_n(&ilk_contention_state, __ATOMIC_RELAXED);
}

/* Sets the state, the sampling period (1: every contended wait) and the hold-warning
 * threshold (0: none), and allocates the table when on. Called once per process by Swift's
 * lazily initialised settings, before it publishes the state. */
void ilk_contention_configure(uint8_t state, uint32_t period, int64_t hold_warn_ns);

/* Whether the calling thread records this contended wait: always at period 1, else with
 * probability 1/period (a per-thread xorshift generator, seeded from the thread id). Also
 * false while the thread is inside the profiler itself (its own reentrancy guard). */
int ilk_contention_sample(void);

/* When this process started (CLOCK_MONOTONIC ns, taken by a constructor at load time): a
 * profile covers the time since then, or since the last reset. */
int64_t ilk_contention_process_start_ns(void);

/* The threshold of INTERLOCK_HOLD_WARN_MS in nanoseconds, 0 when unset. */
int64_t ilk_contention_hold_warn_ns(void);

/* The reentrancy guard: set while the calling thread records (reading a name, hashing,
 * symbolizing), so that a wait inside the profiler is not profiled. Returns the old value. */
int ilk_contention_enter(void);
void ilk_contention_leave(void);

/* Captures up to ILK_CONTENTION_FRAMES return addresses of the calling thread (a frame-pointer
 * walk, ilk_contention.c), skipping the innermost `skip` (0: the first is the return address
 * into the caller); returns how many were stored. */
int ilk_contention_backtrace(void **frames, int skip);

/* Adds one contended wait of `wait_ns` to its site, creating the site if new (copying `name`,
 * the label a report shows, or NULL). The lock is keyed by its name when `by_name` (a named
 * lock: all its objects one lock), else by its address. Returns the site's index
 * (ILK_CONTENTION_SITES is the "other" site), or -1 when off; `*created` is set to 1 when this
 * call created the site (its caller then attaches the symbolized stack), else 0. */
int32_t ilk_contention_record(uint8_t kind, const void *lock, const char *name, int by_name, void *const *frames,
                              int frame_count, int64_t wait_ns, int *created);

/* Adds a hold of `hold_ns` to the site `index`. */
void ilk_contention_add_hold(int32_t index, int64_t hold_ns);

/* Marks the site's hold warning as printed; returns 1 the first time only. */
int ilk_contention_claim_warning(int32_t index);

/* Holds in progress (all threads): a mutex word taken after a recorded wait, its site, and
 * since when. pop, by whichever thread releases the word, removes the entry and returns its
 * site, or -1 (then *since is untouched). A full neighbourhood drops the hold unmeasured. */
void ilk_contention_push_hold(const void *word, int32_t index, int64_t since_ns);
int32_t ilk_contention_pop_hold(const void *word, int64_t *since_ns);
/* How many holds are in progress (all threads): the unlock path's one check. */
uint32_t ilk_contention_holds_in_progress(void);

/* INTERLOCK_HOLD_WARN_MS's record of waits in progress, for holders that took a mutex without
 * waiting: a table of ILK_CONTENTION_WAITS slots keyed by the mutex word, each the start of the
 * oldest recorded wait on it (0: none), guarded by a spin lock per slot (ilk_contention.c has
 * the invariants). A waiter notes its start before it waits and forgets it when it has the
 * mutex (or gave up); a release that finds a start older than the threshold warns with the
 * releasing thread's backtrace. One slot per word's hash: a collision loses the later word's
 * note (a warning not given, nothing else). */
#define ILK_CONTENTION_WAITS 256
void ilk_contention_wait_began(const void *word, const void *lock, int64_t start_ns);
void ilk_contention_wait_ended(const void *word, int64_t start_ns);
/* The oldest noted wait on `word` (0 when none), which the release consumes; `*lock` is the
 * object of the last waiter that noted one (the object that contains `word`). */
int64_t ilk_contention_wait_take(const void *word, const void **lock);
/* Whether INTERLOCK_HOLD_WARN_MS is set: the unlock path's second check (a relaxed load). */
static inline __attribute__((always_inline)) int ilk_contention_warns_holds(void) {
    extern int64_t ilk_contention_hold_warn_cache;
    return __atomic_load_n(&ilk_contention_hold_warn_cache, __ATOMIC_RELAXED) != 0;
}
/* Marks the release site with backtrace hash `hash` as warned; returns 1 the first time only
 * (a fixed set of 1,024 sites; when it is full, no further warnings). */
int ilk_contention_claim_release_warning(uint64_t hash);

/* dladdr(3) of `address`: the symbol's name (or NULL), the object file's path (or NULL) and
 * its load address. Returns 0 when no object contains the address. */
int ilk_contention_symbol(const void *address, const char **symbol, const char **file, const void **base);

/* A hash of `count` frames (to key release sites). */
uint64_t ilk_contention_hash_frames(void *const *frames, int count);

/* Snapshot access. The site at `index` (0 ... ILK_CONTENTION_SITES), or NULL when it is not
 * published. */
const struct ilk_contention_site *ilk_contention_site_at(int32_t index);
/* The immutable key of a published site, copied (the counters beside it change concurrently,
 * so the site itself is not copied whole). Returns 0 when the site is not published. */
struct ilk_contention_key {
    uint8_t kind;
    uint8_t frame_count;
    uint64_t lock_id;
    const char *name;
    void *frames[ILK_CONTENTION_FRAMES];
};
int ilk_contention_site_key(int32_t index, struct ilk_contention_key *key);

/* Zeroes every site's counters and warnings, and the set of warned release sites (the keys
 * stay). A record racing the reset lands in either profile, and may leave a max of 0 beside a
 * count of 1. */
void ilk_contention_reset(void);

#endif
