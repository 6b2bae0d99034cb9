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
//   bits 0-29  count   0: unlocked; 1...MAX_READERS: that many readers hold it;
//                      MASK (all ones): a writer holds it
//   bit 30     RW      readers may be sleeping on the state word
//   bit 31     WW      writers may be sleeping on the notification word
//
//   count        RW  WW  meaning
//   -----------  --  --  ------------------------------------------------------------------
//   0             0   0  free
//   0             *   *  free, waiters not yet woken by the unlocker, or in flight (momentary)
//   1...MAX       0   0  read-locked; a new reader may join
//   1...MAX       *   1  read-locked, a writer waits: new readers queue (RW) behind it
//   MASK          *   *  write-locked; waiters of either kind may sleep
//
// Notification word (32 bits): a counter that every writer wake-up increments, so that a
// writer about to sleep notices a wake-up that happened after it looked (futex on a sequence).
//
// Rules:
//   - A new reader takes the lock only when count < MAX_READERS and neither waiting bit is
//     set: while a writer waits, new readers wait behind it, and `tryLockRead` fails.
//   - A reader that was woken from the futex (its "turn") may take the lock whenever it is not
//     write-locked, ignoring the waiting bits.
//   - A writer takes the lock whenever count == 0, whatever the bits; after it has slept once
//     it keeps WW set when it takes the lock, since other writers may still sleep.
//   - Sleepers set their bit before sleeping; the thread that brings count to 0 while a bit
//     is set clears bits and wakes (`_wake`): last reader -> a writer (else the readers);
//     writer -> the waiting readers if any (else a writer).
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
//   - Taking the lock (read or write) is a CAS with acquire; releasing is a fetch-sub with
//     release; they pair, and the relaxed CASes that clear or set waiting bits are
//     read-modify-writes, so they continue the release sequence of the last unlock.
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
        // Relaxed: only a guess for the CAS, which re-checks atomically.
        let state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
        if _fastPath(_RWState.isReadLockable(state)
            // Acquire: pairs with the release fetch-sub of the last unlock (a writer's).
            && ilk_atomic_cas_value_u32(_stateWord, state, state &+ 1, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == state)
        {
            return
        }
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
        let count = old & _RWState.mask
        if _slowPath(count == 0 || count == _RWState.mask) { _RWState._misuse(old, "unlockRead()") }
        let new = old &- 1
        if _slowPath(new & _RWState.mask == 0 && new & _RWState.waitingBits != 0) {
            _wake(new, fromWriter: false)
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
        if _slowPath(ilk_atomic_cas_value_u32(_stateWord, 0, _RWState.mask, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) != 0) {
            _ = _lockWriteSlow(deadline: nil)
        }
    }

    /// Takes the lock for writing if nobody holds it, without waiting.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func tryLockWrite() -> Bool {
        // Relaxed: a guess for the CAS.
        var state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
        while state & _RWState.mask == 0 {
            // Acquire: pairs with the release fetch-sub of the last unlock.
            let found = ilk_atomic_cas_value_u32(
                _stateWord, state, state | _RWState.mask, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
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
        let old = ilk_atomic_fetch_sub_u32(_stateWord, _RWState.mask, ILK_ORDER_RELEASE)
        if _slowPath(old & _RWState.mask != _RWState.mask) { _RWState._misuse(old, "unlockWrite()") }
        let new = old &- _RWState.mask
        if _slowPath(new != 0) { _wake(new, fromWriter: true) }
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

    /// Spins up to `_RWState.spinLimit` rounds until `done(state)`; returns the last state read.
    @inline(__always)
    internal func _spin(until done: (UInt32) -> Bool) -> UInt32 {
        var rounds = _RWState.spinLimit
        while true {
            // Relaxed: a snapshot to decide what to try next; every taking CAS re-checks.
            let state = ilk_atomic_load_u32(_stateWord, ILK_ORDER_RELAXED)
            if done(state) || rounds == 0 { return state }
            ilk_spin_pause()
            rounds -= 1
        }
    }

    /// Spins until a reader may get in, or someone is queued (then spinning is pointless).
    internal func _spinRead() -> UInt32 {
        _spin { !_RWState.isWriteLocked($0) || $0 & _RWState.waitingBits != 0 }
    }

    /// Spins until the lock is free, or a writer is queued.
    internal func _spinWrite() -> UInt32 {
        _spin { $0 & _RWState.mask == 0 || $0 & _RWState.writersWaiting != 0 }
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
            if _slowPath(state & _RWState.mask == _RWState.maxReaders) {
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
            if state & _RWState.mask == 0 {
                // Acquire: pairs with the release fetch-sub of the last unlock.
                let found = ilk_atomic_cas_value_u32(
                    _stateWord, state, state | _RWState.mask | otherWritersWaiting,
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
            if state & _RWState.mask == 0 || state & _RWState.writersWaiting == 0 { continue }
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
                if cleared != ww && cleared & _RWState.mask == 0 && cleared & _RWState.waitingBits != 0 {
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
    /// The count bits; all ones means write-locked.
    @usableFromInline static var mask: UInt32 { (1 << 30) - 1 }
    /// The largest reader count.
    @usableFromInline static var maxReaders: UInt32 { mask - 1 }
    /// Readers may be sleeping on the state word.
    @usableFromInline static var readersWaiting: UInt32 { 1 << 30 }
    /// Writers may be sleeping on the notification word.
    @usableFromInline static var writersWaiting: UInt32 { 1 << 31 }
    /// Both waiting bits.
    @usableFromInline static var waitingBits: UInt32 { readersWaiting | writersWaiting }
    /// Spin rounds before sleeping (as Rust's; a reader or writer section is short or long,
    /// and spinning longer only helps short ones, which the fast path already covers).
    @usableFromInline static var spinLimit: Int { 100 }

    /// A new reader may take the lock: nobody waits and the count has room.
    @inlinable @inline(__always)
    static func isReadLockable(_ state: UInt32) -> Bool {
        state & mask < maxReaders && state & waitingBits == 0
    }

    /// A reader woken for its turn may take the lock: not write-locked and room left.
    @inlinable @inline(__always)
    static func isReadLockableAfterWake(_ state: UInt32) -> Bool {
        state & mask < maxReaders
    }

    @inlinable @inline(__always)
    static func isWriteLocked(_ state: UInt32) -> Bool { state & mask == mask }

    @usableFromInline @inline(never)
    static func _misuse(_ state: UInt32, _ operation: StaticString) -> Never {
        let count = state & mask
        let held = count == 0 ? "not locked" : count == mask ? "write-locked" : "read-locked by \(count) readers"
        fatalError("ReadWriteLock: \(operation) called on a lock that is \(held)")
    }

    @usableFromInline @inline(never)
    static func _tooManyReaders() -> Never {
        fatalError("ReadWriteLock: too many readers (\(maxReaders)) hold the lock")
    }
}
