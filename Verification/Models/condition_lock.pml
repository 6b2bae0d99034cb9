/* ConditionLock: a _MutexWord, an integer condition and a FIFO of waiter records, each waiter
 * parked on the futex word of its own record, to which an unlock hands the turn
 * (ConditionLock.swift, HandOffWait.swift).
 *
 * @mirrors Sources/Interlock/Locks/ConditionLock.swift: lock unlock _unlock _unlockHandingOff _unlink _waitForConditionUntimed _waitForCondition _unlinkListed _checkLocked
 * @mirrors Sources/Interlock/Locks/HandOffWait.swift: await
 * @mirrors Sources/Interlock/Locks/MutexWord.swift: tryLock lock unlock _unlockSlow _lockSlow _lockParking _spin
 * @mirrors Sources/Interlock/Locks/FutexWait.swift: wait wakeOne
 * @mirrors Sources/Interlock/Locks/AdaptiveSpin.swift: spin
 * @mirrors CShims/include/ilk_mutex.h: ilk_mutex_release_builtin
 * @mirrors CShims/include/ilk_futex.h: ilk_futex_wait ilk_futex_wait_until
 * @sha256 23943bda45e33732
 * @config -DN=2
 * @config -DN=3
 * @config -DN=2 -DTIMED
 * @config -DN=3 -DTIMED
 * @mutant -DN=2 -DMUTANT_NO_WAKE
 * @mutant -DN=2 -DMUTANT_ANNOUNCE_STORE
 * @mutant -DN=3 -DMUTANT_FIRST_RECORD
 * @mutant -DN=2 -DTIMED -DMUTANT_GRANT_AFTER_RELEASE
 * @mutant -DN=2 -DTIMED -DMUTANT_TIMEOUT_DROPS
 *
 * Workload: a token ring. Thread p, ROUNDS times: lock(whenCondition: p); the critical section;
 * unlock(withCondition: (p + 1) % N). The condition starts at 0. With TIMED, thread 0 uses
 * lock(whenCondition: 0, before: deadline) instead, and calls it again whenever it returns
 * false, until it returns true. Each thread must finish its rounds: one asleep at the end is a
 * lost hand-off (spin's invalid end state).
 *
 * Each atomic step of the code is one step here (spin's interleaving, i.e. sequentially
 * consistent; the file comment of ConditionLock.swift argues each relaxed access):
 *   lock(whenCondition: c)   _MutexWord.lock; the load of the condition (== c: return);
 *                            _waitForCondition
 *   lock(whenCondition:before:)   _MutexWord.lock(before:) (false: return false); the load of
 *                            the condition; the deadline may have passed (unlock, false);
 *                            _waitForCondition with the deadline
 *   _waitForCondition        1. the record's initialisation (word 0), the append, waiterCount
 *                            += 1 and `spinning` (one step: plain memory under the mutex), then
 *                            _MutexWord.unlock; 2. _HandOff.await: the spin (when spinning),
 *                            the CAS of the word 0 -> 2, then while the load of the word is
 *                            not 1: futex wait on it expecting 2 (timed: may time out, and
 *                            then await returns timedOut); 3. _MutexWord.lock, the load of the
 *                            word (not 1: _unlinkListed, one step under the mutex); 4. the load
 *                            of the condition (== c: return true, holding); timed out: unlock,
 *                            return false; else back to 1
 *   unlock(withCondition: n) _checkLocked (the load of the mutex word, asserted non-zero); the
 *                            store of the condition; the load of head (nil: _MutexWord.unlock);
 *                            _unlockHandingOff: the search for the first record waiting for n
 *                            and its _unlink (one step: plain memory under the mutex; none:
 *                            _MutexWord.unlock); the exchange of its word to 1; _MutexWord.unlock;
 *                            futex wake one on the record's word when the exchange found 2
 *   _MutexWord               tryLock: CAS 0 -> 1; _spin: one CAS 0 -> 1 attempt, or the budget
 *                            is spent; _lockParking: exchange(2), futex wait on 2 while that
 *                            found non-zero; timed (_lockSlow(before:)): the deadline may have
 *                            passed before the spin, and each futex wait may time out (return
 *                            false, the word left at 2); unlock: decrement, and when it found 2,
 *                            store 0 then wake one
 * A timed futex wait is _Futex.wait(until:): no system call once the deadline has passed
 * (.timedOut at once, whatever the word holds), else futex.pml's FUTEX_WAIT_TIMED, re-issued
 * after a kernel timeout while the deadline has not passed on ContinuousClock. A record's futex
 * id is its thread's: the record is allocated once per _waitForCondition and re-initialised on
 * each turn of its loop, at the same address, so a late wake of an earlier hand-off (made after
 * the unlocker released the mutex) reaches the same record on the next turn: the model has that
 * wake-up, which the code must survive (it re-checks the word).
 *
 * Checked, N = 2 and 3, with and without the timed thread: mutual exclusion (inCS), a thread
 * returns from lock(whenCondition: c) only when the condition is c (asserted in its critical
 * section), a record found listed by its timed-out thread really is listed (the precondition
 * of _unlinkListed), a thread handed the turn never returns false nor goes back to waiting
 * (in a token ring nobody else can move the condition on from c: asserted at step 4), and no
 * lost hand-off (invalid end states).
 *
 * Mutants (each must fail; scripts/verify.sh runs them):
 *   MUTANT_NO_WAKE               _unlockHandingOff never makes the futex wake (a sleeping
 *                                waiter is handed its turn with the store of 1 alone)
 *   MUTANT_ANNOUNCE_STORE        await announces its sleep with a plain store of 2 instead of
 *                                the CAS 0 -> 2: it overwrites a 1 stored meanwhile, and the
 *                                unlocker, which found 0, makes no wake
 *   MUTANT_FIRST_RECORD          _unlockHandingOff hands the turn to the head of the list, not
 *                                to the first record waiting for the new value (wrong target:
 *                                needs two waiters, N = 3)
 *   MUTANT_GRANT_AFTER_RELEASE   the exchange of the record's word to 1 is made after the
 *                                mutex is released: a timed-out waiter can take the mutex in
 *                                between, see its record unhanded and unlink one that is no
 *                                longer listed
 *   MUTANT_TIMEOUT_DROPS         step 4 tests the timeout before the condition: a waiter handed
 *                                its turn just as its deadline passed returns false
 * MUTANT_FIRST_RECORD trips the step-4 assertion first (the wrongly handed waiter finds another
 * value); without that assertion it shows as a lost hand-off. MUTANT_TIMEOUT_DROPS is caught by
 * that assertion only: the workload calls the timed lock again, which then finds its value and
 * hides the dropped turn from the end state (but not from a caller that gave up on false).
 *
 * Sizes: ROUNDS = 2, so that every thread waits for the turn at least once and thread 0 (first
 * to run) also waits, and a record is reused; N = 3 with TIMED is the largest run (1.6e7
 * states, about 25 s).
 *
 * Abstracted away, and why that is sound:
 *   - The adaptive spin of await (window, backoff, learnFromSpin/learnFromSleep): one acquire
 *     load of the word that returns on 1, or the window passing. Loads that find 0 change
 *     nothing, so one look placed anywhere by the interleaving stands for any number of them.
 *     `spinning` (waiterCount <= 2) is computed as the code does; in a token ring of at most
 *     three threads at most two records are listed, so it is always true here.
 *   - _MutexWord._spin: one attempt (the relaxed load and the CAS merged: a load that finds 0
 *     and a failed CAS is a load that found non-zero), or the budget spent: a failed attempt
 *     changes nothing, so one attempt stands for the bounded loop.
 *   - The list operations under the mutex (append, search, _unlink, _unlinkListed) are one
 *     step each: plain memory that only the holder of the mutex touches (mutual exclusion is
 *     asserted), so no other thread can observe their intermediate states. The list is an
 *     array of thread ids in FIFO order; waiterCount is its length.
 *   - No spurious wake-ups beyond the late wake above: futex.pml has none (every wait here
 *     re-checks its word, so one would only add states).
 *   - Weak memory: the interleaving is sequentially consistent. The record word's protocol is
 *     on one word (the waiter's CAS 0 -> 2 and the unlocker's exchange to 1 are ordered by its
 *     modification order whatever their orderings); everything else is under the mutex, whose
 *     acquire and release order it (ConditionLock.swift's file comment).
 *   - tryLock, tryLock(whenCondition:), lock(), unlock() (unlock(withCondition:) with the
 *     current value), the public condition getter, the `name` guard and the traps.
 */

#ifndef N
#define N 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#define SPIN_MAX_WAITERS 2   /* _conditionSpinMaxWaiters */
#define NONE 255

#define MUTEX 1              /* futex ids: the mutex word, then one per record */
#define REC(p) (2 + (p))

#ifdef TIMED
#define IS_TIMED (_pid == 0)
#else
#define IS_TIMED false
#endif

byte mutex = 0;              /* _ConditionLockState.mutex */
byte condition = 0;
byte q[N];                   /* the waiter list, FIFO: thread id + 1 of each listed record */
byte qlen = 0;               /* waiterCount */
byte rec[N];                 /* each thread's record word: 0 waiting, 2 asleep, 1 handed */
byte recCond[N];             /* each thread's record condition */
byte inCS = 0;
bool timedOut;               /* written by futex.pml's FUTEX_WAIT_TIMED (thread 0 only) */

#include "futex.pml"

/* _MutexWord._lockParking. */
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

/* _MutexWord.lock(before:): tryLock, then _lockSlow(before:). Sets ok. */
inline mutex_lock_timed() {
    if
    :: atomic { mutex == 0 -> mutex = 1 }; ok = true
    :: else ->
        if
        :: ok = false                                   /* the deadline had passed */
        :: atomic { mutex == 0 -> mutex = 1 }; ok = true  /* _spin */
        :: true ->
            do
            :: atomic { old = mutex; mutex = 2 };
               if
               :: old == 0 -> ok = true; break
               :: else ->
                   do
                   :: timedOut = true; break            /* the deadline had passed: no call */
                   :: FUTEX_WAIT_TIMED(MUTEX, mutex, 2);
                      if
                      :: !timedOut -> break
                      :: else -> skip                   /* re-issued if the deadline allows */
                      fi
                   od;
                   if
                   :: timedOut -> ok = false; break     /* the word stays 2 */
                   :: else -> skip
                   fi
               fi
            od
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

active [N] proctype thread() {
    byte round = 0;
    byte old;            /* the mutex word found by an exchange or decrement */
    byte asleep;         /* the record word found by the unlocker's exchange */
    byte chosen;         /* the record the unlocker hands the turn to */
    byte i;
    bool ok;             /* _MutexWord.lock(before:) succeeded */
    bool spinning;
    bool got;            /* await's spin saw 1 */
    bool waitTimedOut;   /* await returned true */
    bool handed;         /* step 3 found the word 1 */

    do
    :: round == ROUNDS -> break
    :: else ->
attempt:
        /* lock(whenCondition: _pid) or lock(whenCondition: _pid, before:) */
        if
        :: IS_TIMED ->
            mutex_lock_timed();
            if
            :: !ok -> goto attempt                      /* returned false: call it again */
            :: else -> skip
            fi
        :: else -> mutex_lock()
        fi;
        if
        :: condition == _pid -> goto locked
        :: else -> skip
        fi;
        if
        :: IS_TIMED ->
            if
            :: true -> mutex_unlock(); goto attempt     /* the deadline had passed */
            :: true -> skip
            fi
        :: else -> skip
        fi;
        /* _waitForCondition, step 1 (holding the mutex) */
wait:
        atomic {
            rec[_pid] = 0; recCond[_pid] = _pid;
            q[qlen] = _pid + 1; qlen++;
            spinning = (qlen <= SPIN_MAX_WAITERS)
        };
        mutex_unlock();
        /* step 2: _HandOff.await */
        got = false;
        waitTimedOut = false;
        if
        :: spinning ->
            if
            :: rec[_pid] == 1 -> got = true
            :: true -> skip                             /* the window passed */
            fi
        :: else -> skip
        fi;
        if
        :: !got ->
#ifdef MUTANT_ANNOUNCE_STORE
            rec[_pid] = 2;
#else
            atomic { if :: rec[_pid] == 0 -> rec[_pid] = 2 :: else -> skip fi };
#endif
            do
            :: rec[_pid] == 1 -> break
            :: else ->
                if
                :: IS_TIMED ->
                    do
                    :: timedOut = true; break           /* the deadline had passed: no call */
                    :: FUTEX_WAIT_TIMED(REC(_pid), rec[_pid], 2);
                       if
                       :: !timedOut -> break
                       :: else -> skip
                       fi
                    od;
                    if
                    :: timedOut -> waitTimedOut = true; break
                    :: else -> skip
                    fi
                :: else -> FUTEX_WAIT(REC(_pid), rec[_pid], 2)
                fi
            od
        :: else -> skip
        fi;
        /* step 3 */
        mutex_lock();
        if
        :: rec[_pid] != 1 ->
            handed = false;
            d_step {                                    /* _unlinkListed */
                i = 0;
                do
                :: i < qlen && q[i] != _pid + 1 -> i++
                :: else -> break
                od;
                assert(i < qlen);                       /* the precondition: still listed */
                do
                :: i + 1 < qlen -> q[i] = q[i + 1]; i++
                :: else -> break
                od;
                qlen--; q[qlen] = 0; i = 0
            }
        :: else -> handed = true
        fi;
        /* step 4 */
#ifdef MUTANT_TIMEOUT_DROPS
        if
        :: waitTimedOut -> assert(!handed); mutex_unlock(); goto attempt
        :: else -> skip
        fi;
#endif
        if
        :: condition == _pid -> goto locked
        :: else ->
            assert(!handed);
            if
            :: waitTimedOut -> mutex_unlock(); goto attempt   /* returned false: again */
            :: else -> goto wait
            fi
        fi;
locked:
        atomic { inCS++; assert(inCS == 1); assert(condition == _pid) };
        inCS--;
        /* unlock(withCondition: (_pid + 1) % N) */
        assert(mutex != 0);                             /* _checkLocked */
        condition = (_pid + 1) % N;
        if
        :: qlen == 0 -> mutex_unlock()
        :: else ->
            /* _unlockHandingOff: the first record waiting for the condition, unlinked */
            d_step {
                i = 0;
                chosen = NONE;
#ifdef MUTANT_FIRST_RECORD
                chosen = q[0] - 1;
#else
                do
                :: i == qlen -> break
                :: else ->
                    if
                    :: recCond[q[i] - 1] == condition -> chosen = q[i] - 1; break
                    :: else -> i++
                    fi
                od;
#endif
                if
                :: chosen != NONE ->
                    do
                    :: i + 1 < qlen -> q[i] = q[i + 1]; i++
                    :: else -> break
                    od;
                    qlen--; q[qlen] = 0
                :: else -> skip
                fi;
                i = 0
            };
            if
            :: chosen == NONE -> mutex_unlock()
            :: else ->
#ifdef MUTANT_GRANT_AFTER_RELEASE
                mutex_unlock();
                atomic { asleep = rec[chosen]; rec[chosen] = 1 };
#else
                atomic { asleep = rec[chosen]; rec[chosen] = 1 };
                mutex_unlock();
#endif
                if
                :: asleep == 2 ->
#ifndef MUTANT_NO_WAKE
                    futex_wake_one(REC(chosen))
#else
                    skip
#endif
                :: else -> skip
                fi;
                chosen = NONE; asleep = 0
            fi
        fi;
        round++
    od
}
