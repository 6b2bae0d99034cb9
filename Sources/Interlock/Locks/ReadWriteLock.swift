// ReadWriteLock: many readers or one writer, on futexes; writers preferred, readers not starved;
// the uncontended write lock is one exchange and its unlock a plain store.
//
// This file is the public face: the words in the object's one allocation (`ilk_rwlock_words`,
// CShims/include/ilk_rwlock.h) and the lock-order hooks. The algorithm, its state table,
// invariants and orderings are in ReadWriteLockCore.swift (`_RWLockCore`), which
// ReadWriteLocked shares.

import CInterlock

/// A reader-writer lock: any number of readers at once, or one writer alone.
///
/// Writers are preferred: while a writer waits, readers arriving later wait behind it and
/// ``tryLockRead()`` returns `false`, so a stream of readers cannot starve writers. Readers are
/// not starved either: a writer releasing the lock wakes sleeping readers to compete for it,
/// and once one of them has waited a millisecond, hands the lock to all of them before the next
/// writer gets in. Prefer ``withReadLock(_:)`` and ``withWriteLock(_:)``.
///
/// The uncontended write lock+unlock is one exchange and a plain store; the read lock+unlock
/// one atomic increment and one atomic decrement (Concurrency Kit's instructions).
///
/// - Warning: Neither lock is recursive: a thread that holds the read lock and asks for it again
///   while a writer waits deadlocks. Unlocking a lock not held in that mode traps.
public final class ReadWriteLock: @unchecked Sendable {
    // The words, laid out by `ilk_rwlock_words` (CShims/include/ilk_rwlock.h): W, Sw, N, RS, Sr,
    // the fence mode, A and E together, R in another 128-byte block; reached only through the
    // pointers below.
    @usableFromInline internal var _storage: ilk_rwlock_words

    /// Creates an unlocked reader-writer lock.
    public init() {
        _storage = _RWLockCore.initialWords()
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// Creates a lock in symmetric mode when `symmetricFences` is true (as on systems without
    /// membarrier), so that tests can run both modes on one machine.
    internal init(symmetricFences: Bool) {
        _storage = _RWLockCore.initialWords(symmetricFences: symmetricFences)
    }

    /// The algorithm over this lock's words.
    @inlinable @inline(__always)
    internal var _core: _RWLockCore {
        // SAFETY: `_storage` is the first stored property of this final class; objects never
        // move, and `self` is alive for the call. The words are disjoint 4- and 8-byte fields.
        _RWLockCore(UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(self)))
    }

    // MARK: Read lock

    /// Blocks until the calling thread holds the lock for reading.
    @inlinable @inline(__always)
    public func lockRead() {
        _LockOrder.willLock(self, .readWriteLockRead)
        #if INTERLOCK_CONTENTION
        _core.lockRead(profiling: self, .readWriteLockRead)
        #else
        _core.lockRead()
        #endif
        _LockOrder.didLock(self, .readWriteLockRead)
    }

    /// Takes the lock for reading if that is possible at once: not while a writer holds it or
    /// waits for it.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func tryLockRead() -> Bool {
        let taken = _core.tryLockRead()
        if taken { _LockOrder.didLock(self, .readWriteLockRead) }
        return taken
    }

    /// Takes the lock for reading, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockRead()``.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func lockRead(before deadline: ContinuousClock.Instant) -> Bool {
        #if INTERLOCK_CONTENTION
        let taken = _core.lockRead(before: deadline, profiling: self, .readWriteLockRead)
        #else
        let taken = _core.lockRead(before: deadline)
        #endif
        if taken { _LockOrder.didLock(self, .readWriteLockRead) }
        return taken
    }

    /// Releases the calling thread's read lock.
    /// - Warning: Traps when the lock is not held for reading.
    @inlinable @inline(__always)
    public func unlockRead() {
        _LockOrder.didUnlock(self)
        _core.unlockRead()
    }

    /// Runs `body` holding the lock for reading; releases it when `body` returns or throws.
    ///
    /// The error is typed: `body`'s own (`Never` when it cannot throw); callers written for
    /// the untyped form compile unchanged.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, after the lock has been released.
    @inlinable @inline(__always)
    public func withReadLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lockRead()
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body()
        } catch {
            unlockRead()
            throw error
        }
        unlockRead()
        return result
    }

    // MARK: Write lock

    /// Blocks until the calling thread holds the lock for writing.
    @inlinable @inline(__always)
    public func lockWrite() {
        _LockOrder.willLock(self, .readWriteLockWrite)
        #if INTERLOCK_CONTENTION
        _core.lockWrite(profiling: self, .readWriteLockWrite)
        #else
        _core.lockWrite()
        #endif
        _LockOrder.didLock(self, .readWriteLockWrite)
    }

    /// Takes the lock for writing if nobody holds it, without waiting.
    ///
    /// May also fail at the instant a reader that arrived while a writer waited is backing out
    /// (for a few instructions it counts as a reader); retry, or use ``lockWrite(before:)``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func tryLockWrite() -> Bool {
        let taken = _core.tryLockWrite()
        if taken { _LockOrder.didLock(self, .readWriteLockWrite) }
        return taken
    }

    /// Takes the lock for writing, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockWrite()``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func lockWrite(before deadline: ContinuousClock.Instant) -> Bool {
        #if INTERLOCK_CONTENTION
        let taken = _core.lockWrite(before: deadline, profiling: self, .readWriteLockWrite)
        #else
        let taken = _core.lockWrite(before: deadline)
        #endif
        if taken { _LockOrder.didLock(self, .readWriteLockWrite) }
        return taken
    }

    /// Releases the calling thread's write lock.
    /// - Warning: Traps when the lock is not held for writing.
    @inlinable @inline(__always)
    public func unlockWrite() {
        _LockOrder.didUnlock(self)
        _core.unlockWrite()
    }

    /// Runs `body` holding the lock for writing; releases it when `body` returns or throws.
    ///
    /// The error is typed, as in ``withReadLock(_:)``.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws, after the lock has been released.
    @inlinable @inline(__always)
    public func withWriteLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lockWrite()
        // No `defer`: the optimizer outlined its block into a call (objdump of a dependent).
        let result: R
        do {
            result = try body()
        } catch {
            unlockWrite()
            throw error
        }
        unlockWrite()
        return result
    }
}
