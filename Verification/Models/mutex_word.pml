/* Lock's mutex word: Drepper's mutex 3 with bounded spinning, as _MutexWord implements it.
 *
 * @mirrors Sources/Interlock/Locks/MutexWord.swift: tryLock _lockSlow _lockParking _spin _unlockSlow
 * @mirrors CShims/include/ilk_mutex.h: ilk_mutex_release_builtin
 * @sha256 d14dc2aa862c82b8
 * @config -DN=2
 * @config -DN=3
 * @config -DN=3 -DTIMED
 * @mutant -DN=2 -DMUTANT_NO_WAKE
 * @mutant -DN=2 -DMUTANT_WAKE_BEFORE_STORE
 * @mutant -DN=2 -DMUTANT_EXCHANGE_1
 *
 * Each atomic step of the code is one step here:
 *   tryLock / the spin's attempt   CAS 0 -> 1                 (one atomic step)
 *   the spin                       SPIN_TRIES attempts, each enabled only when the word reads 0
 *                                  at that moment, or given up (the budget); giving up at once
 *                                  stands for a caller that parks without spinning (a condition
 *                                  waiter re-taking its mutex under load, Condition.swift)
 *   _lockParking                   exchange(2); if it found 0, held; else futex-wait on 2; again
 *   timed lock (thread 0, TIMED)   the same, but the futex wait may time out: the thread gives
 *                                  up and leaves the word as it is (2)
 *   unlock                         decrement; if it found 2: store 0, then wake one (three
 *                                  steps: the window the invariants argue about)
 * Checked, for N threads of ROUNDS lock/unlock each: mutual exclusion (an assertion inside the
 * critical section) and no thread asleep at the end (invalid end states: a lost wake-up).
 *
 * Mutants (each must fail; scripts/verify.sh runs them): MUTANT_NO_WAKE (the unlock of 2 does
 * not wake), MUTANT_WAKE_BEFORE_STORE (the wake comes before the store of 0), MUTANT_EXCHANGE_1
 * (the parking thread marks the word 1 instead of 2, and sleeps on 1: the unlock's 1 -> 0 then
 * wakes nobody).
 */

#ifndef N
#define N 3
#endif
#define ROUNDS 2
#define SPIN_TRIES 2
#define WORD 1

byte word = 0;
byte inCS = 0;
bool timedOut;   /* written only by FUTEX_WAIT_TIMED of thread 0 */

#include "futex.pml"

active [N] proctype thread() {
    byte round = 0;
    byte old;
    byte tries;
    do
    :: round == ROUNDS -> break
    :: else ->
        /* tryLock: CAS 0 -> 1 */
        if
        :: atomic { word == 0 -> word = 1 }; goto locked
        :: else -> skip
        fi;
        /* _spin: attempts while the budget lasts */
        tries = 0;
        do
        :: tries < SPIN_TRIES ->
            tries++;
            if
            :: atomic { word == 0 -> word = 1 }; goto locked
            :: true -> skip
            fi
        :: else -> break
        od;
        /* _lockParking (or the timed form for thread 0) */
        do
        :: atomic {
#ifdef MUTANT_EXCHANGE_1
               old = word; word = 1
#else
               old = word; word = 2
#endif
           };
           if
           :: old == 0 -> break
           :: else ->
#ifdef TIMED
               if
               :: _pid == 0 ->
                   FUTEX_WAIT_TIMED(WORD, word, 2);
                   if :: timedOut -> goto next :: else -> skip fi
               :: else -> FUTEX_WAIT(WORD, word, 2)
               fi
#elif defined(MUTANT_EXCHANGE_1)
               FUTEX_WAIT(WORD, word, 1)
#else
               FUTEX_WAIT(WORD, word, 2)
#endif
           fi
        od;
locked:
        inCS++;
        assert(inCS == 1);
        inCS--;
        /* unlock: decrement; 2 -> 1 then store 0 and wake one */
        atomic { old = word; word = word - 1 };
        if
        :: old == 2 ->
#ifdef MUTANT_WAKE_BEFORE_STORE
            futex_wake_one(WORD);
            word = 0
#else
            word = 0;
#ifndef MUTANT_NO_WAKE
            futex_wake_one(WORD)
#else
            skip
#endif
#endif
        :: else -> assert(old == 1)
        fi;
next:
        round++
    od
}
