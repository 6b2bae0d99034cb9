/* Once and Lazy: the four-state run-once word (NEW, RUNNING, SLEEPERS, DONE) with a bounded spin
 * before sleeping and a body that may throw, as _OnceWord implements it (OnceWord.swift; Once.run
 * and Lazy's slow path call it).
 *
 * @mirrors Sources/Interlock/Once/OnceWord.swift: isDone runSlow _spinWhileRunning _runBody _isRunner
 * @mirrors Sources/Interlock/Once/Once.swift: run
 * @mirrors Sources/Interlock/Once/Lazy.swift: _computeValue
 * @sha256 fa473762cdfd06ce
 * @config -DN=2 -DTHROWS=0
 * @config -DN=2 -DTHROWS=2
 * @config -DN=3 -DTHROWS=0
 * @config -DN=3 -DTHROWS=1
 * @config -DN=3 -DTHROWS=2
 * @config -DN=3 -DCALLS=3 -DTHROWS=2
 * @mutant -DN=2 -DTHROWS=1 -DMUTANT_NO_WAKE_ON_THROW
 * @mutant -DN=2 -DTHROWS=0 -DMUTANT_LOAD_THEN_STORE
 * @mutant -DN=3 -DTHROWS=0 -DMUTANT_WAKE_ONE
 * @mutant -DN=2 -DTHROWS=0 -DMUTANT_SLEEP_UNMARKED
 * @mutant -DN=2 -DTHROWS=1 -DMUTANT_THROW_LEAVES_RUNNING
 *
 * N threads (at most 3) each call run(body) CALLS times on the same object; the bodies throw
 * nondeterministically, at most THROWS times in all (a caller whose body threw calls again).
 *
 * Each atomic step of the code is one step here:
 *   fast path (Once.run)  acquire load: DONE returns
 *   runSlow               acquire load; then by the value in hand:
 *     DONE                return
 *     NEW                 CAS 0 -> 1 (the value found in hand); won: run the body
 *     RUNNING             the recursion check (relaxed load of `runner`); first time: the spin,
 *                         whose value is one acquire load (below); else CAS 1 -> 2 (found 1:
 *                         SLEEPERS in hand; else the value found)
 *     SLEEPERS            the recursion check; FUTEX_WAIT(word, 2); acquire load
 *   _runBody              store runner = me; the body (completes, or throws while the budget
 *                         lasts); store runner = 0; exchange(DONE, or NEW after a throw); if it
 *                         found SLEEPERS, futex_wake_all
 *
 * _spinWhileRunning: up to 128 loads with a pause between, returning the first that is not
 * RUNNING, or RUNNING when the budget is spent. Loads that read RUNNING change nothing (the
 * budget is local), so the spin is one load at an instant the scheduler chooses: any value it can
 * return at any instant, one load returns too, and conversely.
 *
 * The recursion check (_isRunner) is modelled as an assertion that the caller never reads its
 * own id in `runner` (no caller here calls from inside its body): the check has no false
 * positives.
 *
 * Checked (assertions, and spin's invalid end states: a thread asleep forever is a lost wake-up):
 *   - never two bodies at once;
 *   - a body starts only while none has completed, and completes at most once;
 *   - a call returns normally only once the word is DONE and a body has completed (and DONE is
 *     final: nothing writes the word after it); a call that throws is one whose own body threw;
 *   - at the end: exactly one body completed (the calls outnumber the throws), the word DONE,
 *     `runner` 0;
 *   - no lost wake-up: every thread ends.
 *
 * Mutants (each must fail): MUTANT_NO_WAKE_ON_THROW (the runner whose body threw resets the word
 * to NEW without waking the sleepers), MUTANT_LOAD_THEN_STORE (the runner's exchange split into a
 * load and a store: a CAS 1 -> 2 between them is overwritten and its sleeper never woken),
 * MUTANT_WAKE_ONE (the runner wakes one sleeper instead of all: with two asleep, one stays),
 * MUTANT_SLEEP_UNMARKED (after the spin, a caller sleeps on RUNNING without its CAS 1 -> 2: the
 * runner's exchange finds 1 and wakes nobody), MUTANT_THROW_LEAVES_RUNNING (a throwing body's
 * runner writes nothing back: the word stays RUNNING and every other caller waits forever).
 *
 * Not modelled, and why that is sound: the memory orders (every step here is sequentially
 * consistent; the file comment argues the orderings); recursive calls from inside a body (a trap
 * by design; only the absence of false positives of its check is modelled); the pause between
 * spin loads (timing); AsyncLazy (its own algorithm, not this word).
 */

#ifndef N
#define N 3
#endif
#ifndef CALLS
#define CALLS 2
#endif
#ifndef THROWS
#define THROWS 1
#endif

#define NEW 0
#define RUNNING 1
#define SLEEPERS 2
#define DONE 3
#define WORD 1

byte word = NEW;
byte runner;      /* the runner's id + 1 while it runs the body, 0 otherwise */
byte inBody;      /* ghost: bodies running */
byte completions; /* ghost: bodies completed */
byte throws;      /* ghost: bodies thrown */
byte live = N;

#include "futex.pml"

active [N] proctype caller() {
    byte call, s, prev;
    bool spun, completed;
    do
    :: call == CALLS -> break
    :: else ->
        /* Once.run: the fast path */
        if :: word == DONE -> goto returned :: else -> skip fi;
        /* runSlow */
        s = word;
        spun = false;
        do
        :: s == DONE -> break
        :: s == NEW ->
            atomic { s = word; if :: word == NEW -> word = RUNNING :: else -> skip fi };
            if :: s == NEW -> goto runBody :: else -> skip fi
        :: s == RUNNING ->
            assert(runner != _pid + 1); /* _isRunner: never true here */
            if
            :: !spun -> spun = true; s = word /* _spinWhileRunning */
            :: else ->
#ifdef MUTANT_SLEEP_UNMARKED
                FUTEX_WAIT(WORD, word, RUNNING);
                s = word
#else
                atomic { s = word; if :: word == RUNNING -> word = SLEEPERS :: else -> skip fi };
                if :: s == RUNNING -> s = SLEEPERS :: else -> skip fi
#endif
            fi
        :: s == SLEEPERS ->
            assert(runner != _pid + 1); /* _isRunner: never true here */
            FUTEX_WAIT(WORD, word, SLEEPERS);
            s = word
        od;
        goto returned;

runBody:
        runner = _pid + 1;
        atomic { inBody++; assert(inBody == 1 && completions == 0 && (word == RUNNING || word == SLEEPERS)) };
        /* the body: completes, or throws while the budget lasts */
        if
        :: atomic { throws < THROWS -> throws++; inBody--; completed = false }
        :: atomic { inBody--; completions++; completed = true }
        fi;
        runner = 0;
#ifdef MUTANT_LOAD_THEN_STORE
        prev = word;
        if :: completed -> word = DONE :: else -> word = NEW fi;
#elif defined(MUTANT_THROW_LEAVES_RUNNING)
        if
        :: completed -> atomic { prev = word; word = DONE }
        :: else -> prev = NEW
        fi;
#else
        atomic { prev = word; if :: completed -> word = DONE :: else -> word = NEW fi };
#endif
        if
        :: prev == SLEEPERS ->
#ifdef MUTANT_NO_WAKE_ON_THROW
            if :: completed -> futex_wake_all(WORD) :: else -> skip fi
#elif defined(MUTANT_WAKE_ONE)
            futex_wake_one(WORD)
#else
            futex_wake_all(WORD)
#endif
        :: else -> skip
        fi;
        prev = 0;
        if
        :: completed -> completed = false; goto returned
        :: else -> goto next /* rethrown to this caller */
        fi;

returned:
        assert(word == DONE && completions == 1);
next:
        s = 0;
        spun = false;
        call++
    od;
    atomic {
        live--;
        if :: live == 0 -> assert(completions == 1 && word == DONE && runner == 0 && inBody == 0) :: else -> skip fi
    }
}
