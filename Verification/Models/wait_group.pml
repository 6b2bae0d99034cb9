/* WaitGroup: a count, WAITING and NOTIFY flags and a futex epoch in one 64-bit word, with the
 * zero processed under listLock, as WaitGroup.swift implements it (the thread side; the task
 * waiters of WaitGroup+Async.swift are not modelled: their list is empty here).
 *
 * @mirrors Sources/Interlock/Waiting/WaitGroup.swift: _isPending enter leave wait notify _leaveSlow _processZero _awaitProcessedZero _waitUntimed _waitSlow
 * @sha256 901ed0bbaec1d2d0
 * @config -DN=2
 * @config -DN=2 -DCYCLES=3
 * @config -DN=3
 * @config -DN=3 -DTIMED
 * @config -DN=3 -DCYCLES=3
 * @config -DN=3 -DTIMED -DCYCLES=3
 * @mutant -DN=2 -DMUTANT_NO_EPOCH
 * @mutant -DN=2 -DMUTANT_NO_WAKE
 * @mutant -DN=3 -DMUTANT_ENTER_IGNORES_PENDING
 * @mutant -DN=3 -DMUTANT_FRESH_EPOCH
 * @mutant -DN=2 -DMUTANT_NOTIFY_NO_FLAG
 *
 * The word: st = count (bits 0-2) | WAITING (8) | NOTIFY (16) | epoch << 5. The epoch is the
 * code's high half, a small counter here (it moves at most once per cycle, CYCLES <= 6: it never
 * wraps, and an assertion says so); the futex word that waiters sleep on is EPOCH(st).
 *
 * The scenario, over CYCLES cycles of the same group (reused after each zero):
 *   thread 0 (main)    per cycle: enter(); hands the task to the worker; notify(body); wait()
 *   thread 1 (worker)  per cycle: takes a task; enter() (a subtask); leave() twice (the subtask
 *                      and the task end)
 *   thread 2 (N = 3)   per cycle: wait() (with TIMED: wait(before:), which may time out)
 * so that a leave's zero races with the main thread's next enter, its notify and its wait, and
 * with the other waiter's sleep: the old bug (a wait of the next cycle returning at the zero of
 * the previous one) needs thread 2 asleep, the zero, and thread 0's next enter and wait before
 * the zero is processed; with notify's NOTIFY flag the same race exists with two threads.
 *
 * Each atomic step of the code is one step here:
 *   enter      relaxed load; while PENDING, _awaitProcessedZero (its loads that still see
 *              PENDING change nothing: the loop is the one load that sees the zero processed,
 *              a step enabled only then); CAS st -> st + 1 (fails: re-read, loop)
 *   leave      fetch_sub(1); count was 1 with a flag: _leaveSlow -> _processZero
 *   _processZero  listLock; seq_cst load; CAS clearing WAITING and NOTIFY and, when WAITING was
 *              set, adding one to the epoch; take the list (if NOTIFY) and unlock; wake all
 *              sleepers of the epoch (if WAITING); run the bodies taken
 *   wait       acquire load (count 0: return); TIMED: the deadline may have passed (return
 *              false); _waitSlow: seq_cst load; while WAITING is clear: count 0 returns, else
 *              CAS in WAITING (fails: re-read); count 0 (a PENDING zero) returns; then loop:
 *              FUTEX_WAIT(epoch, observed) (timed: it may time out while asleep, or at once
 *              when the deadline has passed, without comparing), seq_cst load: a new epoch
 *              returns true, else a time-out returns false, else sleep again
 *   notify     listLock; seq_cst load; while NOTIFY is clear: count 0: unlock and run the body
 *              at once, else CAS in NOTIFY (fails: re-read); append the body; unlock
 * listLock (a _MutexWord, model-checked in mutex_word.pml) is a bit taken by an atomic test-and-
 * set and cleared by a store; the list (a bit per registered body) is touched only under it, so
 * its plain operations are folded into the step next to them, and every access to the state
 * word inside a critical section stays a step of its own, with the lock visibly held.
 * A body's run is one step: it touches only ghost variables.
 *
 * Ghost variables: `zeroSeen[p]` is set while thread p is inside wait() whenever the count is 0
 * (the leave that makes it 0, or p's own load that reads 0); `zeroSince[b]` the same for body b
 * from the start of its notify (its lock) until it runs.
 *
 * Checked (assertions, and spin's invalid end states: a thread asleep forever is a lost wake-up,
 * an enter waiting forever for a zero to be processed is a deadlock):
 *   - no early return: wait() returns true only when the count was 0 at some instant during the
 *     call;
 *   - notify: every body runs exactly once, and only when the count was 0 at some instant since
 *     its registration began; a non-empty list implies NOTIFY whenever listLock is taken;
 *   - at the end: count 0, no flag left, list empty, every body run;
 *   - the epoch never wraps in the model; no leave finds a count of 0 (no misuse).
 *
 * Mutants (each must fail): MUTANT_NO_EPOCH (_processZero clears the flags without advancing the
 * epoch: the sleepers' futex wait is woken but they read the old epoch and sleep again, or they
 * sleep after the wake), MUTANT_NO_WAKE (no wake-all after the epoch moved), MUTANT_ENTER_IGNORES_
 * PENDING (enter adds to a PENDING zero: the old bug's shape; the search first finds a body of
 * the new cycle run at the old zero, and, without the body check, a wait of the new cycle that
 * returns at the old zero), MUTANT_FRESH_EPOCH (the waiter sleeps on the epoch it re-reads after its WAITING
 * CAS instead of the one the CAS saw: it can sleep on the new epoch after its zero was
 * processed), MUTANT_NOTIFY_NO_FLAG (notify appends its body without setting NOTIFY: no leave
 * takes the list).
 *
 * Not modelled, and why that is sound: the memory orders (every step here is sequentially
 * consistent; the file comment argues the orderings); the tasks suspended in wait() async
 * (WaitGroup+Async.swift: the list of task waiters is empty here, and _processZero takes it with
 * the bodies, under the same lock and flag); enter(n) with n > 1 and the misuse and overflow
 * traps (a leave never finds a count of 0 here, asserted); _zeroProcessingHook (tests only); the
 * pauses and yields of _awaitProcessedZero (timing); the epoch's 32-bit wrap (accepted in the
 * file comment: 2^32 zeros during one sleep).
 */

#ifndef N
#define N 3
#endif
#ifndef CYCLES
#define CYCLES 2
#endif
#define MAXREG CYCLES /* thread 0 registers one body per cycle */

#define CNT(s) ((s) & 7)
#define WAITING 8
#define NOTIFYF 16
#define FLAGS 24
#define NOFLAGS 231 /* ~FLAGS in a byte */
#define EPOCHU 32
#define EPOCH(s) ((s) >> 5)
#define PENDING(s) (CNT(s) == 0 && ((s) & FLAGS) != 0)
#define EPOCHID 1

byte st;
bit listLock;
byte listed;            /* _bodies: bit b set while body b is listed */
byte tokens;            /* tasks entered by thread 0 and not yet taken by the worker */
bool inWait[N];         /* ghost */
bool zeroSeen[N];       /* ghost */
bool regOpen[MAXREG];   /* ghost: body b's notify has begun and b has not run */
bool zeroSince[MAXREG]; /* ghost */
byte ran[MAXREG];       /* ghost: runs of body b */
byte live = N;

#include "futex.pml"

/* The count has just become 0 (a leave's decrement). */
inline mark_zero() {
    i = 0;
    do
    :: i < N -> if :: inWait[i] -> zeroSeen[i] = true :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < MAXREG -> if :: regOpen[i] -> zeroSince[i] = true :: else -> skip fi; i++
    :: else -> break
    od;
    i = 0
}

inline run_body(b) {
    assert(ran[b] == 0 && zeroSince[b]);
    ran[b] = 1;
    regOpen[b] = false;
    zeroSince[b] = false
}

inline final_check() {
    assert(st == EPOCH(st) * EPOCHU && listed == 0 && listLock == 0);
    i = 0;
    do
    :: i < MAXREG -> assert(ran[i] == 1); i++
    :: else -> break
    od
}

inline enter() {
    s = st;
    do
#ifndef MUTANT_ENTER_IGNORES_PENDING
    :: PENDING(s) -> atomic { !PENDING(st) -> s = st } /* _awaitProcessedZero */
    :: !PENDING(s) ->
#else
    :: true ->
#endif
        atomic {
            if
            :: st == s -> st = s + 1; ok = true
            :: else -> s = st; ok = false
            fi
        };
        if :: ok -> break :: else -> skip fi
    od;
    s = 0;
    ok = false
}

inline process_zero() {
    atomic { listLock == 0 -> listLock = 1; assert(listed == 0 || (st & NOTIFYF) != 0) };
    s = st;
    do
    :: atomic {
           nw = s & NOFLAGS;
#ifndef MUTANT_NO_EPOCH
           if :: (s & WAITING) != 0 -> assert(EPOCH(s) < 7); nw = nw + EPOCHU :: else -> skip fi;
#endif
           if
           :: st == s -> st = nw; ok = true
           :: else -> s = st; ok = false
           fi
       };
       if :: ok -> break :: else -> skip fi
    od;
    atomic {
        if :: (s & NOTIFYF) != 0 -> taken = listed; listed = 0 :: else -> taken = 0 fi;
        listLock = 0;
        nw = 0;
        ok = false
    };
    if
#ifndef MUTANT_NO_WAKE
    :: (s & WAITING) != 0 -> futex_wake_all(EPOCHID)
#endif
    :: else -> skip
    fi;
    if
    :: taken != 0 ->
        atomic {
            i = 0;
            do
            :: i < MAXREG -> if :: (taken & (1 << i)) != 0 -> run_body(i) :: else -> skip fi; i++
            :: else -> break
            od;
            i = 0;
            taken = 0
        }
    :: else -> skip
    fi
}

inline leave() {
    atomic {
        s = st;
        st = st - 1;
        if :: CNT(st) == 0 -> mark_zero() :: else -> skip fi
    };
    if
    :: CNT(s) > 1 || (CNT(s) == 1 && (s & FLAGS) == 0) -> skip
    :: else ->
        assert(CNT(s) != 0); /* _leaveSlow's misuse: never here */
        process_zero()
    fi;
    s = 0
}

active [N] proctype thread() {
    byte cycle, s, nw, observed, taken, i;
    bool ok, timed, timedOut;
    do
    :: cycle == CYCLES -> break
    :: else ->
        if
        :: _pid == 0 ->
            enter();
            tokens++;
            /* notify(body number `cycle`) */
            atomic { listLock == 0 -> listLock = 1; regOpen[cycle] = true; assert(listed == 0 || (st & NOTIFYF) != 0) };
            atomic { s = st; if :: CNT(s) == 0 -> zeroSince[cycle] = true :: else -> skip fi };
            do
            :: (s & NOTIFYF) != 0 -> break
            :: else ->
                if
                :: CNT(s) == 0 ->
                    listLock = 0;
                    atomic { run_body(cycle); s = 0 };
                    goto notified
                :: else ->
#ifdef MUTANT_NOTIFY_NO_FLAG
                    break
#else
                    atomic {
                        if
                        :: st == s -> st = s | NOTIFYF; ok = true
                        :: else -> s = st; ok = false; if :: CNT(s) == 0 -> zeroSince[cycle] = true :: else -> skip fi
                        fi
                    };
                    if :: ok -> break :: else -> skip fi
#endif
                fi
            od;
            atomic { listed = listed | (1 << cycle); listLock = 0; s = 0; ok = false };
notified:
            goto doWait
        :: _pid == 1 ->
            atomic { tokens > 0 -> tokens-- };
            enter(); /* a subtask of the task */
            leave(); /* the subtask's end */
            leave(); /* the task's end */
            goto next
        :: _pid == 2 ->
#ifdef TIMED
            timed = true;
#endif
            goto doWait
        fi;

doWait:
        /* wait(), or wait(before:) when timed */
        atomic { s = st; inWait[_pid] = true; zeroSeen[_pid] = (CNT(s) == 0) };
        if :: CNT(s) == 0 -> goto waited :: else -> skip fi;
        if
        :: timed -> goto timedOutReturn /* the deadline has passed already */
        :: true -> skip
        fi;
        /* _waitSlow */
        atomic { s = st; if :: CNT(s) == 0 -> zeroSeen[_pid] = true :: else -> skip fi };
        do
        :: (s & WAITING) != 0 -> break
        :: else ->
            if :: CNT(s) == 0 -> goto waited :: else -> skip fi;
            atomic {
                if
                :: st == s -> st = s | WAITING; ok = true
                :: else -> s = st; ok = false; if :: CNT(s) == 0 -> zeroSeen[_pid] = true :: else -> skip fi
                fi
            };
            if :: ok -> ok = false; break :: else -> skip fi
        od;
        if :: CNT(s) == 0 -> goto waited :: else -> skip fi;
#ifdef MUTANT_FRESH_EPOCH
        observed = EPOCH(st);
#else
        observed = EPOCH(s);
#endif
        s = 0;
        do
        :: timed ->
            if
            :: FUTEX_WAIT_TIMED(EPOCHID, EPOCH(st), observed)
            :: timedOut = true /* the deadline had passed: no system call */
            fi;
            if :: EPOCH(st) != observed -> timedOut = false; goto waited :: else -> skip fi;
            if :: timedOut -> timedOut = false; goto timedOutReturn :: else -> skip fi
        :: else ->
            FUTEX_WAIT(EPOCHID, EPOCH(st), observed);
            if :: EPOCH(st) != observed -> goto waited :: else -> skip fi
        od;
waited:
        atomic { assert(zeroSeen[_pid]); inWait[_pid] = false; zeroSeen[_pid] = false; s = 0; observed = 0 };
        goto next;
timedOutReturn:
        atomic { inWait[_pid] = false; zeroSeen[_pid] = false; s = 0; observed = 0 };
next:
        cycle++
    od;
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}
