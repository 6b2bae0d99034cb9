/* ReadWriteLock: the writer word, the reader count, the sleepers' registrations, the grant to
 * starving readers, the timed withdrawals and the asymmetric fence, as ReadWriteLockCore.swift
 * and ReadWriteLockSlowPaths.swift implement them (`_RWLockCore`, shared by ReadWriteLock and
 * ReadWriteLocked).
 *
 * @mirrors Sources/Interlock/Locks/ReadWriteLockCore.swift: lockRead tryLockRead unlockRead _readerLeft _tryEnterRead _wakeClaimant _readerBackOut
 * @mirrors Sources/Interlock/Locks/ReadWriteLockCore.swift: lockWrite tryLockWrite unlockWrite _enter _release _releaseAttending _wakeAfterRelease _attend _unattend _waitLimit
 * @mirrors Sources/Interlock/Locks/ReadWriteLockSlowPaths.swift: _lockReadUntimed _lockWriteUntimed _drainUntimed _wakeSleepers _clearPending _wakeReaders _wakeWriter
 * @mirrors Sources/Interlock/Locks/ReadWriteLockSlowPaths.swift: _releaseGranting _grantReaders _spin _lockReadSlow _sleepAsReader _registerReader _markStarving
 * @mirrors Sources/Interlock/Locks/ReadWriteLockSlowPaths.swift: _deregisterReader _sleeperFence _degrade _lockWriteSlow _writerLeaves _drain
 * @mirrors CShims/include/ilk_rwlock.h: ilk_rwlock_reader_leave_builtin ilk_rwlock_reader_leave
 * @sha256 cefc0c16d5507bd5
 * @config -DN=2 -DREADERS=1 -DROUNDS=2
 * @config -DN=2 -DREADERS=1 -DROUNDS=2 -DTIMED=3
 * @config -DN=2 -DREADERS=1 -DROUNDS=2 -DSYMMETRIC
 * @config -DN=2 -DREADERS=1 -DROUNDS=2 -DDEGRADE
 * @config -DN=2 -DREADERS=1 -DROUNDS=2 -DDEGRADE -DTIMED=3
 * @config -DN=3 -DREADERS=2 -DROUNDS=1
 * @config -DN=3 -DREADERS=2 -DROUNDS=1 -DTIMED=1
 * @config -DN=3 -DREADERS=2 -DROUNDS=1 -DTIMED=4
 * @config -DN=3 -DREADERS=2 -DROUNDS=1 -DSYMMETRIC
 * @config -DN=3 -DREADERS=1 -DROUNDS=1
 * @config -DN=3 -DREADERS=1 -DROUNDS=1 -DTIMED=1
 * @config -DN=3 -DREADERS=0 -DROUNDS=1 -DTIMED=1
 * @mutant -DN=3 -DREADERS=1 -DROUNDS=1 -DMUTANT_NO_ATTEND
 * @mutant -DN=2 -DREADERS=1 -DROUNDS=2 -DMUTANT_NO_MEMBARRIER
 * @mutant -DN=2 -DREADERS=1 -DROUNDS=2 -DMUTANT_NO_CLAIMANT_WAKE
 * @mutant -DN=2 -DREADERS=1 -DROUNDS=2 -DMUTANT_NO_BACKOUT_WAKE
 * @mutant -DN=2 -DREADERS=1 -DROUNDS=2 -DMUTANT_NO_GRANT_WAKE
 * @mutant -DN=3 -DREADERS=1 -DROUNDS=1 -DMUTANT_STORE_BEFORE_GRANT
 * @mutant -DN=2 -DREADERS=0 -DROUNDS=1 -DTIMED=1 -DMUTANT_LEAVER_KEEPS_P
 *
 * Workload: N threads (at most 3); threads 0 .. READERS-1 read, the others write; each runs
 * ROUNDS lock/unlock rounds. Thread p uses the timed forms (lockRead(before:),
 * lockWrite(before:)) when bit p of TIMED is set, else lockRead() / lockWrite(); a timed lock
 * that fails ends its round without entering. tryLockRead() is the timed read lock whose
 * deadline has passed at its first look; tryLockWrite() is the first part of lockWrite(before:).
 * SYMMETRIC builds the lock in symmetric mode; under DEGRADE any membarrier call may fail.
 *
 * The words (one Promela variable per field, each field changed by one atomic step):
 *   W        0 free, 1 C claimed, 4 P pending (as memory holds it; see the store buffer below)
 *   E        entered
 *   Rc, D    R: bits 0-62 (readers inside or backing out), bit 63 (the claimant sleeps on R);
 *            the claimant's futex compares R's low half, that is Rc
 *   Sw       writers registered;  Nw  N, the writers' notification counter (futex NOTIFY)
 *   RS       reader sequence (futex RSEQ)
 *   epoch, starving, Src    Sr: grant epoch, bit 31, registered readers
 *   Ac, Af   A: the count, bit 31;  mode  fence_mode (0 asymmetric, 1 symmetric, 3 degraded)
 *
 * Each atomic operation of the code is one step here, each plain load or store another:
 *   _tryEnterRead        R += 1 (its sign: D); if D clear, load W; if not 0: _readerBackOut:
 *                        R -= 1, then wake one on R's low half if R was exactly D|1
 *   unlockRead           load E; R -= 1 (the asm and builtin leaves classify the same old
 *                        value); if D was set: load R, wake one on R's low half if R == D
 *   lockWrite            exchange W with C; if it was not C: load R, E = 1 or _drain; else
 *                        _lockWriteSlow
 *   lockWrite(before:)   tryLockWrite (its guess and CAS loop: one step; load R; E = 1, or
 *                        _release), then _lockWriteSlow(deadline)
 *   _lockWriteSlow       _spin's load of W with, when W is unclaimed, the CAS; then (Sw -= 1,
 *                        A -= 1 if registered) _enter; or the deadline (_writerLeaves); or
 *                        register (A += 1, Sw += 1, _sleeperFence); or load N, load W, futex
 *                        wait on N (bounded when timed or degraded)
 *   _enter / _drain      load R; E = 1; or fetch_or D; loop: count 0: clear D, E = 1; the
 *                        deadline: clear D, _release; futex wait on R's low half; load R
 *   unlockWrite          load E; store E = 0; _release
 *   _release             load A; if 0: store W = 0, load A, and _wakeAfterRelease if not 0;
 *                        else _releaseAttending: load Sr's flag, load Sw, then either store W
 *                        (0 or P) or _releaseGranting (_grantReaders with its loop: load Sr;
 *                        R += count; CAS Sr to the next epoch; R -= the excess; then store W,
 *                        and RS += 1 and wake all on RS if it granted any); _wakeAfterRelease:
 *                        fence (A's bit) or compiler barrier, load Sr, load Sw, then
 *                        _wakeSleepers (N += 1 and wake one on N; or clear the P it stored:
 *                        CAS P -> 0, then RS += 1 and wake all; RS += 1 and wake all)
 *   _lockReadSlow        the deadline; _spin's load of W; _tryEnterRead when 0;
 *                        _sleepAsReader; on .retry _tryEnterRead again
 *   _sleepAsReader       A += 1; _registerReader (Sr += 1 with the flag when starving: one
 *                        step); _sleeperFence; loop: load RS and Sr's epoch (granted if it
 *                        moved); load W; 0 or timed out: _deregisterReader (one step: granted,
 *                        or Sr -= 1); P: load Sw, and when 0 _clearPending and look again;
 *                        futex wait on RS (bounded while not starving, when timed, or
 *                        degraded); on a timeout: the deadline, or raise the flag
 *                        (_markStarving: one step); at the end A -= 1
 *   _writerLeaves        Sw -= 1; if it was 1: _sleeperFence, _clearPending; else wake a
 *                        writer (N += 1, wake one); A -= 1
 *   _sleeperFence        load the mode; if asymmetric: membarrier (drains the store buffer),
 *                        or, in DEGRADE, its failure: _degrade (A |= bit; exchange the mode; if
 *                        it was not degraded: RS += 1, wake all on RS, N += 1, wake all on N)
 *
 * Time: `ContinuousClock.now >= deadline` (or `>= starveAt`) is a nondeterministic answer that
 * stays true once true. A futex wait with a limit (FUTEX_WAIT_TIMED) may time out at any moment
 * while queued; one whose limit was the deadline leaves the deadline passed. So the starvation
 * hand-off is taken whenever a registered reader may have waited 1 ms, which is any time.
 *
 * Memory model: sequentially consistent, except the write unlock's release store of W, the one
 * store of the code followed by loads with no fence between in the same thread (store W;
 * compiler barrier; load A, or load Sr and Sw: the asymmetric fence). That store goes into a
 * store buffer (wpend, wval) and reaches memory at any moment (storeBuffer), before the
 * unlocker's next read-modify-write or full fence (FLUSH_OWN), at the end of the unlock (its
 * thread's next access to anything would drain it: an RMW, or a load of its own value), or
 * when any sleeper's membarrier runs a full barrier on every thread (FLUSH_ANY). Without the
 * buffer (-DNO_SB) MUTANT_NO_MEMBARRIER is NOT caught: the buffer is what makes the asymmetric
 * fence's argument checkable here. The other relaxed accesses (E, Sw's decrement after a claim,
 * A's decrement, the grant's R increments, the looks at Sr/Sw before the store) are taken as
 * sequentially consistent: the file comment argues they are ordered by the acquire/release
 * edges through W, R, Sr, RS and N, which this model does not check. Loads reordered with each
 * other (as on arm64) are not modelled either: the store buffer is TSO's.
 *
 * Checked, exhaustively, for each @config: mutual exclusion (a writer inside with W = C and
 * E = 1 and nobody else; a reader inside with no writer); the code's misuse traps, as
 * assertions (a read unlock that sees E or finds R at 0 or at D alone, a back-out below 0, a
 * deregistration without a registration); no thread asleep when the others have finished (a
 * lost wake-up or a deadlock: spin's invalid end states); and at the end: R = 0, D, E clear,
 * Sw = 0, no reader registered, A's count 0, and W = 0 (no P outlives its writers; not checked
 * in DEGRADE, where a stale P stays until a reader polls, as the file comment says).
 *
 * What each workload reaches (probes: an assertion placed there fails in that config):
 *   N=2 1R1W ROUNDS=2    the grant (a starving reader registered when the unlock looks; a grant
 *                        CAS that fails as the reader deregisters; readers that left before
 *                        the CAS taken back out of R), a granted reader finding it in its loop
 *                        or at its deregistration, a _markStarving that finds the flag gone,
 *                        the claimant asleep on R, the back-out and read-unlock wakes, an
 *                        unlock whose store is still in the buffer when it loads A, and one
 *                        whose second look at A sees a sleeper
 *   + TIMED=3            timed withdrawals: a reader timed out, one granted after its deadline,
 *                        a drain timeout (_release by a claimant that never entered), and
 *                        tryLockWrite's claim and release
 *   + DEGRADE            _degrade and the polling waits (also with TIMED=3)
 *   + SYMMETRIC          the full fence of every unlock (A's bit)
 *   N=3 2R1W             a grant of two readers at once
 *   N=3 1R2W             P stored for a sleeping writer, a reader waiting behind it, the
 *                        writers' hand-off through N, an unlock that clears the P it stored
 *   N=3 3W, one timed    the last leaver clearing P, a leaver passing on the wake it took
 * Timed readers in both 3-thread mixes; a timed writer in 2R1W (43 M states, ~60 s, ~5.5 GB).
 * Beyond ~90 s, so not in the @config list: 1R2W with a timed writer (more than 86 M states;
 * a bitstate search of 155 M states found no error), which alone reaches a reader clearing a
 * stale P (its writer timed out and the leaver has not cleared it yet); any N=3 with
 * ROUNDS=2 (bitstate searches, no error: 2R1W 118 M states; 1R2W stopped after 850 M);
 * DEGRADE with 3 threads (1R2W: 54 M states, ~70 s, no error, no stale P either:
 * untimed writers never leave). A reader whose increment after _spin saw W free finds D set
 * needs two readers and two claims: no workload here reaches it (the fast path's does).
 *
 * Abstractions, and why they are sound:
 *   - _spin returns the value of its last load; the loads before it have no effect, and that
 *     load may happen at any moment of the interleaving, so one load is every spin. A relaxed
 *     load older than the current value only leads to a step that re-checks (the CAS, the
 *     seq_cst looks), so it is a stutter. _drain's spin discards its value: no step.
 *   - A CAS loop (tryLockWrite, _lockWriteSlow's spin and CAS, _registerReader, _markStarving,
 *     _deregisterReader) is one atomic step at the moment its CAS succeeds or its load decides:
 *     the failed attempts change nothing and only reload. _grantReaders keeps its loop, which
 *     changes R between its load and its CAS.
 *   - The reader's loads of RS and of Sr's epoch are one step: the epoch only grows, and once
 *     it has moved the sequence read is dead, so every pair of values the two loads can return
 *     leads where some single moment's pair leads.
 *   - Counters are bytes: the bounded workloads never wrap them; the code's never wrap in
 *     practice (R is 64 bits; the sequences compare for equality only).
 *   - No spurious wake-ups (futex.pml), though the code's waits may return on a signal: every
 *     caller re-checks its condition after any return, so a spurious return is a stutter, and a
 *     model with them could not show a lost wake-up.
 *   - In DEGRADE every wait is bounded by the poll once a thread has read the degraded mode, so
 *     a missed wake-up there is not an end state: that config checks exclusion, the invariants
 *     at the end, and that waits begun unbounded before the switch are woken by _degrade's
 *     wakes; whether the pollers make progress would need a liveness search.
 *   - `_symmetric` and `_degraded` (computed properties, not functions: the checksum cannot
 *     extract them) are the loads of the mode above; init's choice of mode is SYMMETRIC.
 *
 * Mutants (each must fail; scripts/verify.sh runs them):
 *   MUTANT_NO_ATTEND            a registering writer does not count itself in A (nor uncount):
 *                               an unlock that sees A = 0 misses it: lost wake-up
 *   MUTANT_NO_MEMBARRIER        the sleepers skip membarrier: the unlock's store of W is still
 *                               in its buffer when the sleeper looks, and its load of A came
 *                               before the registration: lost wake-up
 *   MUTANT_NO_CLAIMANT_WAKE     unlockRead does not wake the claimant when it leaves R at D
 *   MUTANT_NO_BACKOUT_WAKE      _readerBackOut does not wake it either
 *   MUTANT_NO_GRANT_WAKE        _releaseGranting does not wake the granted readers: the
 *                               starving one, asleep without a limit, never wakes
 *   MUTANT_STORE_BEFORE_GRANT   the release store of W moved before the grant: a writer claims
 *                               and enters before the granted readers are counted in R, which
 *                               then enter with it inside (caught as the misuse check or as
 *                               exclusion)
 *   MUTANT_LEAVER_KEEPS_P       the last writer to give up does not clear P: it outlives its
 *                               writers (the assertion at the end)
 */

#ifndef N
#define N 2
#endif
#ifndef READERS
#define READERS 1       /* threads 0 .. READERS-1 read, the others write */
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#ifndef TIMED
#define TIMED 0         /* bit p set: thread p uses the timed forms (lockRead/lockWrite(before:)) */
#endif

/* W's values */
#define WC 1            /* C: claimed */
#define WP 4            /* P: pending */

/* futex ids */
#define RLOW 1          /* R's low half: the claimant waits for the readers to leave */
#define RSEQ 2          /* RS: readers sleep on it */
#define NOTIFY 3        /* N: writers sleep on it */

/* _ReaderWake */
#define GRANTED 1
#define TIMEDOUT 2
#define RETRY 3

byte W = 0;             /* writer word, as memory holds it */
bool E = false;         /* entered */
byte Rc = 0;            /* R bits 0-62: readers inside or backing out */
bool D = false;         /* R bit 63: the claimant sleeps on R */
byte Sw = 0;            /* writers registered to sleep */
byte Nw = 0;            /* N: writer notification counter */
byte RS = 0;            /* reader sequence */
byte epoch = 0;         /* Sr bits 32-63: grant epoch */
bool starving = false;  /* Sr bit 31 */
byte Src = 0;           /* Sr bits 0-30: readers registered to sleep */
byte Ac = 0;            /* A bits 0-30: threads in a sleeper's protocol */
#ifdef SYMMETRIC
bool Af = true;         /* A bit 31: the fence mode is not asymmetric */
byte mode = 1;          /* fence_mode: 0 asymmetric, 1 symmetric, 3 degraded */
#else
bool Af = false;
byte mode = 0;
#endif

/* The write unlock's release store of W, in its store buffer (see the header). */
bool wpend = false;
byte wval = 0;
byte wowner = 0;

byte readersIn = 0;
byte writersIn = 0;
byte finished = 0;

#include "futex.pml"

#define DRAIN_BUFFER  W = wval; wpend = false; wval = 0; wowner = 0
/* Our own pending store reaches memory before our next read-modify-write or full fence. */
#define FLUSH_OWN  if :: wpend && wowner == _pid -> DRAIN_BUFFER :: else -> skip fi
/* membarrier: every running thread executes a full barrier. */
#define FLUSH_ANY  if :: wpend -> DRAIN_BUFFER :: else -> skip fi
#ifdef NO_SB
#define STORE_W(v) W = (v)
#else
#define STORE_W(v) atomic { wval = (v); wowner = _pid; wpend = true }
#endif

/* ContinuousClock.now >= deadline: any answer, but once true, true. */
inline checkDeadline() {
    if
    :: deadlinePassed = true
    :: !deadlinePassed -> skip
    fi
}

/* _wakeReaders: RS += 1 (release), wake all on RS. */
inline wakeReaders() {
    atomic { FLUSH_OWN; RS++ };
    futex_wake_all(RSEQ)
}

/* _wakeWriter: N += 1 (release), wake one on N. */
inline wakeWriter() {
    atomic { FLUSH_OWN; Nw++ };
    futex_wake_one(NOTIFY)
}

/* _clearPending: CAS W P -> 0; if it did, nudge the readers. */
inline clearPending() {
    atomic { FLUSH_OWN; if :: W == WP -> W = 0; cp = true :: else -> cp = false fi };
    if :: cp -> wakeReaders() :: else -> skip fi;
    cp = false
}

/* _tryEnterRead (and _readerBackOut): the result in ok. */
inline tryEnterRead() {
    atomic { Rc++; neg = D };
    if
    :: !neg -> atomic { ok = (W == 0) }
    :: else -> ok = false
    fi;
    if
    :: !ok ->
        /* _readerBackOut: fetch_sub (release) */
        atomic { assert(Rc > 0); bc = Rc; bd = D; Rc-- };
        if
        :: bd && bc == 1 ->
#ifndef MUTANT_NO_BACKOUT_WAKE
            futex_wake_one(RLOW)
#else
            skip
#endif
        :: else -> skip
        fi;
        bc = 0; bd = false
    :: else -> skip
    fi;
    neg = false
}

/* _degrade */
inline degrade() {
    atomic { Af = true };
    atomic { prev = mode; mode = 3 };
    if
    :: prev != 3 ->
        wakeReaders();
        atomic { Nw++ };
        futex_wake_all(NOTIFY)
    :: else -> skip
    fi;
    prev = 0
}

/* _sleeperFence: nothing in symmetric mode; else membarrier, which may fail (DEGRADE). */
inline sleeperFence() {
#ifdef DEGRADE
    atomic { sym = (mode != 0) };
    if
    :: sym -> skip
    :: else ->
        if
        :: atomic { FLUSH_ANY }
        :: degrade()
        fi
    fi;
    sym = false
#elif defined(SYMMETRIC)
    skip
#elif defined(MUTANT_NO_MEMBARRIER)
    skip
#else
    atomic { FLUSH_ANY }
#endif
}

/* _waitLimit: bounded is whether the futex wait has a limit (a deadline, or the poll of the
 * degraded mode); dg whether the mode read was degraded. */
inline waitLimit(hasLimit) {
#ifdef DEGRADE
    atomic { dg = (mode == 3); bounded = (hasLimit) || dg }
#else
    bounded = (hasLimit)
#endif
}

/* _markStarving: a CAS loop, one atomic step at its successful CAS (the loop's failed
 * attempts change nothing). */
inline markStarving() {
    atomic { if :: epoch == ep && !starving -> starving = true :: else -> skip fi }
}

/* _writerLeaves */
inline writerLeaves() {
    atomic { old = Sw; Sw-- };
    if
    :: old == 1 ->
        sleeperFence();
#ifndef MUTANT_LEAVER_KEEPS_P
        clearPending()
#else
        skip
#endif
    :: else -> wakeWriter()
    fi;
#ifndef MUTANT_NO_ATTEND
    atomic { Ac-- };
#endif
    old = 0
}

/* _grantReaders: the count in cnt. */
inline grantReaders() {
    added = 0;
    atomic { gE = epoch; gF = starving; gC = Src };
    do
    :: if
       :: gC > added -> atomic { Rc = Rc + gC - added }; added = gC
       :: else -> skip
       fi;
       atomic {
           if
           :: epoch == gE && starving == gF && Src == gC ->
               epoch++; starving = false; Src = 0; ok = true
           :: else -> gE = epoch; gF = starving; gC = Src; ok = false
           fi
       };
       if
       :: ok ->
           if :: added > gC -> atomic { Rc = Rc - (added - gC) } :: else -> skip fi;
           cnt = gC;
           break
       :: else -> skip
       fi
    od;
    added = 0; gE = 0; gF = false; gC = 0
}

active [N] proctype thread() {
    bool reader = (_pid < READERS);
    bool timed = ((TIMED >> _pid) & 1);
    byte round = 0;
    /* the code's locals */
    bool ok, neg, bd, e, cp, sym, dg, bounded, timedOut;
    bool deadlinePassed, starvePassed, starvingL, rdTimedOut, registered, gr, sf, af, gF;
    byte w, bc, seq, ep, rc, old, prev, wake, sw, srC, a, released, cnt, added, gE, gC;
    bit relRet;

    do
    :: round == ROUNDS -> break
    :: else ->
        deadlinePassed = false;
        if
        :: reader ->
            /* lockRead / lockRead(before:): one attempt, then _lockReadSlow */
            tryEnterRead();
            if :: ok -> goto readLocked :: else -> skip fi;
            starvePassed = false;
rsLoop:
            if
            :: timed ->
                checkDeadline();
                if :: deadlinePassed -> goto failed :: else -> skip fi
            :: else -> skip
            fi;
            /* _spin: its last load of W */
            atomic { w = W };
            if
            :: w == 0 ->
                tryEnterRead();
                if :: ok -> goto readLocked :: else -> skip fi
            :: else -> skip
            fi;
            /* _sleepAsReader */
            atomic { Ac++ };                               /* _attend */
            if                                             /* now >= starveAt */
            :: starvePassed -> starvingL = true
            :: !starvePassed -> starvingL = true; starvePassed = true
            :: !starvePassed -> starvingL = false
            fi;
            atomic {                                       /* _registerReader */
                ep = epoch; Src++;
                if :: starvingL -> starving = true :: else -> skip fi
            };
            sleeperFence();
            rdTimedOut = false;
sleepLoop:
            atomic { seq = RS; gr = (epoch != ep) };
            if :: gr -> wake = GRANTED; goto sleepEnd :: else -> skip fi;
            atomic { w = W };
            if
            :: rdTimedOut || w == 0 ->
                /* _deregisterReader: one atomic step at its deciding CAS or load */
                atomic {
                    if
                    :: epoch != ep -> wake = GRANTED
                    :: else -> assert(Src > 0); Src--; wake = (rdTimedOut -> TIMEDOUT : RETRY)
                    fi
                };
                goto sleepEnd
            :: else -> skip
            fi;
            if
            :: w == WP ->
                atomic { sw = Sw };
                if :: sw == 0 -> sw = 0; clearPending(); goto sleepLoop :: else -> sw = 0 fi
            :: else -> skip
            fi;
            waitLimit(!starvingL || timed);
            if
            :: bounded -> FUTEX_WAIT_TIMED(RSEQ, RS, seq)
            :: else -> FUTEX_WAIT(RSEQ, RS, seq); timedOut = false
            fi;
            if
            :: timedOut ->
                /* a starving reader's limit is its deadline (unless polling) */
                if :: timed && starvingL && !dg -> deadlinePassed = true :: else -> skip fi;
                if :: timed -> checkDeadline() :: else -> skip fi;
                if
                :: deadlinePassed -> rdTimedOut = true
                :: else ->
                    if
                    :: !starvingL ->
                        starvingL = true;
                        if :: !dg -> starvePassed = true :: else -> skip fi;
                        markStarving()
                    :: else -> skip
                    fi
                fi;
                timedOut = false
            :: else -> skip
            fi;
            goto sleepLoop;
sleepEnd:
            atomic { Ac-- };                               /* _unattend (defer) */
            if
            :: wake == GRANTED -> goto readLocked
            :: wake == TIMEDOUT -> goto failed
            :: else ->
                tryEnterRead();
                if :: ok -> goto readLocked :: else -> goto rsLoop fi
            fi;
readLocked:
            atomic { readersIn++; assert(writersIn == 0) };
            atomic { readersIn-- };
            /* unlockRead */
            atomic { e = E };
            atomic { assert(Rc > 0); bc = Rc; bd = D; Rc-- };   /* the leave (asm or builtin) */
            assert(!e);
            if
            :: bd ->                                       /* _readerLeft: DRAINING */
                atomic { ok = (Rc == 0 && D) };
#ifndef MUTANT_NO_CLAIMANT_WAKE
                if :: ok -> futex_wake_one(RLOW) :: else -> skip fi
#endif
            :: else -> skip
            fi;
            goto roundEnd

        :: else ->
            if
            :: !timed ->
                /* lockWrite: exchange W with C */
                atomic { old = W; W = WC };
                if
                :: (old & WC) == 0 ->
                    atomic { ok = (Rc == 0 && !D) };
                    if :: ok -> E = true; goto writeLocked :: else -> goto drain fi
                :: else -> goto wsStart
                fi
            :: else ->
                /* lockWrite(before:): tryLockWrite first (its guess and CAS loop: one step) */
                atomic { if :: (W & WC) != 0 -> ok = false :: else -> W = WC; ok = true fi };
                if :: !ok -> goto wsStart :: else -> skip fi;
                atomic { ok = (Rc == 0 && !D) };
                if
                :: ok -> E = true; goto writeLocked
                :: else -> relRet = 1; goto release
                fi
            fi;

wsStart:    /* _lockWriteSlow */
            registered = false;
wsLoop:
            /* _spin's last load of W and, when it shows W unclaimed, the CAS: one step */
            atomic { if :: (W & WC) == 0 -> W = WC; ok = true :: else -> ok = false fi };
            if
            :: ok ->
                if
                :: registered ->
                    atomic { Sw-- };
#ifndef MUTANT_NO_ATTEND
                    atomic { Ac-- };                       /* _unattend */
#endif
                    registered = false
                :: else -> skip
                fi;
                goto enter
            :: else -> skip
            fi;
            if
            :: timed ->
                checkDeadline();
                if
                :: deadlinePassed ->
                    if :: registered -> writerLeaves(); registered = false :: else -> skip fi;
                    goto failed
                :: else -> skip
                fi
            :: else -> skip
            fi;
            if
            :: !registered ->
#ifndef MUTANT_NO_ATTEND
                atomic { Ac++ };                           /* _attend */
#endif
                atomic { Sw++ };
                registered = true;
                sleeperFence();
                goto wsLoop
            :: else -> skip
            fi;
            atomic { seq = Nw };
            atomic { ok = ((W & WC) == 0) };
            if :: ok -> goto wsLoop :: else -> skip fi;
            waitLimit(timed);
            if
            :: bounded ->
                FUTEX_WAIT_TIMED(NOTIFY, Nw, seq);
                if :: timedOut && !dg -> deadlinePassed = true :: else -> skip fi;
                timedOut = false
            :: else -> FUTEX_WAIT(NOTIFY, Nw, seq)
            fi;
            goto wsLoop;

enter:      /* _enter */
            atomic { ok = (Rc == 0 && !D) };
            if :: ok -> E = true; goto writeLocked :: else -> skip fi;
drain:      /* _drain */
            atomic { D = true; rc = Rc };
drLoop:
            if
            :: rc == 0 -> atomic { D = false }; E = true; goto writeLocked
            :: else -> skip
            fi;
            if
            :: timed ->
                checkDeadline();
                if
                :: deadlinePassed -> atomic { D = false }; relRet = 0; goto release
                :: else -> skip
                fi
            :: else -> skip
            fi;
            if
            :: timed ->
                FUTEX_WAIT_TIMED(RLOW, Rc, rc);
                if :: timedOut -> deadlinePassed = true :: else -> skip fi;
                timedOut = false
            :: else -> FUTEX_WAIT(RLOW, Rc, rc)
            fi;
            atomic { rc = Rc };
            goto drLoop;

writeLocked:
            atomic { writersIn++; assert(writersIn == 1 && readersIn == 0 && W == WC && E) };
            atomic { writersIn-- };
            /* unlockWrite */
            atomic { assert(E) };
            E = false;
            relRet = 0;

release:    /* _release */
            atomic { a = Ac; af = Af };
            if
            :: a == 0 && !af ->
                released = 0;
                STORE_W(0);
                atomic { a = Ac; af = Af };                /* after the compiler barrier */
                if :: a != 0 || af -> goto wakeAfter :: else -> goto releaseDone fi
            :: else -> skip
            fi;
            /* _releaseAttending */
            atomic { sf = starving };
            atomic { released = (Sw == 0 -> 0 : WP) };
            if
            :: sf ->                                       /* _releaseGranting */
#ifdef MUTANT_STORE_BEFORE_GRANT
                STORE_W(released);
                grantReaders();
#else
                grantReaders();
                STORE_W(released);
#endif
#ifndef MUTANT_NO_GRANT_WAKE
                if :: cnt != 0 -> wakeReaders() :: else -> skip fi
#else
                skip
#endif
            :: else ->
                STORE_W(released)
            fi;
wakeAfter:  /* _wakeAfterRelease: the fence, then the looks at Sr and Sw */
            atomic { if :: af -> FLUSH_OWN :: else -> skip fi; srC = Src };
            atomic { sw = Sw };
            if
            :: srC != 0 || sw != 0 || released != 0 ->    /* _wakeSleepers */
                if
                :: sw != 0 -> wakeWriter()
                :: sw == 0 && released != 0 -> clearPending()
                :: else -> skip
                fi;
                if :: srC != 0 -> wakeReaders() :: else -> skip fi
            :: else -> skip
            fi;
releaseDone:
            atomic { FLUSH_OWN };
            if :: relRet == 1 -> relRet = 0; goto wsStart :: else -> goto roundEnd fi
        fi;
failed:
        skip;
roundEnd:
        skip;
        d_step {
            ok = false; e = false; sf = false; af = false; gr = false; rdTimedOut = false;
            starvingL = false; starvePassed = false; registered = false; bounded = false; dg = false;
            w = 0; seq = 0; ep = 0; rc = 0; old = 0; wake = 0; sw = 0; srC = 0; a = 0;
            released = 0; cnt = 0; bc = 0; bd = false
        };
        round++
    od;
    atomic {
        finished++;
        if
        :: finished == N ->
            assert(Rc == 0 && !D && !E && Sw == 0 && Src == 0 && Ac == 0 && !wpend);
#ifndef DEGRADE
            assert(W == 0)
#endif
        :: else -> skip
        fi
    }
}

/* The store buffer: the unlock's store of W reaches memory at any moment. */
active proctype storeBuffer() {
end:
    do
    :: atomic { wpend -> DRAIN_BUFFER }
    od
}
