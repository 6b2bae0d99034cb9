// swift-format-ignore-file: AlwaysUseLowerCamelCase
// OSSpinLock: Apple's deprecated spin lock (<libkern/OSSpinLockDeprecated.h>) with the Swift
// signatures of Darwin's SDK import, over Interlock's spin lock algorithm (SpinLock.swift,
// whose waiting half is internal to Interlock and is restated here on the Int32).
//
// Algorithm: test-and-test-and-set with bounded exponential backoff, then yielding the CPU.
//
// State word (the caller's Int32):
//
//   value  meaning
//   -----  --------------------------
//     0    free (OS_SPINLOCK_INIT)
//     1    held
//
// Transitions:
//   lock     exchange(1) (acquire); while it returned non-zero: read the word (relaxed) until
//            it reads 0, pausing 1, 2, 4 ... 64 rounds between reads, and after 4096 pause
//            rounds in all calling sched_yield between reads instead; then exchange(1) again
//   try      a relaxed read that must see 0, then exchange(1) (acquire) that must return 0
//   unlock   a relaxed read that must see non-zero (misuse check), then store 0 (release)
//
// Invariants: a thread holds the lock exactly when its exchange returned 0; only the holder
// writes 0. Yielding after a bounded spin keeps a waiter from starving a descheduled holder of
// CPU (the priority-inversion trap that got OSSpinLock deprecated on Darwin: there a waiter
// of higher priority spins forever; here it yields).
//
// Unlocking a lock that is not held: Darwin stores 0 and says nothing. Interlock traps, with a
// message naming OSSpinLockUnlock, as its SpinLock does: an unbalanced unlock is a bug that
// would otherwise let two threads into the critical section later.
//
// Memory ordering: the exchange that finds 0 is an acquire and pairs with the release store
// of the previous unlock, so critical sections are ordered. Waiting reads and the try's first
// read are relaxed: they only decide when to attempt the acquiring exchange. The misuse
// check in unlock is relaxed: it is the holder reading its own last write (coherence).

import CInterlock
import Synchronization

/// Apple's spin lock type: an `Int32`, 0 when free.
public typealias OSSpinLock = Int32

/// The value of an unlocked ``OSSpinLock``, as Darwin imports the `OS_SPINLOCK_INIT` macro.
public var OS_SPINLOCK_INIT: OSSpinLock { 0 }

/// The lock's `Int32` viewed as a Swift atomic (the fast paths' builtins).
@inlinable @inline(__always)
internal func _osSpinAtomic(_ lock: UnsafeMutablePointer<OSSpinLock>) -> UnsafeMutablePointer<Atomic<Int32>> {
    // SAFETY: Atomic<Int32> has Int32's size, alignment and bits; the caller keeps the lock at a
    // stable address and accesses it only through these functions (all atomic).
    UnsafeMutableRawPointer(lock).assumingMemoryBound(to: Atomic<Int32>.self)
}

/// Blocks until the calling thread holds the spin lock at `__lock` (spinning, then yielding
/// the CPU between attempts). Not recursive: locking it twice on one thread spins forever.
@inlinable
public func OSSpinLockLock(_ __lock: UnsafeMutablePointer<OSSpinLock>!) {
    // Acquire on the exchange that finds 0: pairs with the release store of OSSpinLockUnlock.
    // Builtin atomics on the fast paths: inline in protocol witnesses too (Interlock's
    // WordAtomics.swift).
    if _slowPath(_osSpinAtomic(__lock).pointee.exchange(1, ordering: .acquiring) != 0) {
        _osSpinLockLockSlow(__lock)
    }
}

/// Takes the spin lock at `__lock` if it is free, without waiting.
/// - Returns: `true` when the calling thread now holds the lock.
@inlinable
public func OSSpinLockTry(_ __lock: UnsafeMutablePointer<OSSpinLock>!) -> Bool {
    // Relaxed test first (test-and-test-and-set): a failed try does not take the line
    // exclusive. Acquire on the exchange: pairs with the release store of OSSpinLockUnlock.
    let word = _osSpinAtomic(__lock)
    return word.pointee.load(ordering: .relaxed) == 0 && word.pointee.exchange(1, ordering: .acquiring) == 0
}

/// Releases the spin lock at `__lock`, which the calling thread must hold.
///
/// Where Darwin stores 0 into a lock that is not held and says nothing, this traps with a
/// message naming `OSSpinLockUnlock` (the file comment says why).
@inlinable
public func OSSpinLockUnlock(_ __lock: UnsafeMutablePointer<OSSpinLock>!) {
    // Relaxed: the holder re-reading its own write (coherence); only detects misuse.
    let word = _osSpinAtomic(__lock)
    if _slowPath(word.pointee.load(ordering: .relaxed) == 0) {
        _osSpinLockUnlockedMisuse()
    }
    // Release: pairs with the acquiring exchange of the next holder.
    word.pointee.store(0, ordering: .releasing)
}

/// Pause rounds between two reads of the word, at most.
@usableFromInline internal let _osSpinLockMaxBackoff: UInt32 = 64
/// Total pause rounds after which a waiter yields its CPU between reads.
@usableFromInline internal let _osSpinLockYieldAfter: UInt32 = 4096

/// The waiting half of OSSpinLockLock (the file comment).
@usableFromInline @inline(never)
internal func _osSpinLockLockSlow(_ word: UnsafeMutablePointer<OSSpinLock>) {
    var backoff: UInt32 = 1
    var spun: UInt32 = 0
    repeat {
        // Relaxed: a hint read from the local cache line; the exchange below decides.
        while ilk_atomic_load_i32(word, ILK_ORDER_RELAXED) != 0 {
            if spun < _osSpinLockYieldAfter {
                for _ in 0..<backoff { ilk_spin_pause() }
                spun &+= backoff
                if backoff < _osSpinLockMaxBackoff { backoff &<<= 1 }
            } else {
                ilk_thread_yield()
            }
        }
        // Acquire: pairs with the release store of OSSpinLockUnlock.
    } while ilk_atomic_exchange_i32(word, 1, ILK_ORDER_ACQUIRE) != 0
}

@usableFromInline @inline(never)
internal func _osSpinLockUnlockedMisuse() -> Never {
    fatalError("OSSpinLockUnlock: unlock of a lock that is not locked")
}
