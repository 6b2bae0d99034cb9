// SpinLock: a test-and-test-and-set spin lock with exponential backoff that yields the CPU
// after a bounded spin — OSSpinLock's role, without its priority-inversion trap.
//
// Algorithm: test-and-test-and-set (Rudolph & Segall 1984; Anderson, "The Performance of Spin
// Lock Alternatives for Shared-Memory Multiprocessors", 1990) with bounded exponential backoff
// (Anderson; Herlihy & Shavit, "The Art of Multiprocessor Programming", §7.4), in the shape of
// Concurrency Kit's fetch-and-store lock (ck_spinlock_fas): the uncontended lock is one
// exchange, the unlock one release store.
//
// State word (32 bits):
//
//   value  meaning
//   -----  --------------------------
//     0    free
//     1    held
//
// Waiting: a thread that finds the lock held reads the word (relaxed, from its own cache line
// copy, so waiters do not bounce the line) until it reads 0, then tries the exchange again.
// Between reads it pauses `backoff` times (`ilk_spin_pause`), doubling `backoff` up to
// `maxBackoff`. After `yieldAfter` pause rounds in total it calls `sched_yield` between
// reads instead, so a waiter whose lock holder was descheduled (the OSSpinLock problem on a
// 2-core machine with more threads than cores) gives the holder its CPU back instead of
// burning its whole time slice. It never parks in the kernel: use `Lock` for long sections.
//
// Invariants: only the holder writes 0; a thread holds the lock exactly when its exchange
// returned 0. Unlocking a free lock is detected (a relaxed load before the store) and traps.
//
// Memory ordering: the exchange that finds 0 is an acquire and pairs with the release store
// of the previous unlock, so critical sections are ordered. Waiting reads are relaxed: they
// only decide when to retry the acquiring exchange. The misuse check before the release store
// is relaxed: it is the holder reading its own last write, which coherence guarantees.

import CInterlock
import Synchronization

/// A spin lock: the cheapest lock to take and release when critical sections are a few
/// instructions long and contention is low. The heir of `OSSpinLock` and `os_unfair_lock`'s
/// spinning use.
///
/// Waiting threads spin with exponential backoff and, after a bounded spin, yield the CPU
/// between attempts, so a descheduled holder is not starved of CPU by its waiters. It never
/// sleeps in the kernel: for critical sections that may block or run long, use ``Lock``.
///
/// - Note: Not fair: a releasing thread can take the lock again ahead of waiters.
/// - Warning: Not recursive: locking it twice on one thread deadlocks. Unlocking a lock that
///   is not held traps.
public final class SpinLock: Locking, @unchecked Sendable {
    // Word 0: the lock word. Only ever accessed through `_word` (atomics: Swift's builtins on
    // the fast paths, the C shim's on the slow ones), never as a Swift property after `init`,
    // so exclusivity checking never sees it.
    @usableFromInline internal var _state: UInt32 = 0

    /// Creates an unlocked spin lock.
    public init() {}

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    @inlinable @inline(__always)
    internal var _word: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_state` is the first stored property of this final class, so it starts at
        // the first stored-property offset; objects never move, and `self` is alive.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self)
    }

    /// Blocks (spinning, then yielding) until the calling thread holds the lock.
    @inlinable @inline(__always)
    public func lock() {
        _LockOrder.willLock(self, .spinLock)
        // Acquire on the exchange that finds 0: pairs with the release store of `unlock`.
        // A builtin, not the shim: it stays inline in protocol witnesses (WordAtomics.swift).
        if _slowPath(_Word32.atomic(_word).pointee.exchange(1, ordering: .acquiring) != 0) {
            #if INTERLOCK_CONTENTION
            _lockSlowProfiled()
            #else
            _SpinWord._lockSlow(_word)
            #endif
        }
        _LockOrder.didLock(self, .spinLock)
    }

    #if INTERLOCK_CONTENTION
    /// The contended wait, recorded (ContentionRecorder.swift); its hold is not measured: the
    /// release is a plain store with no slow path.
    @usableFromInline @inline(never)
    internal func _lockSlowProfiled() {
        let probe = _Contention.begin()
        _SpinWord._lockSlow(_word)
        if probe != 0 { _Contention.end(probe, .spinLock, self) }
    }
    #endif

    /// Takes the lock if it is free, without waiting.
    /// - Returns: `true` when the calling thread now holds the lock.
    @inlinable @inline(__always)
    public func tryLock() -> Bool {
        // Relaxed test first (test-and-test-and-set): a failed try does not take the line
        // exclusive. Acquire on the exchange: pairs with the release store of `unlock`.
        let word = _Word32.atomic(_word)
        let taken =
            word.pointee.load(ordering: .relaxed) == 0
            && word.pointee.exchange(1, ordering: .acquiring) == 0
        if taken { _LockOrder.didLock(self, .spinLock) }
        return taken
    }

    /// Releases the lock, which the calling thread must hold.
    /// - Warning: Unlocking a lock that is not held traps.
    @inlinable @inline(__always)
    public func unlock() {
        _LockOrder.didUnlock(self)
        // Relaxed: the holder re-reading its own write (coherence); only detects misuse.
        let word = _Word32.atomic(_word)
        if _slowPath(word.pointee.load(ordering: .relaxed) == 0) {
            _SpinWord._unlockedMisuse()
        }
        // Release: pairs with the acquiring exchange of the next holder.
        word.pointee.store(0, ordering: .releasing)
    }
}

/// The waiting half of the spin lock algorithm (see the file comment).
@usableFromInline
internal enum _SpinWord {
    /// Pause rounds between two reads of the word, at most.
    @usableFromInline static var maxBackoff: UInt32 { 64 }
    /// Total pause rounds after which a waiter yields its CPU between reads.
    @usableFromInline static var yieldAfter: UInt32 { 4096 }

    @usableFromInline @inline(never)
    internal static func _lockSlow(_ word: UnsafeMutablePointer<UInt32>) {
        var backoff: UInt32 = 1
        var spun: UInt32 = 0
        repeat {
            // Relaxed: a hint read from the local cache line; the exchange below decides.
            while ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) != 0 {
                if spun < yieldAfter {
                    for _ in 0..<backoff { ilk_spin_pause() }
                    spun &+= backoff
                    if backoff < maxBackoff { backoff &<<= 1 }
                } else {
                    ilk_thread_yield()
                }
            }
            // Acquire: pairs with the release store of `unlock`.
        } while ilk_atomic_exchange_u32(word, 1, ILK_ORDER_ACQUIRE) != 0
    }

    @usableFromInline @inline(never)
    internal static func _unlockedMisuse() -> Never {
        fatalError("SpinLock: unlock() called on a lock that is not locked")
    }
}
