// Lock: the mutex, NSLock's heir, on a futex.
//
// Algorithm: `_MutexWord` (MutexWord.swift) — Drepper's three-state futex mutex ("Futexes Are
// Tricky", mutex 3) with bounded spinning before parking. That file holds the state table, the
// invariants and the argument for each memory ordering; this one is the public face.
//
// Layout: the object's stored properties, in one heap allocation at a stable address:
//
//   _words.0   the mutex word: 0 unlocked, 1 locked, 2 locked and maybe waiters
//   _words.1   the guard word of `name` (0 free, 1 held), see LockSupport.swift
//   _name      the name, read only under its guard, and only when trapping or asked
//
// The words are reached through `_getUnsafePointerToStoredProperties` and atomics only (Swift's
// builtins on the fast paths, WordAtomics.swift; the C shim's on the slow ones);
// Swift never loads or stores `_words` as a property after `init`.
//
// Costs: `lock()` is one inline CAS when the lock is free, `unlock()` one inline decrement,
// with a system call only when a thread is parked.

import CInterlock

/// A mutual-exclusion lock (mutex): the heir of Foundation's `NSLock`.
///
/// Threads that find it held spin briefly, then sleep in the kernel (a futex) until the holder
/// releases it; an uncontended `lock()`/`unlock()` pair is two atomic instructions and no system
/// call. Prefer ``Locking/withLock(_:)``, which cannot forget to unlock.
///
/// - Note: Not fair: a thread that arrives while the lock is being released may take it ahead of
///   threads that sleep (as glibc's mutex and `NSLock` on Linux).
/// - Warning: Not recursive: locking it twice on one thread deadlocks (use ``RecursiveLock``).
///   Unlocking a lock that is not locked traps with a message naming the lock.
/// - Note: A lock has no owner, so after `fork()` without exec the child may unlock a lock
///   that was held at the fork (the pthread_atfork pattern: lock before the fork, unlock in
///   parent and child), as with glibc's default mutex. If a thread other than the forking one
///   held it, the data it guards may be half updated in the child.
public final class Lock: Locking, @unchecked Sendable {
    // Reached only through `_word`/`_nameGuard` (see the file comment).
    @usableFromInline internal var _words: (UInt32, UInt32) = (0, 0)
    // Accessed only while holding the guard word `_words.1`.
    @usableFromInline internal var _name: String? = nil

    /// Creates an unlocked lock.
    public init() {}

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// A name for the lock, used in trap messages; `nil` until set.
    ///
    /// Safe to read and set from any thread, holding the lock or not.
    public var name: String? {
        get { _LockNameGuard.withGuard(_nameGuard) { _name } }
        set {
            _LockNameGuard.store(newValue, _nameGuard) {
                let old = _name; _name = $0; return old
            }
        }
    }

    @inlinable @inline(__always)
    internal var _word: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_words` is the first stored property of this final class and a homogeneous
        // tuple (laid out as an array); objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    @usableFromInline
    internal var _nameGuard: UnsafeMutablePointer<UInt32> { _word + 1 }

    /// Blocks until the calling thread holds the lock.
    @inlinable @inline(__always)
    public func lock() {
        _LockOrder.willLock(self, .lock)
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_word, for: .lock, profiling: self, .lock)
        #else
        _MutexWord.lock(_word, for: .lock)
        #endif
        _LockOrder.didLock(self, .lock)
    }

    /// Takes the lock if it is free, without waiting.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable @inline(__always)
    public func tryLock() -> Bool {
        let taken = _MutexWord.tryLock(_word)
        if taken { _LockOrder.didLock(self, .lock) }
        return taken
    }

    /// Takes the lock, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLock()``.
    /// - Returns: `true` when the calling thread now holds the lock, `false` when the deadline
    ///   passed first.
    @inlinable @inline(__always)
    public func lock(before deadline: ContinuousClock.Instant) -> Bool {
        #if INTERLOCK_CONTENTION
        let taken = _MutexWord.lock(_word, before: deadline, for: .lock, profiling: self, .lock)
        #else
        let taken = _MutexWord.lock(_word, before: deadline, for: .lock)
        #endif
        if taken { _LockOrder.didLock(self, .lock) }
        return taken
    }

    /// Releases the lock, which the calling thread must hold.
    /// - Warning: Unlocking a lock that is not locked traps with a message naming the lock.
    @inlinable @inline(__always)
    public func unlock() {
        _LockOrder.didUnlock(self)
        if _slowPath(!_MutexWord.unlock(_word, for: .lock)) { _unlockedMisuse() }
    }

    @usableFromInline @inline(never)
    internal func _unlockedMisuse() -> Never {
        _lockMisuse("Lock", name: name, "unlock() called on a lock that is not locked")
    }
}
