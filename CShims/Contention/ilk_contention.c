/*
 * ilk_contention.c — the site table and per-thread state of contention profiling
 * (ilk_contention.h has the state table and invariants).
 *
 * Why one shared lock-free table and not per-thread buffers merged on snapshot: a record is
 * made only after a contended wait (microseconds at least, a futex sleep usually), sampled, and
 * costs a backtrace (about 1 µs); the table adds one CAS the first time a site is seen and then
 * four relaxed atomic adds and a max on the site's line. Threads that contend on one lock do
 * bounce that line, but after a wait that cost them far more. Per-thread buffers would remove
 * the bouncing and add what this design does not need: registration of threads, merging under
 * a lock, and keeping an exited thread's records (here a record outlives its thread by
 * construction). Memory is fixed: ILK_CONTENTION_SITES + 1 sites (about 1.1 MiB), allocated
 * only when profiling is switched on; a site that finds no slot within ILK_CONTENTION_PROBES
 * goes to the "other" site.
 */
#define _GNU_SOURCE
#include "ilk_contention.h"

#include "ilk_fence.h"
#include "ilk_futex.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

uint8_t ilk_contention_state = 0;

static uint32_t ilk_contention_period = 1;
static int64_t ilk_contention_hold_warn = 0;
int64_t ilk_contention_hold_warn_cache = 0;

/* INTERLOCK_HOLD_WARN_MS's notes of waits in progress, one slot per word's hash, each guarded
 * by a one-byte spin lock of its own (hold warnings are a diagnostic mode; a slot is touched
 * only by waiters on, and releasers of, words that hash to it). Invariants, under the slot lock:
 * `word` is 0 or the mutex word that `waiters` waiters (waiters > 0) have noted; `lock` is the
 * object containing `word`, stored by every note (a noted waiter keeps it alive); `start` is
 * the oldest noted start still waiting, or 0 when the oldest left (the later ones' starts are
 * not kept: a warning is then missed, never invented). The slot is freed when its last waiter
 * leaves. */
struct ilk_contention_wait {
    uint8_t guard;
    uint32_t waiters;
    uintptr_t word;
    uintptr_t lock;
    int64_t start;
};
static struct ilk_contention_wait ilk_contention_waits[ILK_CONTENTION_WAITS];
static uint64_t ilk_contention_warned_releases[1024];
/* Written once by configure (release) before the state is published; read with acquire
 * (sites_table), so that a reader that finds it sees the zeroed table and the "other" site. */
static struct ilk_contention_site *ilk_contention_sites = NULL;

static struct ilk_contention_site *sites_table(void) {
    /* Acquire: pairs with configure's release store of the pointer. */
    return __atomic_load_n(&ilk_contention_sites, __ATOMIC_ACQUIRE);
}

struct ilk_contention_thread {
    uint64_t rng;
    int inside;
};

static _Thread_local struct ilk_contention_thread ilk_contention_self;

void ilk_contention_configure(uint8_t state, uint32_t period, int64_t hold_warn_ns) {
    if (state == 2 && sites_table() == NULL) {
        struct ilk_contention_site *sites = calloc(ILK_CONTENTION_SITES + 1, sizeof(struct ilk_contention_site));
        if (sites == NULL) state = 1; /* no memory: stay off rather than fail */
        else {
            struct ilk_contention_site *other = &sites[ILK_CONTENTION_SITES];
            other->kind = 0xFF;
            other->state = 2;
            /* Release: publishes the zeroed table (sites_table's acquire). */
            __atomic_store_n(&ilk_contention_sites, sites, __ATOMIC_RELEASE);
        }
    }
    /* Relaxed: settings, read relaxed after an acquire load of the state (sample, released), or
     * by the thread that configured; the release store of the state below publishes them. */
    __atomic_store_n(&ilk_contention_period, period == 0 ? 1 : period, __ATOMIC_RELAXED);
    __atomic_store_n(&ilk_contention_hold_warn, hold_warn_ns, __ATOMIC_RELAXED);
    /* Relaxed: read by the unlock path only after it saw the state (published below). */
    __atomic_store_n(&ilk_contention_hold_warn_cache, hold_warn_ns, __ATOMIC_RELAXED);
    /* Release: a thread that reads 2 (relaxed, then an acquire on a site's state) finds the
     * table; the Swift side also publishes through its lazy global's once. */
    __atomic_store_n(&ilk_contention_state, state, __ATOMIC_RELEASE);
}

static int64_t ilk_contention_started;

__attribute__((constructor)) static void ilk_contention_note_start(void) {
    ilk_contention_started = ilk_clock_monotonic_ns();
}

int64_t ilk_contention_process_start_ns(void) { return ilk_contention_started; }

int64_t ilk_contention_hold_warn_ns(void) {
    /* Acquire then relaxed: the setting configure published with the state. */
    (void)__atomic_load_n(&ilk_contention_state, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&ilk_contention_hold_warn, __ATOMIC_RELAXED);
}

int ilk_contention_sample(void) {
    struct ilk_contention_thread *self = &ilk_contention_self;
    if (self->inside) return 0;
    /* Acquire: pairs with configure's release store of the state, so the period is its own. */
    if (__atomic_load_n(&ilk_contention_state, __ATOMIC_ACQUIRE) != 2) return 0;
    /* Relaxed: published by the state's release store (configure). */
    uint32_t period = __atomic_load_n(&ilk_contention_period, __ATOMIC_RELAXED);
    if (period <= 1) return 1;
    uint64_t x = self->rng;
    if (x == 0) x = 0x9E3779B97F4A7C15ull ^ ((uint64_t)ilk_current_thread_id() << 17);
    /* xorshift64 (Marsaglia): period 2^64 - 1 per thread, plenty for a 1-in-N decision. */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    self->rng = x;
    return (x % period) == 0;
}

int ilk_contention_enter(void) {
    int old = ilk_contention_self.inside;
    ilk_contention_self.inside = 1;
    return old;
}

void ilk_contention_leave(void) { ilk_contention_self.inside = 0; }

/* The calling thread's stack bounds, for the frame-pointer walk (cached per thread). */
static _Thread_local uintptr_t ilk_contention_stack_low, ilk_contention_stack_high;

static int stack_bounds(uintptr_t *low, uintptr_t *high) {
    if (ilk_contention_stack_high == 0) {
        pthread_attr_t attr;
        void *address = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
        int got = pthread_attr_getstack(&attr, &address, &size);
        pthread_attr_destroy(&attr);
        if (got != 0 || address == NULL) return 0;
        ilk_contention_stack_low = (uintptr_t)address;
        ilk_contention_stack_high = (uintptr_t)address + size;
    }
    *low = ilk_contention_stack_low;
    *high = ilk_contention_stack_high;
    return 1;
}

/* A walk of the frame-pointer chain: each frame record is [caller's frame pointer, return
 * address] on x86-64 and arm64 alike, and Swift and SwiftPM's C keep frame pointers. About 20
 * ns, against 1-2 µs for backtrace(3)'s DWARF unwinding (perf: _Unwind_Find_FDE and
 * _dl_find_object were most of a recorded wait's cost). The walk reads only words inside this
 * thread's stack, at increasing addresses, so a frame without a frame pointer (some C library
 * code) ends it early instead of faulting; falls back to backtrace(3) when the bounds are
 * unknown. */
int ilk_contention_backtrace(void **frames, int skip) {
    uintptr_t low, high;
    if (!stack_bounds(&low, &high)) {
        void *buffer[ILK_CONTENTION_FRAMES + 8];
        int total = backtrace(buffer, ILK_CONTENTION_FRAMES + 8);
        int first = skip + 1; /* this function is in the buffer */
        if (first >= total) return 0;
        int count = total - first;
        if (count > ILK_CONTENTION_FRAMES) count = ILK_CONTENTION_FRAMES;
        memcpy(frames, &buffer[first], (size_t)count * sizeof(void *));
        return count;
    }
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int count = 0;
    int skipped = 0;
    while (count < ILK_CONTENTION_FRAMES) {
        if (fp < low || fp > high - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)) != 0) break;
        const uintptr_t *record = (const uintptr_t *)fp;
        uintptr_t next = record[0];
        uintptr_t ret = record[1];
        if (ret == 0) break;
        /* The first record is this function's: its return address is in our caller. */
        if (skipped < skip) skipped++;
        else frames[count++] = (void *)ret;
        if (next <= fp) break;
        fp = next;
    }
    return count;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    /* splitmix64's finalizer over a running combination: a good spread for linear probing. */
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 31;
    return h;
}

static uint64_t hash_name(const char *name) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 0x100000001B3ull;
    }
    return h;
}

static int same_key(const struct ilk_contention_site *site, uint64_t hash, uint8_t kind, uint64_t lock_id,
                    uint64_t name_hash, void *const *frames, int frame_count) {
    return site->hash == hash && site->kind == kind && site->lock_id == lock_id && site->name_hash == name_hash &&
           site->frame_count == frame_count && memcmp(site->frames, frames, (size_t)frame_count * sizeof(void *)) == 0;
}

static void add_wait(struct ilk_contention_site *site, int64_t wait_ns) {
    uint64_t wait = wait_ns > 0 ? (uint64_t)wait_ns : 0;
    /* Relaxed: counters, read by snapshots that order nothing else. */
    __atomic_fetch_add(&site->acquisitions, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&site->wait_ns, wait, __ATOMIC_RELAXED);
    uint64_t max = __atomic_load_n(&site->max_wait_ns, __ATOMIC_RELAXED);
    while (wait > max &&
           !__atomic_compare_exchange_n(&site->max_wait_ns, &max, wait, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

int32_t ilk_contention_record(uint8_t kind, const void *lock, const char *name, int by_name, void *const *frames,
                              int frame_count, int64_t wait_ns, int *created) {
    *created = 0;
    /* Acquire: pairs with configure's release store, so the table pointer is seen. */
    if (__atomic_load_n(&ilk_contention_state, __ATOMIC_ACQUIRE) != 2) return -1;
    struct ilk_contention_site *sites = sites_table();
    if (sites == NULL) return -1;
    if (frame_count > ILK_CONTENTION_FRAMES) frame_count = ILK_CONTENTION_FRAMES;
    uint64_t name_hash = name ? hash_name(name) : 0;
    uint64_t lock_id = (name && by_name) ? 0 : (uint64_t)(uintptr_t)lock;
    uint64_t hash = mix(mix(mix(kind, lock_id), name_hash), (uint64_t)frame_count);
    for (int i = 0; i < frame_count; i++) hash = mix(hash, (uint64_t)(uintptr_t)frames[i]);

    for (uint32_t probe = 0; probe < ILK_CONTENTION_PROBES; probe++) {
        int32_t index = (int32_t)((hash + probe) & (ILK_CONTENTION_SITES - 1));
        struct ilk_contention_site *site = &sites[index];
        /* Acquire: pairs with the publishing store of 2 below, so the key is complete. */
        uint32_t state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);
        if (state == 0) {
            uint32_t expected = 0;
            /* Relaxed: the claim publishes nothing; the store of 2 does. On failure the
             * slot was claimed by another thread: look at it as below. */
            if (__atomic_compare_exchange_n(&site->state, &expected, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                site->kind = kind;
                site->hash = hash;
                site->lock_id = lock_id;
                site->name_hash = name_hash;
                site->name = name ? strdup(name) : NULL;
                site->frame_count = (uint8_t)frame_count;
                memcpy(site->frames, frames, (size_t)frame_count * sizeof(void *));
                add_wait(site, wait_ns);
                /* Release: publishes the key to every reader's acquire load of the state. */
                __atomic_store_n(&site->state, 2, __ATOMIC_RELEASE);
                *created = 1;
                return index;
            }
            state = expected;
        }
        while (state == 1) {
            /* Another thread is writing this key: a few stores, wait for them. */
            ilk_spin_pause();
            /* Acquire: as above. */
            state = __atomic_load_n(&site->state, __ATOMIC_ACQUIRE);
        }
        if (same_key(site, hash, kind, lock_id, name_hash, frames, frame_count)) {
            add_wait(site, wait_ns);
            return index;
        }
    }
    add_wait(&sites[ILK_CONTENTION_SITES], wait_ns);
    return ILK_CONTENTION_SITES;
}

void ilk_contention_add_hold(int32_t index, int64_t hold_ns) {
    struct ilk_contention_site *sites = sites_table();
    if (index < 0 || index > ILK_CONTENTION_SITES || sites == NULL) return;
    struct ilk_contention_site *site = &sites[index];
    /* Relaxed: counters (add_wait). */
    __atomic_fetch_add(&site->hold_ns, hold_ns > 0 ? (uint64_t)hold_ns : 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&site->holds, 1, __ATOMIC_RELAXED);
}

int ilk_contention_claim_warning(int32_t index) {
    struct ilk_contention_site *sites = sites_table();
    if (index < 0 || index > ILK_CONTENTION_SITES || sites == NULL) return 0;
    /* Relaxed: only one claimant may print; nothing else is ordered by it. */
    return __atomic_exchange_n(&sites[index].warned, 1, __ATOMIC_RELAXED) == 0;
}

/* Holds in progress: one table for all threads, keyed by the mutex word, so that whichever
 * thread releases the mutex ends its hold (a Lock may be released by another thread than the one
 * that took it). A slot's word: 0 free, word|1 being filled by its claimant, word published
 * (site and since complete). A mutex has one holder at a time, and its recorded hold is
 * consumed by its release (the word was marked 2, so the release takes the slow path) before the
 * next acquisition, so a word has at most one published slot. A hold that finds no free slot
 * within 16 probes is not measured. */
struct ilk_contention_hold {
    uintptr_t word;
    int32_t site;
    int64_t since;
};
static struct ilk_contention_hold ilk_contention_holds[ILK_CONTENTION_HOLDS];
static uint32_t ilk_contention_hold_count;

static uint32_t hold_slot(uintptr_t word, uint32_t probe) {
    return (uint32_t)(((word >> 2) ^ (word >> 13)) + probe) & (ILK_CONTENTION_HOLDS - 1);
}

void ilk_contention_push_hold(const void *word, int32_t index, int64_t since_ns) {
    uintptr_t key = (uintptr_t)word;
    for (uint32_t probe = 0; probe < 16; probe++) {
        struct ilk_contention_hold *slot = &ilk_contention_holds[hold_slot(key, probe)];
        uintptr_t expected = 0;
        /* Relaxed claim: the release store below publishes the slot's fields. */
        if (__atomic_compare_exchange_n(&slot->word, &expected, key | 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            __atomic_store_n(&slot->site, index, __ATOMIC_RELAXED);
            __atomic_store_n(&slot->since, since_ns, __ATOMIC_RELAXED);
            /* Relaxed: a count that only says whether to look (holds_in_progress). */
            __atomic_fetch_add(&ilk_contention_hold_count, 1, __ATOMIC_RELAXED);
            /* Release: pairs with pop's acquire load of the word; site and since are complete. */
            __atomic_store_n(&slot->word, key, __ATOMIC_RELEASE);
            return;
        }
    }
}

int32_t ilk_contention_pop_hold(const void *word, int64_t *since_ns) {
    uintptr_t key = (uintptr_t)word;
    for (uint32_t probe = 0; probe < 16; probe++) {
        struct ilk_contention_hold *slot = &ilk_contention_holds[hold_slot(key, probe)];
        /* Acquire: pairs with push's release store, so site and since are the claimant's. */
        if (__atomic_load_n(&slot->word, __ATOMIC_ACQUIRE) != key) continue;
        int32_t site = __atomic_load_n(&slot->site, __ATOMIC_RELAXED);
        int64_t since = __atomic_load_n(&slot->since, __ATOMIC_RELAXED);
        uintptr_t expected = key;
        /* Relaxed: frees the slot; the next claimant's release store publishes its own fields. */
        if (!__atomic_compare_exchange_n(&slot->word, &expected, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) continue;
        __atomic_fetch_sub(&ilk_contention_hold_count, 1, __ATOMIC_RELAXED);
        *since_ns = since;
        return site;
    }
    return -1;
}

uint32_t ilk_contention_holds_in_progress(void) {
    /* Relaxed: a hint; a release that misses a hold pushed concurrently by another thread
     * cannot be its release (the holder's own push precedes its release in program order). */
    return __atomic_load_n(&ilk_contention_hold_count, __ATOMIC_RELAXED);
}

const struct ilk_contention_site *ilk_contention_site_at(int32_t index) {
    struct ilk_contention_site *sites = sites_table();
    if (index < 0 || index > ILK_CONTENTION_SITES || sites == NULL) return NULL;
    const struct ilk_contention_site *site = &sites[index];
    /* Acquire: pairs with the publishing store, so the key read after it is complete. */
    return __atomic_load_n(&site->state, __ATOMIC_ACQUIRE) == 2 ? site : NULL;
}

void ilk_contention_reset(void) {
    struct ilk_contention_site *sites = sites_table();
    if (sites == NULL) return;
    for (int32_t i = 0; i <= ILK_CONTENTION_SITES; i++) {
        struct ilk_contention_site *site = &sites[i];
        /* Relaxed: counters; a record racing the reset lands in either profile. */
        __atomic_store_n(&site->acquisitions, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&site->wait_ns, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&site->max_wait_ns, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&site->hold_ns, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&site->holds, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&site->warned, 0, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < 1024; i++) {
        /* Relaxed: a set of hashes, as in claim_release_warning. */
        __atomic_store_n(&ilk_contention_warned_releases[i], 0, __ATOMIC_RELAXED);
    }
}

int ilk_contention_symbol(const void *address, const char **symbol, const char **file, const void **base) {
    Dl_info info;
    if (dladdr(address, &info) == 0) return 0;
    *symbol = info.dli_sname;
    *file = info.dli_fname;
    *base = info.dli_fbase;
    return 1;
}

static struct ilk_contention_wait *wait_slot(const void *word) {
    uintptr_t w = (uintptr_t)word;
    return &ilk_contention_waits[((w >> 2) ^ (w >> 12)) & (ILK_CONTENTION_WAITS - 1)];
}

static void slot_lock(struct ilk_contention_wait *slot) {
    /* Acquire: pairs with slot_unlock's release; the fields are read and written under it. */
    while (__atomic_exchange_n(&slot->guard, 1, __ATOMIC_ACQUIRE) != 0) ilk_spin_pause();
}

static void slot_unlock(struct ilk_contention_wait *slot) {
    /* Release: publishes the fields to the next holder of the slot lock. */
    __atomic_store_n(&slot->guard, 0, __ATOMIC_RELEASE);
}

void ilk_contention_wait_began(const void *word, const void *lock, int64_t start_ns) {
    struct ilk_contention_wait *slot = wait_slot(word);
    slot_lock(slot);
    if (slot->word == 0 || slot->word == (uintptr_t)word) {
        if (slot->word == 0) slot->start = start_ns;
        else if (slot->start != 0 && start_ns < slot->start) slot->start = start_ns;
        slot->word = (uintptr_t)word;
        slot->lock = (uintptr_t)lock;
        slot->waiters++;
    } /* else: another word's slot, no note (a warning missed, nothing else) */
    slot_unlock(slot);
}

void ilk_contention_wait_ended(const void *word, int64_t start_ns) {
    struct ilk_contention_wait *slot = wait_slot(word);
    slot_lock(slot);
    if (slot->word == (uintptr_t)word && slot->waiters > 0) {
        if (--slot->waiters == 0) {
            slot->word = 0;
            slot->lock = 0;
            slot->start = 0;
        } else if (slot->start == start_ns) {
            slot->start = 0; /* the oldest left; the others' starts are unknown (see above) */
        }
    }
    slot_unlock(slot);
}

int64_t ilk_contention_wait_take(const void *word, const void **lock) {
    struct ilk_contention_wait *slot = wait_slot(word);
    int64_t start = 0;
    slot_lock(slot);
    if (slot->word == (uintptr_t)word && slot->waiters > 0 && slot->start != 0) {
        start = slot->start;
        *lock = (const void *)slot->lock;
        slot->start = 0; /* reported once per noted wait */
    }
    slot_unlock(slot);
    return start;
}

int ilk_contention_claim_release_warning(uint64_t hash) {
    if (hash == 0) hash = 1;
    for (uint32_t probe = 0; probe < 1024; probe++) {
        uint64_t *entry = &ilk_contention_warned_releases[(hash + probe) & 1023];
        uint64_t seen = __atomic_load_n(entry, __ATOMIC_RELAXED);
        if (seen == hash) return 0;
        /* Relaxed: a set of hashes; nothing else is published with them. */
        if (seen == 0 && __atomic_compare_exchange_n(entry, &seen, hash, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return 1;
        if (seen == hash) return 0;
    }
    return 0;
}

uint64_t ilk_contention_hash_frames(void *const *frames, int count) {
    uint64_t hash = mix(0, (uint64_t)count);
    for (int i = 0; i < count; i++) hash = mix(hash, (uint64_t)(uintptr_t)frames[i]);
    return hash;
}

int ilk_contention_site_key(int32_t index, struct ilk_contention_key *key) {
    const struct ilk_contention_site *site = ilk_contention_site_at(index);
    if (site == NULL) return 0;
    /* The key fields are immutable once published (ilk_contention_site_at's acquire). */
    key->kind = site->kind;
    key->frame_count = site->frame_count;
    key->lock_id = site->lock_id;
    key->name = site->name;
    memcpy(key->frames, site->frames, sizeof(site->frames));
    return 1;
}
