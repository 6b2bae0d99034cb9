/* The kernel's futex, as the models use it: one wait queue per futex word, with the kernel's
 * compare-and-sleep. Included by every model after it defines N (the number of threads, at
 * most 3) and declares its words.
 *
 *   waitOn[p]   0: thread p is not asleep; otherwise the id of the futex word it sleeps on
 *
 *   FUTEX_WAIT(id, word, expected)   atomically: if word == expected, queue the caller on `id`;
 *                                    then block until a wake takes it off (no spurious
 *                                    wake-ups: a model with them could never show a lost one)
 *   futex_wake_one(id)               atomically: take one sleeper of `id` off, any of them
 *   futex_wake_all(id)               atomically: take every sleeper of `id` off
 *   futex_requeue(from, to)          atomically: wake one sleeper of `from` and move the others
 *                                    to `to` (FUTEX_CMP_REQUEUE with wake 1, requeue all; the
 *                                    caller checks the compare in the same atomic step)
 *   FUTEX_WAIT_TIMED(id, word, exp)  as FUTEX_WAIT, or leaves the queue at any moment without a
 *                                    wake (the timeout), recording it in `timedOut`
 *
 * A thread asleep forever shows as an invalid end state (spin's default safety check): the
 * models' threads run a fixed number of rounds and then end, so every blocked thread at the
 * end is a lost wake-up or a deadlock.
 */

byte waitOn[N];

#define FUTEX_WAIT(id, word, expected) \
    atomic { if :: (word) == (expected) -> waitOn[_pid] = (id) :: else -> skip fi }; \
    (waitOn[_pid] == 0)

#define FUTEX_WAIT_TIMED(id, word, expected) \
    atomic { if :: (word) == (expected) -> waitOn[_pid] = (id) :: else -> skip fi }; \
    if \
    :: (waitOn[_pid] == 0) -> timedOut = false \
    :: atomic { waitOn[_pid] != 0 -> waitOn[_pid] = 0; timedOut = true } \
    fi

inline futex_wake_one(id) {
    atomic {
        if
        :: waitOn[0] == (id) -> waitOn[0] = 0
        :: N > 1 && waitOn[1] == (id) -> waitOn[1] = 0
        :: N > 2 && waitOn[2] == (id) -> waitOn[2] = 0
        :: else -> skip
        fi
    }
}

inline futex_wake_all(id) {
    atomic {
        if :: waitOn[0] == (id) -> waitOn[0] = 0 :: else -> skip fi;
        if :: N > 1 && waitOn[1] == (id) -> waitOn[1] = 0 :: else -> skip fi;
        if :: N > 2 && waitOn[2] == (id) -> waitOn[2] = 0 :: else -> skip fi
    }
}

/* Wake one sleeper of `from` (any), move the others to `to`. Call inside an atomic block that
 * has already done the compare. */
inline futex_requeue_body(from, to) {
    if
    :: waitOn[0] == (from) -> waitOn[0] = 0
    :: N > 1 && waitOn[1] == (from) -> waitOn[1] = 0
    :: N > 2 && waitOn[2] == (from) -> waitOn[2] = 0
    :: else -> skip
    fi;
    if :: waitOn[0] == (from) -> waitOn[0] = (to) :: else -> skip fi;
    if :: N > 1 && waitOn[1] == (from) -> waitOn[1] = (to) :: else -> skip fi;
    if :: N > 2 && waitOn[2] == (from) -> waitOn[2] = (to) :: else -> skip fi
}
