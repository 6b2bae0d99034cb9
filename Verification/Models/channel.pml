/* BoundedChannel with capacity C > 0: two semaphores (spaces, items), send and receive tickets,
 * a ring of stamped slots whose waiters sleep on the stamp, and close (a CLOSED bit in the send
 * ticket, closedAt, endless units), as BoundedChannel.swift implements it.
 *
 * @mirrors Sources/Interlock/Channels/BoundedChannel.swift: send receive close _store _take _setStamp _awaitSlot
 * @sha256 ae98c6cd650c9e79
 * @config -DC=1 -DS=2 -DR=1
 * @config -DC=1 -DS=1 -DR=2
 * @config -DC=2 -DS=2 -DR=1
 * @config -DC=1 -DS=2 -DR=1 -DTIMED
 * @config -DC=1 -DS=1 -DR=2 -DTIMED
 * @config -DC=1 -DS=2 -DR=1 -DROUNDS=2
 * @config -DC=2 -DS=1 -DR=2 -DROUNDS=2
 * @config -DC=2 -DS=1 -DR=2 -DROUNDS=3
 * @config -DC=2 -DS=2 -DR=1 -DROUNDS=2 -DTIMED
 * @mutant -DC=1 -DS=2 -DR=1 -DMUTANT_NO_WAKE
 * @mutant -DC=1 -DS=1 -DR=2 -DMUTANT_NO_CLOSED_CHECK
 * @mutant -DC=1 -DS=1 -DR=2 -DMUTANT_CLOSE_NO_UNITS
 * @mutant -DC=1 -DS=2 -DR=1 -DMUTANT_TICKET_IGNORES_CLOSED
 * @mutant -DC=2 -DS=1 -DR=2 -DROUNDS=3 -DMUTANT_NO_STAMP_WAIT
 *
 * Processes: S senders (each sends ROUNDS elements of its own, in order), R receivers (each
 * receives until the channel is closed and drained), S + R <= 3 (the futex model's threads),
 * and a closer, which initializes the stamps (slot i: i) in its first step, then closes the
 * channel at any moment (racing the sends) and sleeps on nothing.
 * With TIMED, sender 0 and receiver 0 may give up any semaphore wait (a deadline or a task's
 * cancellation: the semaphore's own model, semaphore.pml, shows that such a wait holds no unit).
 *
 * The semaphores are abstract here: a wait is one atomic step that takes a unit when the count
 * is positive and otherwise blocks (or gives up); a signal adds a unit. Their protocol (FIFO
 * hand-off, task waiters, cancellation) is semaphore.pml's; this model checks what the channel
 * builds on them. Each atomic access of the Swift code is one step; the element's plain store
 * and load are steps too, so that a write over an element not yet taken shows.
 *
 *   send          spaces wait (or give up: not sent); ticket t = tail++ with CLOSED read in the
 *                 same step (CLOSED: spaces signal, refused); await stamp == t; store the
 *                 element; exchange the stamp to t + 1 (wake the slot's sleepers if it had WAIT);
 *                 items signal
 *   receive       items wait (or give up: nothing taken); ticket h = head++; await stamp ==
 *                 h + 1, or h >= closedAt (then items signal, nil); take the element; exchange
 *                 the stamp to h + C (wake); spaces signal
 *   await stamp   load (acquire); not there: load closedAt (receive only); set WAIT (CAS); sleep
 *                 on the stamp's value (FUTEX_WAIT compares it); the spin before is stutter
 *   close         one step: T = tail, CLOSED set (the fetch_or); closedAt = T; spaces and items
 *                 each get UNITS units (the endless supply, large enough for every later call)
 *
 * Checked (assertions, and invalid end states: a process blocked forever):
 *   - never more than C elements buffered; a store never overwrites an element not yet taken;
 *   - the receiver of ticket h takes the element sent with ticket h (FIFO, no loss, no duplicate);
 *   - at the end: every element whose send returned normally was received exactly once; no
 *     refused or given-up send was received; every receiver ended with nil;
 *   - no lost wake-up: every process ends.
 *
 * Mutants (each must fail): MUTANT_NO_WAKE (the stamp is stored without waking its sleepers),
 * MUTANT_NO_CLOSED_CHECK (a receiver whose ticket the close refused waits for its element
 * anyway), MUTANT_CLOSE_NO_UNITS (close gives no units: receivers waiting for items sleep on),
 * MUTANT_TICKET_IGNORES_CLOSED (a send after the close stores its element: nobody receives it),
 * MUTANT_NO_STAMP_WAIT (a sender stores without waiting for the slot's previous element to be
 * taken out: it needs two slots and three sends, so that a space freed by the receiver of one
 * slot lets a sender onto the other while its element is still there).
 *
 * Not modelled, and why that is sound: the memory orders (steps are sequentially consistent;
 * the file comment argues the orderings); the spin before a slot's sleep (a stutter); the
 * semaphores' internals (semaphore.pml); the async forms (their only suspensions are the
 * semaphore waits, modelled as waits that may give up); count and isClosed (snapshots).
 */

#ifndef C
#define C 1
#endif
#ifndef S
#define S 2
#endif
#ifndef R
#define R 1
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#define N (S + R)
#define UNITS 8
#define OPEN 255
#define TICKETS (S * ROUNDS + 1)

byte spaces = C;
byte items = 0;
byte tail = 0;
bool closed = false;
byte head = 0;
byte closedAt = OPEN;
byte stamp[C];
bool waitBit[C];
byte elem[C];
bool occupied[C];          /* ghost: the slot holds an element */
byte inBuffer = 0;     /* ghost: elements stored and not yet taken */
byte ticketValue[TICKETS];  /* ghost: the element sent with each ticket (0: none) */
byte sentMask = 0;     /* ghost: elements whose send returned normally */
byte receivedMask = 0; /* ghost: elements received */
byte live = N + 1;     /* ghost: processes not yet ended */
byte nils = 0;         /* ghost: receivers that ended with nil */

bool ready = false;    /* the stamps are initialized (the closer's first step) */

#include "futex.pml"

/* The slot index of ticket t and its futex id. */
#define SLOT(t) ((t) % C)
#define FUTEX_ID(slot) ((slot) + 1)

inline final_check() {
    assert(sentMask == receivedMask);
    assert(nils == R);
    assert(inBuffer == 0)
}

/* Waits until stamp[slot] == wanted (the WAIT bit is separate here); for a receiver
 * (ticket != OPEN), gives up (gaveUp = true) when the close refused the ticket. */
inline await_stamp(slot, wanted, ticket) {
    gaveUp = false;
    do
    :: cur = stamp[slot];
        if
        :: cur == wanted -> break
        :: else -> skip
        fi;
#ifndef MUTANT_NO_CLOSED_CHECK
        if
        :: ticket != OPEN && ticket >= closedAt -> gaveUp = true; break
        :: else -> skip
        fi;
#endif
        /* the CAS that sets WAIT: fails (and the loop re-reads) when the stamp moved */
        atomic { if :: stamp[slot] == cur -> waitBit[slot] = true; casOk = true :: else -> casOk = false fi };
        if
        :: casOk -> FUTEX_WAIT(FUTEX_ID(slot), stamp[slot], cur)
        :: else -> skip
        fi
    od;
    cur = 0;
    casOk = false
}

/* The stamp's exchange, waking the slot's sleepers when WAIT was set. */
inline set_stamp(slot, value) {
    atomic { hadWait = waitBit[slot]; stamp[slot] = value; waitBit[slot] = false };
#ifndef MUTANT_NO_WAKE
    if :: hadWait -> futex_wake_all(FUTEX_ID(slot)) :: else -> skip fi;
#endif
    hadWait = false
}

active [S] proctype sender() {
    byte id = _pid;
    byte round, t, slot, cur, value;
    bool got, gaveUp, hadWait, refused, casOk;
    ready;
    for (round : 0 .. ROUNDS - 1) {
        value = 1 << (id * ROUNDS + round);  /* distinct bits: masks record each element */
        /* spaces wait */
        if
        :: atomic { spaces > 0 -> spaces--; got = true }
#ifdef TIMED
        :: id == 0 -> got = false /* the deadline or a cancellation */
#endif
        fi;
        if
        :: !got -> goto nextRound
        :: else -> skip
        fi;
        /* the ticket, and CLOSED with it */
        atomic { t = tail; refused = closed; tail++ };
#ifdef MUTANT_TICKET_IGNORES_CLOSED
        refused = false;
#endif
        if
        :: refused -> atomic { spaces++ }; goto nextRound
        :: else -> skip
        fi;
        slot = SLOT(t);
#ifndef MUTANT_NO_STAMP_WAIT
        await_stamp(slot, t, OPEN);
#endif
        atomic { assert(!occupied[slot]); elem[slot] = value; occupied[slot] = true; ticketValue[t] = value; inBuffer++; assert(inBuffer <= C) };
        set_stamp(slot, t + 1);
        atomic { items++; sentMask = sentMask | value };
nextRound:
        got = false;
        refused = false
    }
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}

active [R] proctype receiver() {
    byte id = _pid - S;
    byte h, slot, cur, value;
    bool got, gaveUp, hadWait, casOk;
    ready;
    do
    :: true ->
        /* items wait */
        if
        :: atomic { items > 0 -> items--; got = true }
#ifdef TIMED
        :: id == 0 -> got = false /* gave up: took nothing; try again */
#endif
        fi;
        if
        :: !got -> skip
        :: else ->
            atomic { h = head; head++ };
            slot = SLOT(h);
            await_stamp(slot, h + 1, h);
            if
            :: gaveUp -> atomic { items++; nils++ }; break  /* closed and drained: nil */
            :: else -> skip
            fi;
            atomic {
                assert(occupied[slot]);
                value = elem[slot];
                assert(value == ticketValue[h]);
                assert((receivedMask & value) == 0);
                receivedMask = receivedMask | value;
                occupied[slot] = false;
                inBuffer--
            };
            set_stamp(slot, h + C);
            atomic { spaces++ };
            got = false
        fi
    od;
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}

active proctype closer() {
    byte old, i;
    atomic {
        for (i : 0 .. C - 1) { stamp[i] = i }
        ready = true
    };
    atomic { old = tail; closed = true };
    closedAt = old;
#ifndef MUTANT_CLOSE_NO_UNITS
    atomic { spaces = spaces + UNITS; items = items + UNITS };
#endif
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}
