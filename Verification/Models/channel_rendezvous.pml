/* BoundedChannel with capacity 0, a rendezvous: one slot and its word (EMPTY, FULL, CLAIMED,
 * TAKEN, and a CLOSED bit), three semaphores (spaces: the slot; items: announcements; acks: a
 * receiver took the element), retraction by the sender that gives up, and close, as
 * ChannelRendezvous.swift implements it.
 *
 * @mirrors Sources/Interlock/Channels/ChannelRendezvous.swift: _rendezvousSendUntimed _rendezvousReceiveUntimed _rendezvousSend _rendezvousPut
 * @mirrors Sources/Interlock/Channels/ChannelRendezvous.swift: _rendezvousSettle _rendezvousRelease _rendezvousReceive _rendezvousClaim _rendezvousClose
 * @sha256 636bc7c6009106e8
 * @config -DS=1 -DR=1
 * @config -DS=2 -DR=1
 * @config -DS=1 -DR=2
 * @config -DS=2 -DR=1 -DTIMED
 * @config -DS=1 -DR=2 -DTIMED
 * @config -DS=1 -DR=1 -DTIMED -DROUNDS=2
 * @config -DS=2 -DR=1 -DTIMED -DROUNDS=2
 * @config -DS=1 -DR=2 -DTIMED -DROUNDS=2
 * @mutant -DS=1 -DR=1 -DTIMED -DMUTANT_RETRACT_BY_STORE
 * @mutant -DS=1 -DR=1 -DMUTANT_CLAIM_IGNORES_CLOSED
 * @mutant -DS=2 -DR=1 -DTIMED -DMUTANT_RELEASE_BEFORE_ACK
 * @mutant -DS=1 -DR=1 -DMUTANT_CLOSE_NO_ACK_UNITS
 * @mutant -DS=2 -DR=1 -DMUTANT_TAKEN_BY_STORE
 *
 * Processes: S senders (each sends ROUNDS elements of its own), R receivers (each receives
 * until it gets nil), S + R <= 3, and a closer that closes at any moment. With TIMED, sender 0
 * may give up its waits (for the slot, and for the acknowledgement: a deadline or a task's
 * cancellation) and receiver 0 its wait for an announcement. The semaphores are abstract, as in
 * channel.pml (semaphore.pml checks them); every access of the slot word is one step.
 *
 *   send      spaces wait (or give up: not sent); CLOSED seen: spaces signal, refused; store the
 *             element; CAS EMPTY -> FULL (fails only on CLOSED: take the element back, spaces
 *             signal, refused); items signal; acks wait (or give up); settle
 *   settle    load the word: TAKEN: if it gave up the ack wait, wait for the ack now; then
 *             release (fetch_and to EMPTY keeping CLOSED, spaces signal): sent. FULL: (an ack
 *             with FULL and no CLOSED is an internal error: assert) CAS back to EMPTY keeping
 *             CLOSED: the element is taken back, spaces signal: not sent (CLOSED: refused);
 *             the CAS fails: load again. CLAIMED: wait for TAKEN.
 *   receive   items wait (or give up: nothing taken, wait again); CAS FULL -> CLAIMED: take the
 *             element, fetch_or to TAKEN, acks signal; the word had CLOSED: items signal, nil;
 *             otherwise the unit was stale: wait again
 *   close     fetch_or CLOSED (first time only); UNITS units to spaces, items and acks
 *
 * Checked (assertions, and invalid end states):
 *   - a send returns normally only once its element was received, and then it was received
 *     exactly once; an element taken back (timed out, cancelled, refused) is never received;
 *   - an element still waiting in the slot when the close came is never delivered;
 *   - every receiver ends with nil; no process is left blocked (no lost wake-up).
 *
 * Mutants (each must fail): MUTANT_RETRACT_BY_STORE (the retraction stores EMPTY instead of its
 * CAS: a receiver's claim is overwritten, the element is delivered and also taken back),
 * MUTANT_CLAIM_IGNORES_CLOSED (a claim takes an element that the close caught in the slot),
 * MUTANT_RELEASE_BEFORE_ACK (a sender that gave up waiting gives the slot back before it takes
 * its receiver's ack: the next sender's ack goes to it), MUTANT_CLOSE_NO_ACK_UNITS (the close
 * gives acks no units: a sender waiting for an ack at the close sleeps on), MUTANT_TAKEN_BY_STORE
 * (the receiver stores TAKEN, erasing a CLOSED set meanwhile).
 *
 * Not modelled: the memory orders (steps are sequentially consistent), the settle's spin (a
 * blocking guard here), trySend (its own loop over the same steps: a tryWait of acks or items),
 * the semaphores' internals (semaphore.pml), count and isClosed (snapshots).
 */

#ifndef S
#define S 1
#endif
#ifndef R
#define R 1
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#define N (S + R)
#define UNITS 8

#define EMPTY 0
#define FULL 1
#define CLAIMED 2
#define TAKEN 3
#define STATE 3
#define CLOSED 4

byte spaces = 1;
byte items = 0;
byte acks = 0;
byte slot = EMPTY;
byte elem = 0;           /* the element in the slot (0: none) */
byte sentMask = 0;       /* ghost: elements whose send returned normally */
byte receivedMask = 0;   /* ghost: elements received */
byte caughtByClose = 0;  /* ghost: the element waiting in the slot when the close came */
byte live = N + 1;
byte nils = 0;

inline final_check() {
    assert(sentMask == receivedMask);
    assert((receivedMask & caughtByClose) == 0);
    assert(nils == R);
    assert(elem == 0)
}

active [S] proctype sender() {
    byte id = _pid;
    byte round, value, current;
    bool got, acked;
    for (round : 0 .. ROUNDS - 1) {
        value = 1 << (id * ROUNDS + round);
        if
        :: atomic { spaces > 0 -> spaces--; got = true }
#ifdef TIMED
        :: id == 0 -> got = false
#endif
        fi;
        if :: !got -> goto nextRound :: else -> skip fi;
        /* _rendezvousPut */
        if
        :: (slot & CLOSED) != 0 -> atomic { spaces++ }; goto nextRound
        :: else -> skip
        fi;
        elem = value;
        atomic {
            if
            :: slot == EMPTY -> slot = FULL; got = true
            :: else -> got = false
            fi
        };
        if
        :: !got -> atomic { elem = 0; spaces++ }; goto nextRound
        :: else -> skip
        fi;
        atomic { items++ };
        /* the ack wait */
        if
        :: atomic { acks > 0 -> acks--; acked = true }
#ifdef TIMED
        :: id == 0 -> acked = false
#endif
        fi;
        /* _rendezvousSettle */
        do
        :: current = slot;
            if
            :: (current & STATE) == TAKEN ->
#ifdef MUTANT_RELEASE_BEFORE_ACK
                atomic { slot = slot & CLOSED };
                atomic { spaces++ };
                if :: !acked -> atomic { acks > 0 -> acks-- } :: else -> skip fi;
#else
                if :: !acked -> atomic { acks > 0 -> acks-- } :: else -> skip fi;
                atomic { slot = slot & CLOSED };  /* _rendezvousRelease: fetch_and */
                atomic { spaces++ };
#endif
                atomic { assert((receivedMask & value) != 0); sentMask = sentMask | value };
                break
            :: (current & STATE) == FULL ->
                assert(!acked || (current & CLOSED) != 0);
#ifdef MUTANT_RETRACT_BY_STORE
                atomic { slot = EMPTY | (current & CLOSED); got = true };
#else
                atomic {
                    if
                    :: slot == current -> slot = EMPTY | (current & CLOSED); got = true
                    :: else -> got = false
                    fi
                };
#endif
                if
                :: got -> atomic { elem = 0; spaces++ }; break
                :: else -> skip
                fi
            :: (current & STATE) == CLAIMED -> ((slot & STATE) != CLAIMED)
            :: (current & STATE) == EMPTY -> assert(false) /* our element vanished */
            fi
        od;
nextRound:
        got = false;
        acked = false;
        current = 0
    }
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}

active [R] proctype receiver() {
    byte id = _pid - S;
    byte found, value;
    bool got;
    do
    :: true ->
        if
        :: atomic { items > 0 -> items--; got = true }
#ifdef TIMED
        :: id == 0 -> got = false
#endif
        fi;
        if
        :: !got -> skip
        :: else ->
            /* _rendezvousClaim */
            atomic {
                found = slot;
#ifdef MUTANT_CLAIM_IGNORES_CLOSED
                if :: (found & STATE) == FULL -> slot = CLAIMED | (found & CLOSED) :: else -> skip fi
#else
                if :: found == FULL -> slot = CLAIMED :: else -> skip fi
#endif
            };
            if
#ifdef MUTANT_CLAIM_IGNORES_CLOSED
            :: (found & STATE) == FULL ->
#else
            :: found == FULL ->
#endif
                atomic {
                    value = elem;
                    assert(value != 0 && (receivedMask & value) == 0);
                    receivedMask = receivedMask | value;
                    elem = 0
                };
#ifdef MUTANT_TAKEN_BY_STORE
                slot = TAKEN;
#else
                atomic { slot = slot | 1 };  /* fetch_or: CLAIMED -> TAKEN, CLOSED kept */
#endif
                atomic { acks++ }
            :: (found & CLOSED) != 0 -> atomic { items++; nils++ }; break
            :: else -> skip  /* a stale unit: wait again */
            fi;
            got = false
        fi
    od;
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}

active proctype closer() {
    atomic {
        if :: (slot & STATE) == FULL -> caughtByClose = elem :: else -> skip fi;
        slot = slot | CLOSED
    };
#ifdef MUTANT_CLOSE_NO_ACK_UNITS
    atomic { spaces = spaces + UNITS; items = items + UNITS };
#else
    atomic { spaces = spaces + UNITS; items = items + UNITS; acks = acks + UNITS };
#endif
    atomic { live--; if :: live == 0 -> final_check() :: else -> skip fi }
}
