// ReadWriteLock: many readers or one writer, on futexes, preferring writers without starving
// readers.
//
// Algorithm: the futex reader-writer lock of Rust's standard library
// (library/std/src/sys/sync/rwlock/futex.rs, Mara Bos, 2022): one state word holding the
// reader count and two waiting bits, readers sleeping on the state word and writers on a
// separate notification counter, so that a writer can be woken alone. Changed here so that
// readers cannot starve: when a WRITER unlocks while both readers and writers wait, the
// waiting readers are let in (a "reader turn"); when the last READER unlocks while both wait,
// a writer is let in. Writers and reader batches alternate under contention.
//
// State word (32 bits):
//
//   bits 0-28  count   readers inside (holding the lock, or a reader's optimistic increment
//                      that it is about to take back, see "Readers' fast path")
//   bit 29     W       a writer holds the lock
//   bit 30     RW      readers may be sleeping on the state word
//   bit 31     WW      writers may be sleeping on the notification word
//
//   count    W  RW  WW  meaning
//   -------  -  --  --  --------------------------------------------------------------------
//   0        0   0   0  free
//   0        0   *   *  free, waiters not yet woken by the unlocker, or in flight (momentary)
//   1...MAX  0   0   0  read-locked; a new reader may join
//   1...MAX  0   *   1  read-locked, a writer waits: new readers queue (RW) behind it
//   1...     0   *   *  as above, or, when the count is only the increments of readers about
//                       to back out, free (momentary); the last of them wakes the waiters
//   0        1   *   *  write-locked; waiters of either kind may sleep
//   1...     1   *   *  write-locked, with readers' optimistic increments in flight (momentary)
//
// Readers' fast path: a reader takes the lock with one fetch-and-add of 1 and keeps it when the
// value it replaced says a new reader may join (no W, RW or WW, count below MAX_READERS);
// otherwise it takes its increment back at once, exactly as an unlock would (so a back-out that
// brings the count to 0 with bits set wakes, like a last reader), and waits on the slow path. A
// fetch-and-add never fails, where a CAS fails whenever another reader got in first: readers no
// longer retry against each other, and the uncontended read lock+unlock is two read-modify-
// writes with nothing between, as in Concurrency Kit's rwlock. Measured (LocksBenchmarks, 2-core
// VM, three runs): read lock+unlock 5.2 -> 4.1-4.8 ns; 95 % reads with 2 threads 20-23 -> 11-15
// ns per operation (CK's rwlock 23-28).
//
// The write lock+unlock stays two read-modify-writes (a CAS, then a fetch-and-sub that also
// reports the waiting bits), where a lock that never sleeps (CK's) releases with a plain store.
// A plain-store release is unsafe on this one word even with an asymmetric fence
// (membarrier): a waiter can set its bit between the writer's last look and its store, and the
// store would erase it. It needs the waiting bits in a separate word, with waiters issuing the
// heavy fence before they sleep; not done (see the README). MAX_READERS leaves 65,536 counts of headroom below bit 29, so the increments of
// readers about to back out can never carry into W. A writer's CAS needs count 0 and W clear,
// so in-flight increments only make a writer retry.
//
// Notification word (32 bits): a counter that every writer wake-up increments, so that a
// writer about to sleep notices a wake-up that happened after it looked (futex on a sequence).
//
// Rules:
//   - A new reader takes the lock only when count < MAX_READERS and neither waiting bit is
//     set: while a writer waits, new readers wait behind it, and `tryLockRead` fails.
//   - A reader that was woken from the futex (its "turn") may take the lock whenever it is not
//     write-locked, ignoring the waiting bits.
//   - A writer takes the lock whenever count == 0 and W is clear, whatever the bits; after it has slept once
//     it keeps WW set when it takes the lock, since other writers may still sleep.
//   - Sleepers set their bit before sleeping; the thread that brings count and W to 0 while a
//     bit is set clears bits and wakes (`_wake`): last reader -> a writer (else the readers);
//     writer -> the waiting readers if any (else a writer). A writer whose unlock leaves
//     in-flight reader increments behind (count > 0) wakes nobody; the last of those readers
//     to back out does, as the writer would have (it saw W at its increment). One race gives
//     a turn away: an increment that lands after a writer's unlock but before its wake's CAS
//     makes that CAS fail, and the reader that backs out (it saw no W) wakes as a last reader
//     would, so a writer goes before the waiting readers. No wake-up is lost; the readers get
//     the next writer's turn.
//   - `tryLockWrite` (and a timed writer whose deadline has passed) can fail while the lock
//     is momentarily free, when readers' increments are in flight: they are readers that are
//     about to find they may not join.
//   - A timed reader gives up once its deadline has passed and the rule that applies to it
//     (new reader, or woken reader) refuses it. Readers are woken all at once, so one that
//     leaves consumes no wake-up meant for another; a writer that unlocks for waiting readers
//     and finds none asleep wakes a writer instead, and if no writer sleeps either, clears the
//     stale WW (regression test: the end of `ReadWriteLockTests.writerPreference`, where a
//     timed-out reader had left RW set and the writer's unlock found nobody asleep); and if
//     that clear fails because readers queued meanwhile, it decides again on the state it
//     found (regression test: `ReadWriteLockTests.regressionWriterUnlockClearingStaleWriter-
//     BitWakesQueuedReaders`).
//   - A timed writer that gives up after setting WW clears WW (and RW, waking the readers,
//     when not write-locked) and wakes every writer, which re-assert WW: a bit is never left
//     set with nobody to clear it.
//
// Invariants: RW set implies the lock is write-locked or WW is set (or an unlocker is about
// to clear it); every sleeper's futex wait either fails with EAGAIN (its word changed) or is
// followed by a wake from whoever clears its bit or bumps the notification word.
//
// Memory ordering:
//   - Taking the lock is an acquire read-modify-write (a reader's fetch-and-add or CAS, a
//     writer's CAS); releasing is a fetch-sub with release; they pair, and the relaxed CASes
//     that clear or set waiting bits, like a reader's back-out (release), are read-modify-
//     writes, so they continue the release sequence of the last unlock: a reader whose
//     increment lands after a back-out still synchronizes with the writer's unlock before it.
//   - Setting and clearing waiting bits is relaxed: it publishes no data; futex's own atomic
//     compare decides sleeping.
//   - The notification counter is incremented with release and read with acquire: a writer
//     that reads the new count then sees the state change made before the increment, so it
//     does not sleep on a lock that became free (Rust's argument).
//   - No fences: ThreadSanitizer sees each edge on the state word.

import CInterlock

/// A reader-writer lock: any number of readers at once, or one writer alone.
///
/// Writers are preferred: while a writer waits, readers arriving later wait behind it and
/// ``tryLockRead()`` returns `false`, so a stream of readers cannot starve writers. Readers are
/// not starved either: a writer releasing the lock while readers wait lets them in before the
/// next writer. Prefer ``withReadLock(_:)`` and ``withWriteLock(_:)``.
///
/// - Warning: Neither lock is recursive: a thread that holds the read lock and asks for it again
///   while a writer waits deadlocks. Unlocking a lock not held in that mode traps.
public final class ReadWriteLock: @unchecked Sendable {
    // Word 0: state; word 1: writer notification counter. Reached only through `_words`.
    @usableFromInline internal var _state: (UInt32, UInt32) = (0, 0)

    /// Creates an unlocked reader-writer lock.
    public init() {}

    @inlinable @inline(__always)
    internal var _words: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_state` is the first stored property of this final class and a homogeneous
        // tuple (laid out as an array); objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    @inlinable @inline(__always) internal var _stateWord: UnsafeMutablePointer<UInt32> { _words }
    @inlinable @inline(__always) internal var _notifyWord: UnsafeMutablePointer<UInt32> { _words + 1 }

    // MARK: Read lock

    /// Blocks until the calling thread holds the lock for reading.
    @inlinable @inline(__always)
    public func lockRead() {
        // Acquire: pairs with the release fetch-sub of the last writer's unlock (this RMW reads
        // the value that unlock wrote, or a later one of its release sequence).
        let old = ilk_atomic_fetch_add_u32(_stateWord, 1, ILK_ORDER_ACQUIRE)
        if _fastPath(_RWState.isReadLockable(old)) { return }
        _readerBackOut(old &+ 1)
        _ = _lockReadSlow(deadline: nil)
    }

    /// Takes the lock for reading if that is possible at once: not while a writer holds it or
    /// waits for it.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func tryLockRead() -> Bool {
        // Relaxed: a guess for the CAS.
        var state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
        while _RWState.isReadLockable(state) {
            // Acquire: pairs with the release of the last writer's unlock.
            let found = ilk_atomic_cas_value_u32(_stateWord, state, state &+ 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if found == state { return true }
            state = found
        }
        return false
    }

    /// Takes the lock for reading, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockRead()``.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func lockRead(before deadline: ContinuousClock.Instant) -> Bool {
        if tryLockRead() { return true }
        return _lockReadSlow(deadline: deadline)
    }

    /// Releases the calling thread's read lock.
    /// - Warning: Traps when the lock is not held for reading.
    @inlinable @inline(__always)
    public func unlockRead() {
        // Release: pairs with the acquiring CAS of the next writer.
        let old = ilk_atomic_fetch_sub_u32(_stateWord, 1, ILK_ORDER_RELEASE)
        // A reader holding the lock never sees W (a writer needs count 0 to set it), so W set
        // here is a misuse even when in-flight increments make the count non-zero.
        if _slowPath(old & _RWState.countMask == 0 || old & _RWState.writeLocked != 0) {
            _RWState._misuse(old, "unlockRead()")
        }
        let new = old &- 1
        if _slowPath(new & _RWState.heldMask == 0 && new & _RWState.waitingBits != 0) {
            _wake(new, fromWriter: false)
        }
    }

    /// Takes back the optimistic increment of a reader that may not join (`state` is the value
    /// its increment wrote), waking waiters as an unlock would.
    @usableFromInline @inline(never)
    internal func _readerBackOut(_ state: UInt32) {
        // Release: continues the release sequence of the last unlock (an RMW); orders nothing
        // of ours, since this reader read nothing under the lock.
        let old = ilk_atomic_fetch_sub_u32(_stateWord, 1, ILK_ORDER_RELEASE)
        // Our own increment is still counted unless an unlockRead() by a thread that held no
        // read lock took it: stop before the word wraps.
        if _slowPath(old & _RWState.countMask == 0) { _RWState._misuse(old, "unlockRead()") }
        let new = old &- 1
        if new & _RWState.heldMask == 0 && new & _RWState.waitingBits != 0 {
            // A writer that unlocked while our increment was in flight left its wake to us.
            _wake(new, fromWriter: state & _RWState.writeLocked != 0)
        }
    }

    /// Runs `body` holding the lock for reading; releases it when `body` returns or throws.
    /// - Returns: what `body` returns.
    @inlinable
    public func withReadLock<R>(_ body: () throws -> R) rethrows -> R {
        lockRead()
        defer { unlockRead() }
        return try body()
    }

    // MARK: Write lock

    /// Blocks until the calling thread holds the lock for writing.
    @inlinable @inline(__always)
    public func lockWrite() {
        // Acquire: pairs with the release fetch-sub of the last unlock.
        if _slowPath(ilk_atomic_cas_value_u32(_stateWord, 0, _RWState.writeLocked, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) != 0) {
            _ = _lockWriteSlow(deadline: nil)
        }
    }

    /// Takes the lock for writing if nobody holds it, without waiting.
    ///
    /// May also fail at the instant a reader that arrived while a writer waited is backing out
    /// (for a few instructions it counts as a reader); retry, or use ``lockWrite(before:)``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func tryLockWrite() -> Bool {
        // Relaxed: a guess for the CAS.
        var state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
        while state & _RWState.heldMask == 0 {
            // Acquire: pairs with the release fetch-sub of the last unlock.
            let found = ilk_atomic_cas_value_u32(
                _stateWord, state, state | _RWState.writeLocked, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if found == state { return true }
            state = found
        }
        return false
    }

    /// Takes the lock for writing, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockWrite()``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func lockWrite(before deadline: ContinuousClock.Instant) -> Bool {
        if tryLockWrite() { return true }
        return _lockWriteSlow(deadline: deadline)
    }

    /// Releases the calling thread's write lock.
    /// - Warning: Traps when the lock is not held for writing.
    @inlinable @inline(__always)
    public func unlockWrite() {
        // Release: pairs with the acquiring CAS of the next reader or writer.
        let old = ilk_atomic_fetch_sub_u32(_stateWord, _RWState.writeLocked, ILK_ORDER_RELEASE)
        if _slowPath(old & _RWState.writeLocked == 0) { _RWState._misuse(old, "unlockWrite()") }
        let new = old &- _RWState.writeLocked
        // With in-flight reader increments (count > 0), the last of them wakes instead.
        if _slowPath(new & _RWState.waitingBits != 0 && new & _RWState.countMask == 0) {
            _wake(new, fromWriter: true)
        }
    }

    /// Runs `body` holding the lock for writing; releases it when `body` returns or throws.
    /// - Returns: what `body` returns.
    @inlinable
    public func withWriteLock<R>(_ body: () throws -> R) rethrows -> R {
        lockWrite()
        defer { unlockWrite() }
        return try body()
    }

    // MARK: Slow paths

    /// Spins until `done(state)` or the budget is spent, looking at the word after 1, 2, 4, ...
    /// pauses (plus a jitter), as `_MutexWord` does (its file comment has the measurement);
    /// returns the last state read.
    @inline(__always)
    internal func _spin(until done: (UInt32) -> Bool) -> UInt32 {
        var budget = _spinBudget
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            // Relaxed: a snapshot to decide what to try next; every taking CAS re-checks.
            let state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
            if done(state) { return state }
            let pauses = backoff &+ (jitter & (backoff &- 1))
            if pauses >= budget { return state }
            budget &-= pauses
            for _ in 0..<pauses { ilk_spin_pause() }
            backoff &<<= 1
        }
    }

    /// Spins until a reader may get in, or someone is queued (then spinning is pointless).
    internal func _spinRead() -> UInt32 {
        _spin { !_RWState.isWriteLocked($0) || $0 & _RWState.waitingBits != 0 }
    }

    /// Spins until the lock is free, or a writer is queued.
    internal func _spinWrite() -> UInt32 {
        _spin { $0 & _RWState.heldMask == 0 || $0 & _RWState.writersWaiting != 0 }
    }

    @usableFromInline @inline(never)
    internal func _lockReadSlow(deadline: ContinuousClock.Instant?) -> Bool {
        if let deadline, ContinuousClock.now >= deadline { return false }
        var woken = false
        var timedOut = false
        var state = _spinRead()
        while true {
            let lockable = woken ? _RWState.isReadLockableAfterWake(state) : _RWState.isReadLockable(state)
            if lockable {
                // Acquire: pairs with the release of the last writer's unlock.
                let found = ilk_atomic_cas_value_u32(_stateWord, state, state &+ 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
                if found == state { return true }
                state = found
                continue
            }
            if _slowPath(state & _RWState.countMask >= _RWState.maxReaders) {
                _RWState._tooManyReaders()
            }
            // Give up only having seen the lock not lockable after the deadline. Readers are
            // woken all at once, so a reader that leaves consumes no wake-up meant for another;
            // a writer unlocking for readers that all left wakes a writer (see `_wake`).
            if timedOut || (deadline != nil && woken && ContinuousClock.now >= deadline!) {
                return false
            }
            if state & _RWState.readersWaiting == 0 {
                // Relaxed: the bit publishes nothing; it asks the unlocker to wake us.
                let found = ilk_atomic_cas_value_u32(
                    _stateWord, state, state | _RWState.readersWaiting, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                if found != state { state = found; continue }
            }
            let expected = state | _RWState.readersWaiting
            let result = deadline.map { _Futex.wait(_stateWord, expected: expected, until: $0) }
                ?? _Futex.wait(_stateWord, expected: expected)
            switch result {
            case .woken: woken = true
            // Not woken, so not our turn: take the lock only by the new-reader rule (a reader
            // that timed out must not pass a waiting writer).
            case .timedOut: timedOut = true
            case .valueChanged: break  // not our turn either: the state changed before we slept
            }
            state = _spinRead()
        }
    }

    @usableFromInline @inline(never)
    internal func _lockWriteSlow(deadline: ContinuousClock.Instant?) -> Bool {
        if let deadline, ContinuousClock.now >= deadline { return false }
        var otherWritersWaiting: UInt32 = 0
        var state = _spinWrite()
        while true {
            if state & _RWState.heldMask == 0 {
                // Acquire: pairs with the release fetch-sub of the last unlock.
                let found = ilk_atomic_cas_value_u32(
                    _stateWord, state, state | _RWState.writeLocked | otherWritersWaiting,
                    ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
                if found == state { return true }
                state = found
                continue
            }
            if let deadline, ContinuousClock.now >= deadline {
                if otherWritersWaiting != 0 { _writerGaveUp() }
                return false
            }
            if state & _RWState.writersWaiting == 0 {
                // Relaxed: the bit publishes nothing; it asks the unlocker to wake a writer.
                let found = ilk_atomic_cas_value_u32(
                    _stateWord, state, state | _RWState.writersWaiting, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                if found != state { state = found; continue }
            }
            // We may have been the only writer waiting, or not: keep WW set when taking the lock.
            otherWritersWaiting = _RWState.writersWaiting
            // Acquire: pairs with the release increment in `_wakeWriter`, so the state load
            // below sees the state change made before that increment.
            let sequence = ilk_atomic_load_u32(_notifyWord, ILK_ORDER_ACQUIRE)
            // Relaxed: ordered after the acquire above, which is what matters.
            state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
            if state & _RWState.heldMask == 0 || state & _RWState.writersWaiting == 0 { continue }
            if let deadline {
                _ = _Futex.wait(_notifyWord, expected: sequence, until: deadline)
            } else {
                _ = _Futex.wait(_notifyWord, expected: sequence)
            }
            state = _spinWrite()
        }
    }

    /// A timed writer leaves after having set or relied on WW: clear WW (and RW with a wake of
    /// the readers when not write-locked), then wake every writer so that the ones still
    /// waiting set WW again. Also passes on a writer wake-up this thread may have consumed.
    @usableFromInline @inline(never)
    internal func _writerGaveUp() {
        // Relaxed: a guess for the CAS.
        var state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
        var wakeReaders = false
        while true {
            var new = state & ~_RWState.writersWaiting
            wakeReaders = !_RWState.isWriteLocked(state) && state & _RWState.readersWaiting != 0
            if wakeReaders { new &= ~_RWState.readersWaiting }
            if new == state { break }
            // Relaxed: only bits change; an RMW, so the release sequence of the last unlock goes on.
            let found = ilk_atomic_cas_value_u32(_stateWord, state, new, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found == state { break }
            state = found
        }
        if wakeReaders { _Futex.wakeAll(_stateWord) }
        // Release: pairs with the acquire load of the sequence in `_lockWriteSlow`.
        _ = ilk_atomic_fetch_add_u32(_notifyWord, 1, ILK_ORDER_RELEASE)
        _Futex.wakeAll(_notifyWord)
    }

    /// Wakes one sleeping writer. - Returns: whether one was sleeping (false: maybe none).
    @usableFromInline
    internal func _wakeWriter() -> Bool {
        // Release: pairs with the acquire load of the sequence in `_lockWriteSlow`.
        _ = ilk_atomic_fetch_add_u32(_notifyWord, 1, ILK_ORDER_RELEASE)
        return _Futex.wakeOne(_notifyWord) > 0
    }

    /// Called by the thread that brought the count to 0 while a waiting bit was set.
    @usableFromInline @inline(never)
    internal func _wake(_ observed: UInt32, fromWriter: Bool) {
        let rw = _RWState.readersWaiting, ww = _RWState.writersWaiting
        var state = observed
        // If the lock is taken again meanwhile, its new holder wakes the waiters on unlock.
        if state == ww {
            // Relaxed: bits only (see the file comment).
            let found = ilk_atomic_cas_value_u32(_stateWord, state, 0, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found == state { _ = _wakeWriter(); return }
            state = found
        }
        if state == rw | ww {
            if fromWriter {
                // The readers' turn: they waited through a write section. WW stays set, so
                // readers arriving now still queue behind the waiting writer.
                let found = ilk_atomic_cas_value_u32(_stateWord, state, ww, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                if found != state { return }
                if _Futex.wakeAll(_stateWord) > 0 { return }
                // No reader was asleep (they timed out, or will see EAGAIN and retry): do not
                // leave the writers waiting on readers that may never come.
                if _wakeWriter() { return }
                // Nobody was asleep at all: WW is stale (a writer that slept keeps it set when it
                // takes the lock). Clear it, or new readers would be refused with nobody left to
                // clear it. A writer still on its way to sleep sees the notification word moved
                // (EAGAIN) and sets WW again.
                let cleared = ilk_atomic_cas_value_u32(_stateWord, ww, 0, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                // Readers that saw the stale WW may have set RW and gone to sleep since our
                // wake found nobody (regression: `rwlock-no-torn-reads` hung with the state at
                // RW|WW, count 0, every thread a sleeping reader; unit test:
                // `regressionWriterUnlockClearingStaleWriterBitWakesQueuedReaders`). If the lock is still free
                // with bits set, decide again on what we found; if it is held, its unlock wakes.
                if cleared != ww && cleared & _RWState.heldMask == 0 && cleared & _RWState.waitingBits != 0 {
                    _wake(cleared, fromWriter: true)
                }
                return
            }
            // The writers' turn: leave the readers queued.
            let found = ilk_atomic_cas_value_u32(_stateWord, state, rw, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found != state { return }
            if _wakeWriter() { return }
            // No writer was asleep: wake the readers instead of risking nobody.
            state = rw
        }
        if state == rw {
            let found = ilk_atomic_cas_value_u32(_stateWord, state, 0, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found == state { _Futex.wakeAll(_stateWord) }
        }
    }
}

/// The state word's encoding and predicates (see the table in the file comment).
@usableFromInline
internal enum _RWState {
    /// The reader count bits.
    @usableFromInline static var countMask: UInt32 { (1 << 29) - 1 }
    /// A writer holds the lock.
    @usableFromInline static var writeLocked: UInt32 { 1 << 29 }
    /// The bits that say the lock is held (by readers, or a writer).
    @usableFromInline static var heldMask: UInt32 { countMask | writeLocked }
    /// The largest reader count, leaving headroom below W for the in-flight optimistic
    /// increments of readers that are about to take them back (one per thread at most).
    @usableFromInline static var maxReaders: UInt32 { (1 << 29) - (1 << 16) }
    /// Readers may be sleeping on the state word.
    @usableFromInline static var readersWaiting: UInt32 { 1 << 30 }
    /// Writers may be sleeping on the notification word.
    @usableFromInline static var writersWaiting: UInt32 { 1 << 31 }
    /// Both waiting bits.
    @usableFromInline static var waitingBits: UInt32 { readersWaiting | writersWaiting }

    /// A new reader may take the lock: no writer holds it, nobody waits, the count has room.
    @inlinable @inline(__always)
    static func isReadLockable(_ state: UInt32) -> Bool {
        state & ~countMask == 0 && state < maxReaders
    }

    /// A reader woken for its turn may take the lock: not write-locked and room left.
    @inlinable @inline(__always)
    static func isReadLockableAfterWake(_ state: UInt32) -> Bool {
        state & writeLocked == 0 && state & countMask < maxReaders
    }

    @inlinable @inline(__always)
    static func isWriteLocked(_ state: UInt32) -> Bool { state & writeLocked != 0 }

    @usableFromInline @inline(never)
    static func _misuse(_ state: UInt32, _ operation: StaticString) -> Never {
        let count = state & countMask
        let held = state & writeLocked != 0 ? "write-locked" : count == 0 ? "not locked" : "read-locked by \(count) readers"
        fatalError("ReadWriteLock: \(operation) called on a lock that is \(held)")
    }

    @usableFromInline @inline(never)
    static func _tooManyReaders() -> Never {
        fatalError("ReadWriteLock: too many readers (\(maxReaders)) hold the lock")
    }
}
