// RecursiveLock: a mutex that its holder may lock again, NSRecursiveLock's heir.
//
// Algorithm: an owner thread id and a depth over the futex mutex of `_MutexWord` (Drepper's
// mutex 3 with bounded spinning; see MutexWord.swift), the scheme of glibc's
// PTHREAD_MUTEX_RECURSIVE_NP: the first lock takes the mutex and records the owner; further
// locks by the owner only count; the unlock that brings the depth back to 0 clears the owner
// and releases the mutex.
//
// State (four 32-bit words in the object's one allocation, stable address):
//
//   word  name      written by                      meaning
//   ----  --------  ------------------------------  ----------------------------------------
//    0    mutex     _MutexWord                      0 unlocked, 1 locked, 2 locked + waiters
//    1    owner     the holder (relaxed atomics)    kernel tid of the holder, 0 when free
//    2    depth     the holder only (plain)         locks minus unlocks by the holder
//    3    guard     `name`                          guard word of `_name` (LockSupport.swift)
//
// Invariants:
//   - owner == t (t != 0) exactly while thread t holds the mutex; t writes it right after
//     taking the mutex and writes 0 right before releasing it.
//   - depth >= 1 while owner != 0; it is read and written only by the owner.
//
// Memory ordering:
//   - The mutex's acquire/release (MutexWord.swift) orders critical sections, including the
//     plain accesses to `depth`.
//   - `owner` is read with a relaxed load by threads asking "do I hold it?". A thread t reads
//     its own id there only if it wrote it itself and has not cleared it since (no other thread
//     ever writes t), and coherence guarantees a thread sees its own latest write to a
//     location; so the answer is exact for the asking thread without any ordering. Other
//     threads' values are only compared against and used in trap messages.
//   - The ids are the kernel's (gettid), never 0, from `ilk_current_thread_id` (cached per thread).

import CInterlock
import Synchronization

/// A mutex that the thread holding it may lock again: the heir of Foundation's
/// `NSRecursiveLock`.
///
/// The lock is free for other threads once the holder has called `unlock()` as many times as it
/// locked. Uncontended, it costs what ``Lock`` costs plus reading the thread id; re-locking by
/// the holder is a counter increment, and `tryLock()` and `lock(before:)` by the holder succeed
/// at once.
///
/// - Warning: An unlock by a thread that does not hold the lock traps with a message, and so
///   does an unlock while nobody holds it.
/// - Important: Across `fork()` without exec, the child's one thread has a new thread id, so
///   a lock held at the fork (by any thread) belongs, in the child, to a thread that does not
///   exist there: the child cannot take it (`tryLock()` fails, `lock()` waits forever) and
///   its `unlock()` traps, saying that it "does not own the lock" and which thread does. This
///   is what glibc does with a recursive or error-checking pthread mutex, whose unlock fails
///   in the child with EPERM. A lock that nobody held at the fork works in the child as
///   anywhere; to hold one across a fork, use ``Lock``, which the child may unlock.
public final class RecursiveLock: Locking, @unchecked Sendable {
    // Reached only through `_words` (see the file comment); never as a Swift property.
    @usableFromInline internal var _state: (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
    // Accessed only while holding the guard word (word 3).
    @usableFromInline internal var _name: String? = nil

    /// Creates an unlocked recursive lock.
    public init() {}

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// A name for the lock, used in trap messages; `nil` until set.
    ///
    /// Safe to read and set from any thread, holding the lock or not.
    public var name: String? {
        get { _LockNameGuard.withGuard(_words + 3) { _name } }
        set {
            _LockNameGuard.store(newValue, _words + 3) {
                let old = _name; _name = $0; return old
            }
        }
    }

    @inlinable @inline(__always)
    internal var _words: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_state` is the first stored property of this final class and a homogeneous
        // tuple (laid out as an array); objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    /// If the calling thread `tid` holds the lock, counts one more lock and returns `true`.
    @inlinable @inline(__always)
    internal func _relock(_ tid: UInt32) -> Bool {
        // Relaxed: only `tid` itself ever writes `tid` here (see the file comment).
        guard _Word32.atomic(_words + 1).pointee.load(ordering: .relaxed) == tid else { return false }
        let depth = _words + 2
        if _slowPath(depth.pointee == UInt32.max) { _misuse("locked too many times recursively") }
        depth.pointee &+= 1
        return true
    }

    /// Records the calling thread as the owner of the mutex it has just taken.
    @inlinable @inline(__always)
    internal func _own(_ tid: UInt32) {
        // Relaxed: read by other threads only for comparison with their own id.
        _Word32.atomic(_words + 1).pointee.store(tid, ordering: .relaxed)
        (_words + 2).pointee = 1
    }

    /// Blocks until the calling thread holds the lock; returns at once (counting) if it already
    /// does.
    @inlinable
    public func lock() {
        let tid = ilk_current_thread_id()
        if _relock(tid) {
            _LockOrder.didLock(self, .recursiveLock)
            return
        }
        _LockOrder.willLock(self, .recursiveLock)
        #if INTERLOCK_CONTENTION
        _MutexWord.lock(_words, for: .recursiveLock, profiling: self, .recursiveLock)
        #else
        _MutexWord.lock(_words, for: .recursiveLock)
        #endif
        _own(tid)
        _LockOrder.didLock(self, .recursiveLock)
    }

    /// Takes the lock if it is free or already held by the calling thread, without waiting.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable
    public func tryLock() -> Bool {
        let tid = ilk_current_thread_id()
        if _relock(tid) {
            _LockOrder.didLock(self, .recursiveLock)
            return true
        }
        guard _MutexWord.tryLock(_words) else { return false }
        _own(tid)
        _LockOrder.didLock(self, .recursiveLock)
        return true
    }

    /// Takes the lock, waiting at most until `deadline`; succeeds at once when the calling thread
    /// already holds it.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLock()``.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable
    public func lock(before deadline: ContinuousClock.Instant) -> Bool {
        let tid = ilk_current_thread_id()
        if _relock(tid) {
            _LockOrder.didLock(self, .recursiveLock)
            return true
        }
        #if INTERLOCK_CONTENTION
        let taken = _MutexWord.lock(_words, before: deadline, for: .recursiveLock, profiling: self, .recursiveLock)
        #else
        let taken = _MutexWord.lock(_words, before: deadline, for: .recursiveLock)
        #endif
        guard taken else { return false }
        _own(tid)
        _LockOrder.didLock(self, .recursiveLock)
        return true
    }

    /// Undoes one `lock()` by the calling thread; the lock is free for others once unlocks
    /// balance locks.
    /// - Warning: Traps when the calling thread does not hold the lock.
    @inlinable
    public func unlock() {
        let tid = ilk_current_thread_id()
        // Relaxed: exact for the asking thread (see the file comment).
        let owner = _Word32.atomic(_words + 1).pointee.load(ordering: .relaxed)
        if _slowPath(owner != tid) { _unlockMisuse(owner: owner, caller: tid) }
        _LockOrder.didUnlock(self)
        let depth = _words + 2
        depth.pointee &-= 1
        if depth.pointee == 0 {
            // Relaxed: cleared before the mutex's release, which publishes it to the next holder.
            _Word32.atomic(_words + 1).pointee.store(0, ordering: .relaxed)
            _ = _MutexWord.unlock(_words, for: .recursiveLock)
        }
    }

    @usableFromInline @inline(never)
    internal func _unlockMisuse(owner: UInt32, caller: UInt32) -> Never {
        if owner == 0 {
            _misuse("unlock() called on a lock that is not locked")
        }
        _misuse("unlock() called by thread \(caller), which does not own the lock (thread \(owner) does)")
    }

    @usableFromInline @inline(never)
    internal func _misuse(_ mistake: String) -> Never {
        _lockMisuse("RecursiveLock", name: name, mistake)
    }
}
