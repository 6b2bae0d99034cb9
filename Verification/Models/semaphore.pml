/* Semaphore: Dispatch's counter with a FIFO hand-off of units to sleeping waiters, as
 * Semaphore.swift, HandOffWait.swift and (ASYNC) Semaphore+Async.swift implement it.
 *
 * @mirrors Sources/Interlock/Waiting/Semaphore.swift: wait tryWait signal _handOff _waitUntimed _waitSlow _withdraw _unlink _unlinkQueued
 * @mirrors Sources/Interlock/Locks/HandOffWait.swift: await
 * @mirrors Sources/Interlock/Waiting/Semaphore+Async.swift: wait _waitAsync _enqueue _queue _abandon _grant
 * @mirrors Sources/Interlock/Waiting/TaskWait.swift: suspend
 * @sha256 0b4f23d61ab8229c
 * @config -DN=2
 * @config -DN=3
 * @config -DN=3 -DVALUE=2
 * @config -DN=2 -DTIMED
 * @config -DN=3 -DTIMED
 * @config -DN=2 -DASYNC
 * @config -DN=3 -DASYNC
 * @config -DN=3 -DTIMED=2
 * @config -DN=3 -DROUNDS=3
 * @config -DN=3 -DASYNC -DTIMED
 * @config -DN=2 -DASYNC -DTIMED -DROUNDS=3
 * @config -DN=2 -DASYNC=2
 * @config -DN=3 -DASYNC=2
 * @config -DN=3 -DASYNC=2 -DTIMED
 * @mutant -DN=2 -DMUTANT_NO_WAKE
 * @mutant -DN=2 -DMUTANT_NO_ANNOUNCE
 * @mutant -DN=2 -DMUTANT_NO_PENDING
 * @mutant -DN=2 -DTIMED -DMUTANT_WITHDRAW_ANY
 * @mutant -DN=2 -DTIMED -DMUTANT_NO_RECHECK
 * @mutant -DN=3 -DASYNC -DMUTANT_GHOST_KEEPS_UNIT
 * @mutant -DN=3 -DASYNC -DMUTANT_NO_PASS_ON
 *
 * N threads (at most 3) each take a unit and give it back ROUNDS times; the semaphore starts
 * with VALUE units. With TIMED, thread 0 waits with a deadline (wait(before:)), with TIMED=2
 * threads 0 and 1; with ASYNC, thread N-1 is a task (wait() async) that may be cancelled at any
 * moment, with ASYNC=2 threads N-2 and N-1.
 *
 * Each atomic step of the code is one step here:
 *   wait / signal fast paths  count.fetch_sub(1) / count.fetch_add(1): one step each
 *   tryWait (TIMED: the       load of count, then CAS c -> c-1 while c > 0, one step each
 *   deadline already passed)
 *   _waitSlow's queueing      listLock held: take a `pending` unit, or set the record word to 0,
 *                             append the record, read `queued` for the spin decision; released
 *   _HandOff.await            the spin (when `spinning`): acquire loads of the record word, of
 *                             which one suffices (below); the announcement CAS 0 -> 2; then
 *                             loop: load the word (1: granted), else FUTEX_WAIT(word, 2) (timed
 *                             for a deadline: it may time out while asleep, or at once when the
 *                             deadline has already passed, without comparing the word)
 *   timed-out waiter          listLock; relaxed load of the word (1: granted meanwhile);
 *                             _withdraw: load of count, then CAS c -> c+1 while c < 0, one step
 *                             each; withdrawn: unlink (the list walk) and unlock, return false;
 *                             else unlock and await again without deadline nor spin
 *   _handOff                  listLock; head empty: pending += 1, unlock; else unlink the head;
 *                             exchange(word, 1) (one step), unlock, futex_wake_one if it read 2
 *   task (ASYNC)              the fetch_sub; _enqueue under listLock (new: take `pending` or
 *                             queue the record with the continuation; abandoned: _withdraw, else
 *                             take `pending` and pass it on by a signal, else queue as a ghost);
 *                             _abandon under listLock (new -> abandoned; queued -> _withdraw and
 *                             unlink, else ghost; then resume); _grant (queued -> resumed with
 *                             the unit; ghost -> resumed, the granting thread passes the unit on
 *                             with a fetch_add of its own, and hands again if that found < 0)
 *
 * listLock (a _MutexWord, model-checked in mutex_word.pml) is a bit taken by an atomic test-and-
 * set and cleared by a store. Inside a critical section, the plain fields (the list, `pending`,
 * `queued`, a task's state) are touched by no other thread, so they are folded into the step
 * next to them; every access to an atomic that other threads touch outside the lock (count, a
 * record word) stays a step of its own, with the lock visibly held. A section that touches no
 * such atomic (the queueing, the hand-off to an empty list) is one step from acquire to release:
 * nobody can observe its inside (Lipton's reduction: an acquire moves right, a release left).
 *
 * The task (ASYNC): a suspended task has no steps of its own, so the abandon, which runs on
 * another thread (the cancellation handler or the deadline's timer), is taken by the task's
 * process while it waits, at any moment from its decrement until it is resumed (before the
 * enqueue: new -> abandoned; after: the queued case); one abandon per wait (a second one finds
 * abandoned, ghost or resumed and does nothing). The continuation is a flag (`tres`) with the
 * outcome (`tserved`): the code stores the outcome in the waiter's word just before resuming,
 * and the task reads it only after, so the two are one step here (TaskWait.swift). Each wait of a task has a waiter object of its own (a record id >= N):
 * a ghost of an earlier wait can still be queued while the task waits again. The signal() by
 * which _enqueue passes on a `pending` unit runs on the enqueuing thread while the resumed task
 * goes on: a process of its own (passOnSignal). The cancellation outcome and the deadline's are
 * the same here (the task holds no unit and does not signal).
 *
 * The spin: its loads are stutter steps, except the one that reads 1, so a spin of any length
 * behaves as one load at any instant of the window (the scheduler chooses when), or as none that
 * reads 1. The spin window, its learning, and `spinning` beyond its effect on whether the spin
 * happens are timing only.
 *
 * A record lives on its waiter's stack for the length of one _waitSlow: its word is rw[p] and
 * its futex id p + 1 in every wait of thread p, as the same stack address would be; so a late
 * futex_wake_one of an earlier grant can wake the thread's next wait (a spurious wake-up that the
 * waiter's loop absorbs), as it can in the code.
 *
 * Checked (assertions, and spin's invalid end states: a thread asleep forever is a lost wake-up):
 *   - the bound: never more holders than VALUE units;
 *   - units conserved: when every process has ended, count == VALUE, pending == 0, no record
 *     is queued (no ghost left behind), listLock free;
 *   - the precondition of _unlinkQueued (a withdrawing waiter's record is queued), and a task's
 *     state machine (no grant of a record that is neither queued nor a ghost);
 *   - no lost wake-up, no deadlock: every process ends.
 *
 * Mutants (each must fail): MUTANT_NO_WAKE (the hand-off reads 2 and does not wake),
 * MUTANT_NO_ANNOUNCE (the waiter sleeps on 0 without the CAS 0 -> 2: the exchange reads 0 and
 * does not wake), MUTANT_NO_PENDING (the hand-off to an empty list drops the unit instead of
 * adding it to `pending`), MUTANT_WITHDRAW_ANY (the timed-out waiter takes its decrement back even
 * when the count is not negative, so a signal in flight for it makes a unit), MUTANT_NO_RECHECK
 * (the timed-out waiter withdraws without first reading its word for a grant that came
 * meanwhile: the grant has unlinked the record already, and _unlinkQueued's precondition
 * fails), MUTANT_GHOST_KEEPS_UNIT (a grant that reaches a ghost does not pass the unit on: the
 * waiter next in line sleeps forever), MUTANT_NO_PASS_ON (_enqueue of an abandoned task takes a
 * `pending` unit and does not signal it on).
 *
 * Not modelled, and why that is sound: the memory orders (every step here is sequentially
 * consistent; the model checks the protocol's interleavings, the file comments argue the
 * orderings); the spin window and its learning (timing); _handOffHook (tests only); the task's
 * wait(before:) with a deadline already passed (a tryWait, which the timed thread exercises);
 * withPermit (wait, body, signal); a second abandon of one wait (a no-op in every state but new,
 * and new -> abandoned happens once); the list's retain of a task's object (memory management).
 */

#ifndef N
#define N 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef VALUE
#define VALUE 1
#endif
#define SPIN_MAX_WAITERS 2 /* _conditionSpinMaxWaiters */
#define NONE 255

#ifdef ASYNC
#define TASK0 (N - ASYNC)           /* the tasks' processes: TASK0 .. N-1 */
#define NTREC (ASYNC * ROUNDS)     /* the tasks' waiter objects, one per wait */
#define NREC (N + NTREC)           /* records: the threads' 0..N-1, the tasks' N.. */
#else
#define NREC N
#endif

/* a task waiter's state */
#define T_NEW 0
#define T_ABANDONED 1
#define T_QUEUED 2
#define T_GHOST 3
#define T_RESUMED 4

short count = VALUE;
bit listLock;
byte pending;
byte q[NREC];   /* the FIFO list: record ids + 1, head first; 0 past the tail */
byte qlen;      /* `queued` */
byte rw[N];     /* thread p's record word: 0 waiting, 2 asleep, 1 granted */
byte holders;   /* ghost: threads and tasks holding a unit */
byte live = N;  /* ghost: processes not yet ended */
#ifdef ASYNC
byte tstate[NTREC];  /* waiter object (task t, wait r) = record N + t * ROUNDS + r */
bool tres[NTREC];    /* its continuation was resumed */
bool tserved[NTREC]; /* ... with a unit */
#endif

#include "futex.pml"

inline final_check() {
    assert(count == VALUE && pending == 0 && qlen == 0 && holders == 0 && listLock == 0)
}

inline q_push(r) {
    q[qlen] = r + 1;
    qlen++
}

/* _unlink(head, after: nil) */
inline q_pop_head(r) {
    r = q[0] - 1;
    i = 0;
    do
    :: i + 1 < qlen -> q[i] = q[i + 1]; i++
    :: else -> break
    od;
    qlen--;
    q[qlen] = 0;
    i = 0
}

/* _unlinkQueued(record) */
inline q_remove(r) {
    i = 0;
    do
    :: i < qlen && q[i] != r + 1 -> i++
    :: else -> break
    od;
    assert(i < qlen); /* precondition: a withdrawing waiter's record is queued */
    do
    :: i + 1 < qlen -> q[i] = q[i + 1]; i++
    :: else -> break
    od;
    qlen--;
    q[qlen] = 0;
    i = 0
}

/* _withdraw(), under listLock: CAS count c -> c + 1 while c < 0. Sets `withdrew`. */
inline withdraw() {
    cur = count;
    withdrew = false;
    do
#ifdef MUTANT_WITHDRAW_ANY
    :: true ->
#else
    :: cur < 0 ->
#endif
        atomic {
            if
            :: count == cur -> count = cur + 1; withdrew = true
            :: else -> cur = count
            fi
        };
        if :: withdrew -> break :: else -> skip fi
    :: else -> break
    od;
    cur = 0
}

/* signal(): the fetch_add, then _handOff when it found a committed waiter */
inline do_signal() {
    atomic { old = count; count++ };
    if
    :: old >= 0 -> skip
    :: else ->
        do
        :: atomic {
               listLock == 0 -> listLock = 1;
               if
               :: qlen == 0 ->
#ifndef MUTANT_NO_PENDING
                   pending++;
#endif
                   listLock = 0;
                   first = NONE
               :: else -> q_pop_head(first)
               fi
           };
           if
           :: first == NONE -> break
#ifdef ASYNC
           :: first != NONE && first >= N ->
               /* a task's record: _grant (releases listLock) */
               atomic {
                   if
                   :: tstate[first - N] == T_QUEUED -> tstate[first - N] = T_RESUMED; granted = true
                   :: tstate[first - N] == T_GHOST -> tstate[first - N] = T_RESUMED; granted = false
                   :: else -> assert(false) /* granted twice */
                   fi;
                   listLock = 0
               };
               if
               :: granted -> atomic { tserved[first - N] = true; tres[first - N] = true }; break
               :: else ->
#ifdef MUTANT_GHOST_KEEPS_UNIT
                   break
#else
                   /* pass the unit on: a signal of this thread's own */
                   atomic { old = count; count++ };
                   if :: old >= 0 -> break :: else -> skip fi
#endif
               fi
#endif
           :: first < N ->
               atomic { asleep = (rw[first] == 2); rw[first] = 1 };
               listLock = 0;
               if
#ifndef MUTANT_NO_WAKE
               :: asleep -> futex_wake_one(first + 1)
#endif
               :: else -> skip
               fi;
               break
           fi
        od
    fi;
    old = 0;
    first = 0;
    asleep = false;
    granted = false
}

#ifdef ASYNC
/* The task is done with its waiter object `r` (resumed): the model forgets what nobody reads
 * again (a resumed object's state, the continuation's flags), so that equal futures make equal
 * states. A ghost stays as it is: the list still holds it. */
inline forget(r) {
    if :: tstate[r] == T_RESUMED -> tstate[r] = T_NEW :: else -> skip fi;
    tres[r] = false;
    tserved[r] = false;
    r = 0
}

/* The signal() by which _enqueue passes on a `pending` unit taken for an abandoned task: it runs
 * on the enqueuing thread, concurrently with the resumed task. */
proctype passOnSignal() {
    short old;
    byte first, i;
    bool asleep, granted;
    do_signal();
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}
#endif

active [N] proctype thread() {
    byte round, first, i, rec;
    short old, cur;
    bool asleep, granted, got, spinning, deadline, timedOut, withdrew, abandoned, passOn;
    do
    :: round == ROUNDS -> break
    :: else ->
#ifdef ASYNC
        if :: _pid >= TASK0 -> goto taskWait :: else -> skip fi;
#endif
        deadline = false;
#ifdef TIMED
        if
        :: _pid < TIMED ->
            deadline = true;
            if
            :: /* the deadline has passed already: tryWait() */
                cur = count;
                do
                :: cur > 0 ->
                    atomic {
                        if
                        :: count == cur -> count = cur - 1; got = true
                        :: else -> cur = count; got = false
                        fi
                    };
                    if :: got -> cur = 0; got = false; goto holding :: else -> skip fi
                :: else -> cur = 0; goto next /* false: no unit */
                od
            :: skip
            fi
        :: else -> skip
        fi;
#endif
        atomic { old = count; count-- };
        if :: old > 0 -> old = 0; goto holding :: else -> old = 0 fi;

        /* _waitSlow(deadline): take a pending unit, or queue the record */
        atomic {
            listLock == 0 -> listLock = 1;
            rw[_pid] = 0;
            if
            :: pending > 0 -> pending--; got = true
            :: else -> q_push(_pid); spinning = (qlen <= SPIN_MAX_WAITERS); got = false
            fi;
            listLock = 0
        };
        if :: got -> got = false; goto holding :: else -> skip fi;
await:
        /* _HandOff.await(word, spinning, deadline) */
        if
        :: spinning ->
            if
            :: rw[_pid] == 1 -> spinning = false; goto holding /* the spin saw the grant */
            :: true -> skip /* the window ran out */
            fi
        :: else -> skip
        fi;
        spinning = false;
#ifndef MUTANT_NO_ANNOUNCE
        atomic { if :: rw[_pid] == 0 -> rw[_pid] = 2 :: else -> skip fi };
#endif
        timedOut = false;
        do
        :: rw[_pid] == 1 -> break
        :: else ->
            if
            :: deadline ->
                if
                :: FUTEX_WAIT_TIMED(_pid + 1, rw[_pid], 2)
                :: timedOut = true /* the deadline had passed: no system call */
                fi;
                if :: timedOut -> break :: else -> skip fi
            :: else ->
#ifdef MUTANT_NO_ANNOUNCE
                FUTEX_WAIT(_pid + 1, rw[_pid], 0)
#else
                FUTEX_WAIT(_pid + 1, rw[_pid], 2)
#endif
            fi
        od;
        if :: !timedOut -> goto holding :: else -> timedOut = false fi;

        /* the deadline passed: granted meanwhile, withdraw, or wait for the grant in flight */
        atomic { listLock == 0 -> listLock = 1 };
#ifdef MUTANT_NO_RECHECK
        withdraw();
#else
        if
        :: rw[_pid] != 1 -> withdraw()
        :: else -> withdrew = false
        fi;
#endif
        if
        :: withdrew ->
            atomic { q_remove(_pid); listLock = 0; withdrew = false; deadline = false };
            goto next /* false: no unit */
        :: else ->
            listLock = 0;
            deadline = false;
            goto await
        fi;

#ifdef ASYNC
taskWait:
        /* wait() async */
        atomic { old = count; count-- };
        if :: old > 0 -> old = 0; goto holding :: else -> old = 0 fi;
        rec = (_pid - TASK0) * ROUNDS + round; /* _waitAsync: a new waiter object */
        /* an abandon may come before the enqueue */
        if
        :: atomic { listLock == 0 -> listLock = 1; abandoned = true; tstate[rec] = T_ABANDONED; listLock = 0 }
        :: skip
        fi;
        /* _enqueue, on the task's thread before it suspends */
        atomic { listLock == 0 -> listLock = 1 };
        if
        :: tstate[rec] == T_NEW ->
            atomic {
                if
                :: pending > 0 -> pending--; tstate[rec] = T_RESUMED; got = true
                :: else -> tstate[rec] = T_QUEUED; q_push(N + rec); got = false
                fi;
                listLock = 0
            };
            if :: got -> atomic { got = false; forget(rec) }; goto holding :: else -> skip fi /* resumed, served */
        :: tstate[rec] == T_ABANDONED ->
            withdraw();
            atomic {
                if
                :: withdrew -> tstate[rec] = T_RESUMED
                :: !withdrew && pending > 0 -> pending--; tstate[rec] = T_RESUMED; passOn = true
                :: !withdrew && pending == 0 -> tstate[rec] = T_GHOST; q_push(N + rec)
                fi;
                listLock = 0;
                withdrew = false
            };
            /* resumed with the abandon's outcome; then signal() on this thread if passOn */
            if
            :: passOn ->
#ifdef MUTANT_NO_PASS_ON
                passOn = false
#else
                atomic { passOn = false; live++; run passOnSignal() }
#endif
            :: else -> skip
            fi;
            atomic { abandoned = false; forget(rec) };
            goto next
        :: else -> assert(false) /* enqueued twice */
        fi;
        /* suspended until resumed; an abandon may come meanwhile (once) */
        do
        :: tres[rec] -> break
        :: atomic { !abandoned && listLock == 0 -> abandoned = true; listLock = 1 };
            if
            :: tstate[rec] == T_QUEUED ->
                withdraw();
                atomic {
                    if
                    :: withdrew -> q_remove(N + rec); tstate[rec] = T_RESUMED
                    :: else -> tstate[rec] = T_GHOST
                    fi;
                    listLock = 0;
                    withdrew = false
                };
                tres[rec] = true /* _TaskWait.resume(continuation, with: outcome, ...) */
            :: else -> listLock = 0 /* granted first: its resume is on its way */
            fi
        od;
        abandoned = false;
        if
        :: tserved[rec] -> atomic { forget(rec) }; goto holding
        :: else -> atomic { forget(rec) }; goto next /* cancelled or timed out: no unit */
        fi;
#endif

holding:
        atomic { holders++; assert(holders <= VALUE) };
        holders--;
        do_signal();
next:
        round++
    od;
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}
