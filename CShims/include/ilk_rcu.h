/*
 * ilk_rcu.h — userspace RCU glue for Interlock's lock-free queues (liburcu, "bulletproof" flavor).
 *
 * What it gives the Swift layer:
 *   ilk_rcu_read_lock()            enter an RCU read-side critical section (nests; ~1 ns)
 *   ilk_rcu_read_unlock()          leave it
 *   ilk_block_alloc(size, align)   raw memory for a node or segment (malloc, or aligned_alloc
 *                                  when align > 16); never NULL (traps on exhaustion)
 *   ilk_block_free(block)          free a block NOW (never published, or owner is being deinit)
 *   ilk_rcu_retire(block, size)    free a block after a grace period: once every read-side
 *                                  critical section that might hold a reference has ended
 *   ilk_rcu_retire_cached(block, size, align)
 *                                  the same, into the block cache (ilk_block_cache.h) when it
 *                                  has room
 *   ilk_rcu_flush()                hand this thread's pending retirements to liburcu now
 *   ilk_rcu_barrier()              wait until every retirement handed to liburcu has been freed
 *   ilk_rcu_install_fork_handlers()
 *                                  register liburcu's fork() hooks (once per process; the
 *                                  containers call it from init): see ilk_rcu.c
 *   ilk_rcu_call(head, func)       call_rcu, made safe against a concurrent fork()
 *
 * Synchronization table (liburcu style):
 *   read_lock/read_unlock   any thread, any time, no registration (see "Flavor"); nestable.
 *   alloc/free              any thread; free only a block that no other thread can reach.
 *   retire                  any thread, inside or outside a read-side section, once the block
 *                           is unreachable for threads that are not already in a section
 *                           (unlinked from every shared pointer). Never waits for another
 *                           thread, not even one calling fork(): it appends to a per-thread
 *                           batch and hands full batches to liburcu's call_rcu worker thread.
 *   flush                   any thread; cheap.  barrier: NOT inside a read-side section (it
 *                           waits for a grace period); tests and teardown only.
 *   fork()                  any thread, once the fork handlers are installed: the child may
 *                           go on using everything above. A hand-over to call_rcu (retire,
 *                           flush, thread exit, ilk_rcu_call) that meets a fork under way is
 *                           queued, not waited for: the forking thread hands it over as the
 *                           fork ends, in the parent and in the child (ilk_rcu.c, "the gate").
 *
 * Flavor: urcu-bp ("bulletproof"). Readers register themselves on first use and are
 * unregistered at thread exit by liburcu, so threads Interlock never created (Dispatch's
 * workers, the Swift concurrency pool, threads that come and go) need nothing from the user.
 * Measured on a 2-core x86-64 machine (liburcu 0.13.2, gcc -O2, inlined read side; a
 * 60-line C program timing both flavors, in the report on issue 5): read lock+unlock 1.0 ns
 * for urcu-bp and 1.2 ns for urcu-memb with our own automatic registration (TLS flag +
 * pthread_key destructor); call_rcu of a malloc'd block ~110 ns in both; thread create + first read
 * section + exit 57-86 us in both (noise dominates); synchronize_rcu 2 us (bp) vs 27-46 us
 * (memb, sys_membarrier). Equal read-side cost, so the flavor that needs no registration code
 * of ours (and has no destructor-ordering pitfalls at thread exit) wins: urcu-bp.
 * The read side uses liburcu's inline (_LGPL_SOURCE) functions: calling the exported ones
 * instead (PLT call, reader record through __tls_get_addr) made the queue and stack
 * benchmarks 1.1-2.8 times slower per operation (Benchmarks/README.md, "liburcu's read side,
 * inline or called"), against a 5 % budget. What that compiles into a user's binary and how
 * to turn it off (delete the two _LGPL_SOURCE defines, here and in
 * SystemLibraries/CLibURCU/urcu_shim.h): the README's "License" section.
 *
 * Batching: call_rcu costs ~110 ns (a wait-free enqueue to the worker plus a wake-up), more
 * than a whole queue operation, so blocks are retired in per-thread batches of up to
 * ILK_RCU_BATCH_BLOCKS blocks or ILK_RCU_BATCH_BYTES bytes, one call_rcu per batch. A thread's
 * partial batch is handed over when the thread exits (pthread_key destructor) or on
 * ilk_rcu_flush(). Pending memory is bounded by one batch per thread plus what the worker
 * has not freed yet (it frees after each grace period, which is microseconds).
 *
 * ThreadSanitizer: TSan cannot see liburcu's grace periods (liburcu is not instrumented and
 * synchronizes through its own counters and sys_membarrier), so a deferred free would be
 * reported as racing with a reader's earlier access. Under TSan only, this shim adds the
 * happens-before edges that RCU guarantees:
 *   - ilk_rcu_read_unlock releases ilk_rcu_tsan_token before leaving the section: every
 *     access a reader made inside a section happens before...
 *   - handing a batch to call_rcu releases the token too (the retiring thread's own
 *     accesses, e.g. moving the element out of a node, happen before the free), and
 *   - the batch callback, running after a grace period, acquires the token before it frees.
 * Grace-period semantics make the edge sound: a reader that could hold a reference to a
 * retired block entered its section before the block was unlinked, and the grace period
 * waits for that section's unlock, whose release precedes the callback's acquire in real
 * time. What the edge could hide: an access to a retired block made OUTSIDE any read-side
 * section by a thread that later (before the callback) unlocks some section; such a bug
 * is not reported. No suppressions are used.
 */
#ifndef ILK_RCU_H
#define ILK_RCU_H

#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE 1 /* inline read side; see "Flavor" above */
#endif
/* Missing liburcu: this message first (see SystemLibraries/CLibURCU/urcu_shim.h). */
#if defined(__has_include)
#if !__has_include(<urcu-bp.h>)
#error "Interlock needs liburcu (userspace RCU), whose header urcu-bp.h was not found. Install it with: sudo apt-get install liburcu-dev (Debian, Ubuntu) or sudo dnf install userspace-rcu-devel (Fedora), then build again."
#endif
#endif
#include <urcu-bp.h>

#include <stddef.h>
#include <stdint.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ILK_TSAN 1
#endif
#endif
#if !defined(ILK_TSAN) && defined(__SANITIZE_THREAD__)
#define ILK_TSAN 1
#endif

/* Up to this many blocks, or this many bytes, per call_rcu. 118 blocks keep a batch (992
 * bytes) a small request for glibc's malloc: a request of 1 KiB or more first merges the small
 * chunks in the arena's fast bins (malloc_consolidate), whose cost grows with what the rest of
 * the program has freed (with 254 blocks, 2 KiB, `perf` found it in the queue's and stack's
 * retirement beside a load; ilk_node_pool.c). One call_rcu per 120 blocks still costs under
 * 1 ns per block. */
#define ILK_RCU_BATCH_BLOCKS 118
#define ILK_RCU_BATCH_BYTES (256u * 1024u)

/* The synchronization object of the annotations; its value is never read or written. */
extern char ilk_rcu_tsan_token;

#ifdef ILK_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define ILK_TSAN_RELEASE(addr) __tsan_release(addr)
#else
/*
 * Swift's clang importer, which compiles these inline functions into Swift code, is not given
 * -fsanitize=thread even when `swift build --sanitize=thread` is (the test "the RCU shim
 * carries ThreadSanitizer annotations" shows it). So outside TSan-compiled C, the annotation
 * is a weak reference to TSan's runtime: null (one predicted branch) in a normal process,
 * TSan's function in a sanitized one.
 */
extern void __tsan_release(void *addr) __attribute__((weak));
#define ILK_TSAN_RELEASE(addr)                                                                 \
    do {                                                                                       \
        if (__builtin_expect(__tsan_release != 0, 0)) __tsan_release(addr);                    \
    } while (0)
#endif

/* Enter an RCU read-side critical section; registers the thread on first use (urcu-bp). */
static inline __attribute__((always_inline)) void ilk_rcu_read_lock(void) {
#ifdef _LGPL_SOURCE
    _urcu_bp_read_lock();
#else
    urcu_bp_read_lock();
#endif
}

/* Leave the read-side critical section entered by the matching ilk_rcu_read_lock. */
static inline __attribute__((always_inline)) void ilk_rcu_read_unlock(void) {
    ILK_TSAN_RELEASE(&ilk_rcu_tsan_token);
#ifdef _LGPL_SOURCE
    _urcu_bp_read_unlock();
#else
    urcu_bp_read_unlock();
#endif
}

/* 1 when the read-side annotations are active in the code that calls this (see above). */
static inline int ilk_rcu_tsan_annotated(void) {
#ifdef ILK_TSAN
    return 1;
#else
    return __tsan_release != 0;
#endif
}

void *ilk_block_alloc(size_t size, size_t align);
void *ilk_block_alloc_zeroed(size_t size, size_t align);
void ilk_block_free(void *block);
void ilk_rcu_retire(void *block, size_t size);
/* ilk_rcu_retire for a block from ilk_block_cache_alloc_zeroed(size, align): after the grace
 * period it goes to the block cache (ilk_block_cache.h) when there is room, else it is freed. */
void ilk_rcu_retire_cached(void *block, size_t size, size_t align);
void ilk_rcu_flush(void);
void ilk_rcu_barrier(void);
/* Registers, with pthread_atfork and once per process, the handlers that keep RCU working in
 * the child of a fork() that is not followed by exec (ilk_rcu.c explains them). Call before
 * the first read-side section; later calls cost a pthread_once check. */
void ilk_rcu_install_fork_handlers(void);

/* Whether ilk_rcu_install_fork_handlers has run in this process (for tests). */
bool ilk_rcu_fork_handlers_installed(void);

/* call_rcu(head, func) for Interlock's callbacks: never caught half done by a fork(), and
 * never waits (inside a read-side section too): during a fork it is queued for the forker. */
void ilk_rcu_call(struct rcu_head *head, void (*func)(struct rcu_head *head));
/* For tests: runs body(context) where a call_rcu runs, inside the gate that fork() waits for
 * (entering it waits while a fork is under way: not inside a read-side section),
 * and the gate's word (bit 31: a fork is under way; bits 0-30: threads inside). */
void ilk_rcu_gate_run(void (*body)(void *context), void *context);
uint32_t *ilk_rcu_gate_word(void);
/* 1 when the fork handlers start a call_rcu worker in the child (always, but under
 * ThreadSanitizer without die_after_fork=0: see ilk_rcu.c); installs them first. */
int ilk_rcu_fork_starts_worker(void);
/* Batches handed to liburcu and not yet freed, for tests (relaxed snapshot). */
long ilk_rcu_batches_in_flight(void);
/* The size and alignment of a retirement batch's header, which the block cache keeps
 * (ilk_rcu.c), for tests. */
size_t ilk_rcu_batch_header_bytes(void);
size_t ilk_rcu_batch_header_alignment(void);

#endif /* ILK_RCU_H */
