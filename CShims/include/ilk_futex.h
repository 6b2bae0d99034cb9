/*
 * ilk_futex.h — wait on and wake a 32-bit word, and the current thread's id.
 *
 * On Linux these are private futexes (FUTEX_*_PRIVATE: the word is not shared between
 * processes, which lets the kernel skip the mm-wide hash). Elsewhere, or when compiled with
 * ILK_FUTEX_FORCE_FALLBACK, a portable emulation over a table of pthread mutex/condvar
 * buckets keyed by address (ilk_futex_fallback.c) gives the same contract, with more
 * spurious wake-ups and no exact wake counts.
 *
 * Contract (both implementations):
 *   ilk_futex_wait(word, expected, timeout_ns)
 *       Atomically checks *word == expected and sleeps until woken, or until timeout_ns
 *       nanoseconds have passed on CLOCK_MONOTONIC (timeout_ns < 0: no timeout).
 *       Returns ILK_FUTEX_WOKEN (woken, or a spurious or signal-interrupted return: EINTR is
 *       folded in here), ILK_FUTEX_VALUE_CHANGED (*word != expected on entry: EAGAIN),
 *       ILK_FUTEX_TIMED_OUT, or a NEGATIVE errno for any other failure (EFAULT, EINVAL,
 *       ENOSYS, EPERM from a seccomp filter, ...). Such a failure is not a wake-up: it will
 *       recur on every call, and a caller that looped on it would spin hot forever, so the
 *       Swift side traps naming the primitive and the errno (FutexWait.swift). Every caller
 *       must re-check its condition in a loop.
 *   ilk_futex_wait_until(word, expected, deadline_ns)
 *       As above with an absolute deadline on CLOCK_BOOTTIME, the clock of Swift's
 *       ContinuousClock on Linux. The futex timeout runs on CLOCK_MONOTONIC, which stops
 *       during suspend while CLOCK_BOOTTIME does not, so the time left is recomputed before
 *       every wait and the deadline re-checked after it: ILK_FUTEX_TIMED_OUT is returned
 *       only once CLOCK_BOOTTIME has reached the deadline, never early.
 *   ilk_futex_wake(word, count)     wakes up to `count` waiters; returns how many (Linux),
 *                                   or a negative errno when the kernel refuses (a lost wake-up
 *                                   if ignored: callers trap).
 *   ilk_futex_wake_one / _all       count 1 / INT32_MAX.
 *   ilk_futex_requeue(word, expected, wake, target, requeue)
 *       FUTEX_CMP_REQUEUE: if *word == expected, wakes up to `wake` waiters of `word` and
 *       moves up to `requeue` others to wait on `target` instead (no thundering herd on a
 *       condition broadcast). Returns the number woken plus requeued, -EAGAIN when *word
 *       changed (the caller retries or wakes all), or another negative errno when the kernel
 *       refuses. The fallback wakes everyone instead.
 *   ilk_current_thread_id()         the kernel thread id (gettid), cached per thread (the cache
 *                                   is reset in the child of fork()); never 0.
 *   ilk_clock_boottime_ns() / ilk_clock_monotonic_ns()   the clocks, in nanoseconds.
 */
#ifndef ILK_FUTEX_H
#define ILK_FUTEX_H

#include <stdint.h>
#include <time.h>

#include "ilk_atomic.h"

enum {
    ILK_FUTEX_WOKEN = 0,
    ILK_FUTEX_VALUE_CHANGED = 1,
    ILK_FUTEX_TIMED_OUT = 2,
};

#if defined(__linux__) && !defined(ILK_FUTEX_FORCE_FALLBACK)
#define ILK_HAVE_FUTEX 1
#else
#define ILK_HAVE_FUTEX 0
#endif

#ifndef CLOCK_BOOTTIME
#define ILK_CLOCK_BOOTTIME CLOCK_MONOTONIC
#else
#define ILK_CLOCK_BOOTTIME CLOCK_BOOTTIME
#endif

ILK_INLINE int64_t ilk_clock_read_ns(clockid_t clock) {
    struct timespec ts;
    (void)clock_gettime(clock, &ts); /* cannot fail for these clock ids */
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}
ILK_INLINE int64_t ilk_clock_boottime_ns(void) { return ilk_clock_read_ns(ILK_CLOCK_BOOTTIME); }
ILK_INLINE int64_t ilk_clock_monotonic_ns(void) { return ilk_clock_read_ns(CLOCK_MONOTONIC); }

#if ILK_HAVE_FUTEX

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

ILK_INLINE long ilk_futex_syscall(uint32_t *word, int op, uint32_t value,
                                  const struct timespec *timeout, uint32_t *word2,
                                  uint32_t value3) {
    return syscall(SYS_futex, word, op, value, timeout, word2, value3);
}

ILK_INLINE int ilk_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec ts;
    const struct timespec *timeout = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        timeout = &ts;
    }
    if (ilk_futex_syscall(word, FUTEX_WAIT_PRIVATE, expected, timeout, NULL, 0) == 0)
        return ILK_FUTEX_WOKEN;
    switch (errno) {
    case EAGAIN: /* "The value pointed to by uaddr was not equal to the expected value val" */
        return ILK_FUTEX_VALUE_CHANGED;
    case ETIMEDOUT: /* "The operation in op employed the timeout ... and it expired" */
        return ILK_FUTEX_TIMED_OUT;
    case EINTR: /* "The operation was interrupted by a signal": a spurious wake-up */
        return ILK_FUTEX_WOKEN;
    default: /* EFAULT, EINVAL, ENOSYS, EPERM (seccomp), ...: persistent, the caller traps */
        return -errno;
    }
}

ILK_INLINE int ilk_futex_wake(uint32_t *word, int32_t count) {
    long woken = ilk_futex_syscall(word, FUTEX_WAKE_PRIVATE, (uint32_t)count, NULL, NULL, 0);
    return woken < 0 ? -errno : (int)woken;
}

ILK_INLINE int ilk_futex_requeue(uint32_t *word, uint32_t expected, int32_t wake_count,
                                 uint32_t *target, int32_t requeue_count) {
    /* FUTEX_CMP_REQUEUE passes the requeue limit in the timeout argument's slot. */
    long r = syscall(SYS_futex, word, FUTEX_CMP_REQUEUE_PRIVATE, (uint32_t)wake_count,
                     (unsigned long)(uint32_t)requeue_count, target, expected);
    return r < 0 ? -errno : (int)r; /* EAGAIN: "The value pointed to by uaddr is not equal to val3" */
}

/* The calling thread's cached kernel id; 0 until first read. One variable for the whole
 * process (defined in ilk_shim.c), reset in a fork()'s child by a pthread_atfork handler, where
 * the surviving thread has a new id. */
extern _Thread_local uint32_t ilk_thread_id_cache;
uint32_t ilk_thread_id_slow(void);

ILK_INLINE uint32_t ilk_current_thread_id(void) {
    uint32_t cached = ilk_thread_id_cache;
    if (__builtin_expect(cached == 0, 0)) cached = ilk_thread_id_slow();
    return cached;
}

#else /* portable fallback, ilk_futex_fallback.c */

int ilk_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns);
int ilk_futex_wake(uint32_t *word, int32_t count);
int ilk_futex_requeue(uint32_t *word, uint32_t expected, int32_t wake_count, uint32_t *target,
                      int32_t requeue_count);
uint32_t ilk_current_thread_id(void);

#endif

ILK_INLINE int ilk_futex_wake_one(uint32_t *word) { return ilk_futex_wake(word, 1); }
ILK_INLINE int ilk_futex_wake_all(uint32_t *word) { return ilk_futex_wake(word, INT32_MAX); }

ILK_INLINE int ilk_futex_wait_until(uint32_t *word, uint32_t expected, int64_t deadline_ns) {
    for (;;) {
        int64_t left = deadline_ns - ilk_clock_boottime_ns();
        if (left <= 0) return ILK_FUTEX_TIMED_OUT;
        int r = ilk_futex_wait(word, expected, left);
        /* A monotonic timeout may expire before the boot-time deadline (suspend): loop. */
        if (r != ILK_FUTEX_TIMED_OUT) return r;
    }
}

#endif /* ILK_FUTEX_H */
