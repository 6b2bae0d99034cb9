/*
 * The shim is header-only (static inline functions that Swift inlines) but for the few
 * definitions below; this file also checks at build time the assumptions the headers make.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD (ilk_spin_was_preempted) */
#endif
#include "include/CInterlock.h"

_Static_assert(__GCC_ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(__GCC_ATOMIC_POINTER_LOCK_FREE == 2, "pointer atomics must be lock-free");
_Static_assert(ILK_ORDER_RELAXED == 0 && ILK_ORDER_SEQ_CST == 5, "orders are the C11 values");

/* ilk_fence.h: alone on its 128 bytes (two cache lines, against the adjacent-line prefetcher),
 * so that the rare stores of spinners that noticed a preemption slow no unrelated data. */
_Alignas(128) int64_t ilk_spin_loaded_until_storage[16];

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>

/* ilk_spin_run_delay_permille: the calling thread's run delay (schedstat's second field, the
 * nanoseconds it spent runnable but not running) and the time at its previous check (0: never). */
static _Thread_local int64_t ilk_spin_delay_seen;
static _Thread_local int64_t ilk_spin_checked_at;

/* The second field of /proc/thread-self/schedstat, or -1 when it cannot be read. Opened and
 * closed on each call: a descriptor kept per thread would cost an application with thousands of
 * threads as many descriptors, and the call is rate-limited by its caller. */
static int64_t ilk_spin_read_run_delay(void) {
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[96];
    ssize_t length = read(fd, text, sizeof text - 1);
    (void)close(fd);
    if (length <= 0) return -1;
    text[length] = 0;
    const char *cursor = text;
    while (*cursor >= '0' && *cursor <= '9') cursor++; /* the time on the CPU */
    if (*cursor != ' ') return -1;
    cursor++;
    int64_t delay = 0;
    if (*cursor < '0' || *cursor > '9') return -1;
    while (*cursor >= '0' && *cursor <= '9') delay = delay * 10 + (*cursor++ - '0');
    return delay;
}

int ilk_spin_run_delay_permille(int64_t now, int64_t interval) {
    int64_t previous = ilk_spin_checked_at;
    if (previous != 0 && now - previous < interval) return -1;
    int64_t delay = ilk_spin_read_run_delay();
    if (delay < 0) {
        ilk_spin_checked_at = now; /* unreadable: try again an interval later */
        return -1;
    }
    int64_t seen = ilk_spin_delay_seen;
    ilk_spin_delay_seen = delay;
    ilk_spin_checked_at = now;
    if (previous == 0 || now <= previous || delay < seen) return -1;
    int64_t permille = (delay - seen) * 1000 / (now - previous);
    return permille > 1000 ? 1000 : (int)permille;
}
#else
int ilk_spin_run_delay_permille(int64_t now, int64_t interval) {
    (void)now;
    (void)interval;
    return -1;
}
#endif

#if ILK_HAVE_FUTEX
#include <pthread.h>

_Thread_local uint32_t ilk_thread_id_cache;

/* In the child of fork() the one surviving thread has a new kernel id: forget the parent's. */
static void ilk_thread_id_after_fork_in_child(void) { ilk_thread_id_cache = 0; }

static pthread_once_t ilk_thread_id_once = PTHREAD_ONCE_INIT;
static void ilk_thread_id_register_atfork(void) {
    (void)pthread_atfork(NULL, NULL, ilk_thread_id_after_fork_in_child);
}

uint32_t ilk_thread_id_slow(void) {
    pthread_once(&ilk_thread_id_once, ilk_thread_id_register_atfork);
    uint32_t id = (uint32_t)syscall(SYS_gettid);
    ilk_thread_id_cache = id;
    return id;
}
#endif

/* The mutex release under ThreadSanitizer (ilk_mutex.h): cold and out of line on purpose, so
 * that the assembly form is the fall-through wherever ilk_mutex_release is inlined. */
__attribute__((cold, noinline)) uint32_t ilk_mutex_release_sanitized(uint32_t *word) {
    return ilk_mutex_release_builtin(word);
}

/* The read unlock under ThreadSanitizer (ilk_rwlock.h): cold and out of line, as above. */
__attribute__((cold, noinline)) uint32_t ilk_rwlock_reader_leave_sanitized(uint64_t *readers) {
    return ilk_rwlock_reader_leave_builtin(readers);
}
