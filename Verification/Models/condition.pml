/* Condition: a futex sequence word for the condition, the _MutexWord for its lock, and the
 * broadcast that requeues the sleepers onto the mutex word (Condition.swift).
 *
 * @mirrors Sources/Interlock/Locks/Condition.swift: lock unlock wait _checkHeld _enterWait _sleep _leaveWait signal broadcast _signalSlow _broadcastSlow
 * @mirrors Sources/Interlock/Locks/MutexWord.swift: tryLock lock lockContended unlock _unlockSlow _lockSlow _lockParking _spin
 * @mirrors Sources/Interlock/Locks/FutexWait.swift: wait wakeOne wakeAll requeue
 * @mirrors Sources/Interlock/Locks/AdaptiveSpin.swift: spin
 * @mirrors CShims/include/ilk_mutex.h: ilk_mutex_release_builtin
 * @mirrors CShims/include/ilk_futex.h: ilk_futex_wait ilk_futex_wait_until ilk_futex_requeue
 * @sha256 194f14f0d281e470
 * @config -DN=2
 * @config -DN=3
 * @config -DN=3 -DPRODUCERS=2
 * @config -DN=2 -DTIMED
 * @config -DN=3 -DTIMED
 * @config -DN=3 -DPRODUCERS=2 -DTIMED
 * @config -DN=2 -DRING
 * @config -DN=3 -DRING
 * @config -DN=2 -DRING -DTIMED
 * @config -DN=3 -DRING -DTIMED
 * @mutant -DN=2 -DMUTANT_SIGNAL_NO_WAKE
 * @mutant -DN=2 -DMUTANT_SIGNAL_LOAD_FIRST
 * @mutant -DN=2 -DMUTANT_NO_MARK
 * @mutant -DN=3 -DMUTANT_LOCK_NOT_CONTENDED
 * @mutant -DN=2 -DMUTANT_REQUEUE_WAKE_0
 * @mutant -DN=2 -DMUTANT_READ_SEQ_AFTER_UNLOCK
 *
 * Workloads (every thread runs a fixed number of rounds and ends; a thread still asleep at the
 * end missed a wake-up, which spin reports as an invalid end state):
 *   producers/consumers (the default): the first N - PRODUCERS threads consume, the others
 *     produce. A consumer, PRODUCERS * ROUNDS times: lock; while items == 0 { wait }; items -=
 *     1; unlock. A producer, CONSUMERS * ROUNDS times: lock; items += 1; then, chosen freely
 *     each round, signal or broadcast, before or after its unlock (the broadcast after the
 *     unlock is the one that does not hold the mutex: its requeue wakes one thread and moves
 *     the others). As many items are made as consumed. N = 3 with one producer has two
 *     consumers, whom one broadcast requeues together; with PRODUCERS=2, two producers whose
 *     signals and broadcasts race (a requeue that finds the sequence moved and wakes everyone
 *     instead, two broadcasts raising lastRequeued at once).
 *   RING: thread p, ROUNDS times: lock; while turn != p { wait }; turn = (p + 1) % N; then
 *     broadcast (or, with N = 2, signal), before or after its unlock. The turn starts at 1, so
 *     that with N = 3 and one round threads 2 and 0 may wait together. Every thread both waits
 *     and broadcasts: a thread that broadcast (and raised lastRequeued) waits afterwards.
 * With TIMED, thread 0 waits with wait(until:), whose deadline may pass at any point. As a
 * consumer it gives up its round as soon as that returns false (the strict use: `guard
 * wait(until: d) else { return }`), so a timed-out wait that swallowed the signal another
 * consumer needed shows as that consumer asleep at the end; in the RING it only re-checks
 * its predicate and waits again.
 *
 * Each atomic step of the code is one step here (the memory model is spin's interleaving, i.e.
 * sequentially consistent; the file comment of Condition.swift argues each relaxed access):
 *   lock()          _MutexWord.lock (below), then the store owner = me
 *   unlock()        the load of owner (asserted == me), the store owner = 0, _MutexWord.unlock
 *   wait()          _checkHeld (load of owner, asserted == me); _enterWait: waiters += 1, load
 *                   of the sequence (observed), store owner = 0, _MutexWord.unlock; _sleep: load
 *                   of waiters (<= 2: spin), the spin, sleepers += 1, futex wait on the sequence
 *                   expecting observed, sleepers -= 1; _leaveWait: waiters -= 1, then (woken,
 *                   and the load of lastRequeued >= observed) lockContended, else lock; store
 *                   owner = me
 *   wait(until:)    the same, where the deadline may have passed at any point: before the call
 *                   (returns false holding the lock), before a futex wait (.timedOut without a
 *                   system call), or during it (the kernel's timeout, after which the wait is
 *                   re-issued on the same word with the same value while the deadline has not
 *                   passed on ContinuousClock: _Futex.wait(until:) and ilk_futex_wait_until)
 *   signal()        load of waiters (0: return); _signalSlow: sequence += 1, load of sleepers,
 *                   futex wake one on the sequence when it is not 0
 *   broadcast()     load of waiters (0: return); _broadcastSlow: sequence += 1 (current), load
 *                   of sleepers (0: return), the CAS-max loop raising lastRequeued to current
 *                   (a load, then one CAS per turn), load of owner (holding); holding: exchange
 *                   of the mutex word to 2, then FUTEX_CMP_REQUEUE(wake 0) onto the mutex word;
 *                   not holding: FUTEX_CMP_REQUEUE(wake 1); a requeue that finds the sequence
 *                   moved wakes every sleeper of the sequence instead
 *   _MutexWord      tryLock: CAS 0 -> 1; _spin: one CAS 0 -> 1 attempt, or the budget is spent;
 *                   _lockParking (= lockContended): exchange(2), futex wait on 2 while that
 *                   found non-zero; unlock: decrement, and when it found 2, store 0 then wake one
 * The futex calls are futex.pml's, plus two forms defined below in its terms: the waits with
 * the result the code branches on (.woken, .valueChanged, .timedOut), and FUTEX_CMP_REQUEUE
 * with wake 0. The sequence's futex word is its low half, and the counts here never wrap, so
 * the kernel's 32-bit compare is the full compare.
 *
 * Sizes: ROUNDS = 2 with N = 2 and 1 with N = 3 (two rounds of three threads pass 2e8 states);
 * at most 4 signals or broadcasts per run.
 *
 * Checked, for every workload with N = 2 and 3, with and without the timed waiter: mutual
 * exclusion over the user's data (inCS), a consumer never takes an item that is not there,
 * the owner invariant (a thread reads its own id in `owner` exactly when it holds the lock:
 * asserted at unlock, at wait and at the broadcast's `holding`), the broadcast's claim that a
 * held mutex word reads 1 or 2 when it marks it, and no lost wake-up (invalid end states),
 * which includes the chain of wakes through the mutex word after a requeue.
 *
 * Mutants (each must fail; scripts/verify.sh runs them):
 *   MUTANT_SIGNAL_NO_WAKE        _signalSlow never wakes (only bumps the sequence)
 *   MUTANT_SIGNAL_LOAD_FIRST     _signalSlow loads sleepers before incrementing the sequence
 *                                (breaks the Dekker pairing with the waiter's sleepers += 1)
 *   MUTANT_NO_MARK               the holding broadcast does not exchange the mutex word to 2
 *                                before the requeue: its unlock then finds 1 and wakes nobody
 *   MUTANT_LOCK_NOT_CONTENDED    _leaveWait always takes the mutex with lock (CAS 0 -> 1): a
 *                                requeued thread woken by an unlock leaves the word at 1 and
 *                                its unlock does not wake the next requeued one (needs two
 *                                requeued threads: N = 3)
 *   MUTANT_REQUEUE_WAKE_0        the broadcast that does not hold the mutex requeues with
 *                                wake 0 (the wrong count): the moved threads sleep on a mutex
 *                                word that nobody marked 2
 *   MUTANT_READ_SEQ_AFTER_UNLOCK _enterWait reads the sequence after releasing the mutex: a
 *                                signal in between is missed
 *
 * Abstracted away, and why that is sound:
 *   - The adaptive spin of _sleep (window, backoff, learnFromSpin/learnFromSleep): one look at
 *     the sequence that returns .valueChanged when it moved, or the window passing. Looks that
 *     find the sequence unchanged change nothing, so one look placed anywhere by the
 *     interleaving stands for any number of them; the window's length only decides when the
 *     spin stops, which is free here (a window of 0, under load, is a spin that gives up
 *     at once). The load of `waiters` that decides whether to spin is
 *     kept (in these workloads at most two threads wait, so it always allows the spin).
 *   - _MutexWord._spin: one attempt (a relaxed load and the CAS, merged: a load that finds 0
 *     followed by a failed CAS is a load that found non-zero), or the budget spent. A failed
 *     attempt changes nothing, so one attempt stands for the bounded loop.
 *     _leaveWait's re-acquisition after a sleep under load (tryLock, then _lockParking without
 *     the spin) is the same path with the spin given up at once.
 *   - No spurious wake-ups (EINTR): futex.pml has none, so that a lost wake-up cannot hide.
 *     An EINTR return is .woken without a wake consumed; the wait returns (callers loop), and
 *     at worst the thread takes the mutex with lockContended, leaving the word at 2: one wake
 *     call for nobody at its unlock.
 *   - Weak memory: the interleaving is sequentially consistent. The seq_cst pairs the protocol
 *     rests on (waiters, sleepers and the sequence; the kernel's compare after its barrier) are
 *     exactly that; the relaxed accesses are argued in Condition.swift's file comment (owner
 *     is written only by the holder; the decrements only lower upper bounds; the waiter's load
 *     of the sequence is made under the mutex).
 *   - The `name` guard, the traps (asserted instead), the clocks.
 */

#ifndef N
#define N 3
#endif
#ifndef ROUNDS
#if N == 2
#define ROUNDS 2
#else
#define ROUNDS 1
#endif
#endif
#ifndef PRODUCERS
#define PRODUCERS 1
#endif
#define CONSUMERS (N - PRODUCERS)
#define SPIN_MAX_WAITERS 2   /* _conditionSpinMaxWaiters */

#define MUTEX 1              /* futex ids */
#define SEQ 2

#define WOKEN 0              /* _Futex.WaitResult, and SLEEP: no wait made yet */
#define CHANGED 1
#define TIMEDOUT 2
#define SLEEP 3

byte mutex = 0;              /* _ConditionState.mutex: 0 free, 1 held, 2 held + maybe parked */
byte owner = 0;              /* thread id (_pid + 1) of the holder, 0 if none */
byte waiters = 0;
byte sleepers = 0;
byte seq = 1;                /* the sequence (starts above lastRequeued) */
byte lastRequeued = 0;
byte items = 0;              /* the user's predicate, under the mutex (consumers) */
byte turn = 1;               /* the user's predicate, under the mutex (RING): whose turn */
byte inCS = 0;

#include "futex.pml"

/* futex.pml's FUTEX_WAIT and FUTEX_WAIT_TIMED, with the result the code branches on recorded
 * in `res` (WOKEN: taken off the queue by a wake; CHANGED: the compare failed, EAGAIN;
 * TIMEDOUT: left the queue without a wake). */
#define FUTEX_WAIT_RESULT(id, word, expected, res) \
    atomic { if :: (word) == (expected) -> waitOn[_pid] = (id); res = WOKEN :: else -> res = CHANGED fi }; \
    (waitOn[_pid] == 0)

#define FUTEX_WAIT_TIMED_RESULT(id, word, expected, res) \
    atomic { if :: (word) == (expected) -> waitOn[_pid] = (id); res = WOKEN :: else -> res = CHANGED fi }; \
    if \
    :: (waitOn[_pid] == 0) -> skip \
    :: atomic { waitOn[_pid] != 0 -> waitOn[_pid] = 0; res = TIMEDOUT } \
    fi

/* FUTEX_CMP_REQUEUE with wake 0: move every sleeper of `from` to `to`, wake none. Inside the
 * atomic block that made the compare. */
inline futex_requeue_all_body(from, to) {
    if :: waitOn[0] == (from) -> waitOn[0] = (to) :: else -> skip fi;
    if :: N > 1 && waitOn[1] == (from) -> waitOn[1] = (to) :: else -> skip fi;
    if :: N > 2 && waitOn[2] == (from) -> waitOn[2] = (to) :: else -> skip fi
}

/* _MutexWord._lockParking, which is also lockContended. */
inline mutex_lock_parking() {
    do
    :: atomic { old = mutex; mutex = 2 };
       if
       :: old == 0 -> break
       :: else -> FUTEX_WAIT(MUTEX, mutex, 2)
       fi
    od
}

/* _MutexWord.lock: tryLock, then _lockSlow (_spin, then _lockParking). */
inline mutex_lock() {
    if
    :: atomic { mutex == 0 -> mutex = 1 }
    :: else ->
        if
        :: atomic { mutex == 0 -> mutex = 1 }
        :: true -> mutex_lock_parking()
        fi
    fi
}

/* _MutexWord.unlock: ilk_mutex_release (decrement), then _unlockSlow for a word that was 2. */
inline mutex_unlock() {
    atomic { old = mutex; mutex = mutex - 1 };
    if
    :: old == 2 ->
        mutex = 0;
        futex_wake_one(MUTEX)
    :: else -> assert(old == 1)
    fi
}

inline cond_lock() {
    mutex_lock();
    owner = _pid + 1
}

inline cond_unlock() {
    assert(owner == _pid + 1);
    owner = 0;
    mutex_unlock()
}

inline cond_signal() {
    if
    :: waiters == 0 -> skip
    :: else ->
#ifdef MUTANT_SIGNAL_LOAD_FIRST
        if
        :: sleepers != 0 -> seq++; futex_wake_one(SEQ)
        :: else -> seq++
        fi
#else
        seq++;
        if
        :: sleepers != 0 ->
#ifndef MUTANT_SIGNAL_NO_WAKE
            futex_wake_one(SEQ)
#else
            skip
#endif
        :: else -> skip
        fi
#endif
    fi
}

inline cond_broadcast(iHold) {
    if
    :: waiters == 0 -> skip
    :: else ->
        atomic { seq++; current = seq };
        if
        :: sleepers == 0 -> skip
        :: else ->
            seen = lastRequeued;
            do
            :: seen >= current -> break
            :: else ->
                atomic {
                    if
                    :: lastRequeued == seen -> lastRequeued = current; seen = current
                    :: else -> seen = lastRequeued
                    fi
                }
            od;
            holding = (owner == _pid + 1);
            assert(holding == iHold);
            if
            :: holding ->
#ifndef MUTANT_NO_MARK
                atomic { old = mutex; mutex = 2 };
                assert(old == 1 || old == 2);
#endif
                atomic {
                    if
                    :: seq == current -> futex_requeue_all_body(SEQ, MUTEX); moved = true
                    :: else -> moved = false
                    fi
                }
            :: else ->
                atomic {
                    if
                    :: seq == current ->
#ifdef MUTANT_REQUEUE_WAKE_0
                        futex_requeue_all_body(SEQ, MUTEX);
#else
                        futex_requeue_body(SEQ, MUTEX);
#endif
                        moved = true
                    :: else -> moved = false
                    fi
                }
            fi;
            if
            :: !moved -> futex_wake_all(SEQ)
            :: else -> skip
            fi
        fi
    fi
}

/* wait() (wait(until:) for thread 0 with TIMED), called holding the lock; returns holding it,
 * with gaveUp set when wait(until:) returned false. */
inline cond_wait() {
    /* wait() / wait(until:): _checkHeld */
    assert(owner == _pid + 1);
#ifdef TIMED
    if
    :: _pid == 0 -> gaveUp = true; goto waited   /* the deadline had passed */
    :: true -> skip
    fi;
#endif
    /* _enterWait */
    waiters++;
#ifndef MUTANT_READ_SEQ_AFTER_UNLOCK
    observed = seq;
#endif
    owner = 0;
    mutex_unlock();
#ifdef MUTANT_READ_SEQ_AFTER_UNLOCK
    observed = seq;
#endif
    /* _sleep: the spin */
    res = SLEEP;
    if
    :: waiters <= SPIN_MAX_WAITERS ->
        if
        :: seq != observed -> res = CHANGED
        :: true -> skip
        fi
    :: else -> skip
    fi;
    /* _sleep: the futex wait */
    if
    :: res == SLEEP ->
        sleepers++;
#ifdef TIMED
        if
        :: _pid == 0 ->
            do
            :: res = TIMEDOUT; break
            :: FUTEX_WAIT_TIMED_RESULT(SEQ, seq, observed, res);
               if
               :: res != TIMEDOUT -> break
               :: else -> skip
               fi
            od
        :: else -> FUTEX_WAIT_RESULT(SEQ, seq, observed, res)
        fi;
#else
        FUTEX_WAIT_RESULT(SEQ, seq, observed, res);
#endif
        sleepers--
    :: else -> skip
    fi;
    /* _leaveWait */
    waiters--;
#ifndef MUTANT_LOCK_NOT_CONTENDED
    if
    :: res == WOKEN && lastRequeued >= observed -> mutex_lock_parking()
    :: else -> mutex_lock()
    fi;
#else
    mutex_lock();
#endif
    owner = _pid + 1;
    gaveUp = (res == TIMEDOUT);
waited:
    skip
}

active [N] proctype thread() {
    byte round = 0;
    byte old;          /* the mutex word found by an exchange or decrement */
    byte observed;     /* the sequence read by _enterWait */
    byte res;          /* the wait's _Futex.WaitResult, or SLEEP */
    byte current;      /* the broadcast's incremented sequence */
    byte seen;         /* the CAS-max loop's guess of lastRequeued */
    bool holding;
    bool moved;
    bool gaveUp;       /* wait(until:) returned false */

#ifdef RING
    do
    :: round == ROUNDS -> break
    :: else ->
        cond_lock();
        atomic { inCS++; assert(inCS == 1) };
        do
        :: turn == _pid -> break
        :: else ->
            inCS--;
            cond_wait();                 /* a false return changes nothing: re-check, wait again */
            atomic { inCS++; assert(inCS == 1) }
        od;
        atomic { turn = (turn + 1) % N; inCS-- };
        if
        :: N == 2 -> cond_signal(); cond_unlock()
        :: true -> cond_broadcast(true); cond_unlock()
        :: N == 2 -> cond_unlock(); cond_signal()
        :: true -> cond_unlock(); cond_broadcast(false)
        fi;
        round++
    od
#else
    if
    :: _pid >= CONSUMERS ->
        do
        :: round == CONSUMERS * ROUNDS -> break
        :: else ->
            cond_lock();
            atomic { inCS++; assert(inCS == 1) };
            atomic { items++; inCS-- };
            if
            :: true -> cond_signal(); cond_unlock()
            :: true -> cond_broadcast(true); cond_unlock()
            :: true -> cond_unlock(); cond_signal()
            :: true -> cond_unlock(); cond_broadcast(false)
            fi;
            round++
        od
    :: else ->
        do
        :: round == PRODUCERS * ROUNDS -> break
        :: else ->
            cond_lock();
            atomic { inCS++; assert(inCS == 1) };
            gaveUp = false;
            do
            :: items > 0 -> break
            :: else ->
                inCS--;
                cond_wait();
                atomic { inCS++; assert(inCS == 1) };
                if
                :: gaveUp -> break
                :: else -> skip
                fi
            od;
            atomic {
                if
                :: !gaveUp -> assert(items > 0); items--
                :: else -> skip
                fi;
                inCS--
            };
            cond_unlock();
            round++
        od
    fi
#endif
}
