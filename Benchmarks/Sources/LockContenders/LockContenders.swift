// The contenders of the lock benchmarks: one type per lock and library, each doing the
// benchmark's critical section — add one to a plain Int — its natural way. Interlock's types
// are used directly; NSLock and NSRecursiveLock from Foundation; Swift's Synchronization.Mutex
// (as `Mutex<Void>`, see below); NIO's NIOLock; glibc's pthread locks through LockPeers'
// inline wrappers (the same call into glibc a C program makes); Concurrency Kit's spin locks and
// rwlock through the same wrappers (CK's operations are inline themselves, so the whole lock
// inlines into the Swift loop, as into a C one).
//
// The protected Int lives in its own allocation (`PlainCounter`) and is reached through a
// pointer, so no contender pays Swift's dynamic exclusivity check on a class property, and
// every contender of a group touches the same lines: its lock's and the counter's. That
// includes Synchronization.Mutex, used as `Mutex<Void>` around the same counter. A
// `Mutex<Int>` that holds the counter itself keeps it on the lock word's cache line: one line
// fewer per operation (5 % of an uncontended lock+unlock, and a contended hand-off moves one
// line instead of two), which measures the data's placement rather than the lock. Such
// value-holding locks (`Mutex<Int>`, NIO's `NIOLockedValueBox<Int>`) are compared among
// themselves in the "Mutex, value inline" groups.
// Every contender is a final class created once per benchmark and captured in a `let`, and the
// workloads are generic over it: each closure is a specialized loop, no existential, no
// retain/release per operation. Shared by LocksBenchmarks (package-benchmark) and Interleaved
// (interleaved rounds): package-visible, every hot member inlinable, so that a loop in either
// target is as direct as one inside this module.

import Foundation
import Interlock
import InterlockCompat
import LockPeers
import NIOConcurrencyHelpers
import Synchronization

/// A plain Int at a stable address, 128-byte aligned: the data a lock protects.
package final class PlainCounter: @unchecked Sendable {
    package let pointer: UnsafeMutablePointer<Int>
    package init() {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: 128, alignment: 128)
        pointer = raw.bindMemory(to: Int.self, capacity: 1)
        pointer.initialize(to: 0)
    }
    deinit { UnsafeMutableRawPointer(pointer).deallocate() }
}

/// A mutual-exclusion lock protecting one counter.
package protocol CounterLock: AnyObject, Sendable {
    /// The contender's name in benchmark names: `<Workload> / <threads> / <contenderName>`.
    static var contenderName: String { get }
    init()
    /// Lock; add one to the counter; unlock.
    func incrementUnderLock()
    /// The counter, read under the lock (after a benchmark, to verify it).
    func countUnderLock() -> Int
}

// MARK: - Mutexes

/// Interlock's `Lock` (futex mutex).
package final class InterlockLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock Lock" }
    package init() {}
    package let lock = Interlock.Lock()  // qualified: NIOConcurrencyHelpers has a `Lock` too
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

/// InterlockCompat's `os_unfair_lock` (a futex lock whose word records its owner), used as
/// Darwin code uses it: a word at a stable address, through the C-style functions. Beside
/// `Interlock Lock` to show what the compat layer (the owner check) costs, if anything.
package final class CompatUnfairLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "InterlockCompat os_unfair_lock" }
    package init() {}
    package let lock: os_unfair_lock_t = {
        let pointer = os_unfair_lock_t.allocate(capacity: 1)
        pointer.initialize(to: os_unfair_lock())
        return pointer
    }()
    package let counter = PlainCounter()
    deinit { lock.deallocate() }
    @inlinable @inline(__always) package func incrementUnderLock() {
        os_unfair_lock_lock(lock)
        counter.pointer.pointee += 1
        os_unfair_lock_unlock(lock)
    }
    package func countUnderLock() -> Int {
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        return counter.pointer.pointee
    }
}

/// InterlockCompat's `OSAllocatedUnfairLock` (`os_unfair_lock` in a ManagedBuffer), as
/// `OSAllocatedUnfairLock<Void>` around the same external counter, like `Mutex<Void>`.
package final class CompatAllocatedUnfairLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "InterlockCompat OSAllocatedUnfairLock" }
    package init() {}
    package let lock = OSAllocatedUnfairLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLockUnchecked { counter.pointer.pointee } }
}

/// glibc's `pthread_mutex_t` with default attributes.
package final class PthreadMutexContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "pthread mutex" }
    package init() {}
    package let mutex = ilk_peer_mutex_create(Int32(ILK_PEER_MUTEX_DEFAULT))!
    package let counter = PlainCounter()
    deinit { ilk_peer_mutex_destroy(mutex) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_mutex_lock(mutex)
        counter.pointer.pointee += 1
        ilk_peer_mutex_unlock(mutex)
    }
    package func countUnderLock() -> Int {
        ilk_peer_mutex_lock(mutex)
        defer { ilk_peer_mutex_unlock(mutex) }
        return counter.pointer.pointee
    }
}

/// glibc's `pthread_mutex_t` of kind `PTHREAD_MUTEX_ADAPTIVE_NP` (spins, then sleeps).
package final class PthreadAdaptiveMutexContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "pthread mutex adaptive" }
    package init() {}
    package let mutex = ilk_peer_mutex_create(Int32(ILK_PEER_MUTEX_ADAPTIVE))!
    package let counter = PlainCounter()
    deinit { ilk_peer_mutex_destroy(mutex) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_mutex_lock(mutex)
        counter.pointer.pointee += 1
        ilk_peer_mutex_unlock(mutex)
    }
    package func countUnderLock() -> Int {
        ilk_peer_mutex_lock(mutex)
        defer { ilk_peer_mutex_unlock(mutex) }
        return counter.pointer.pointee
    }
}

/// Foundation's `NSLock` (swift-corelibs-foundation: a pthread mutex).
package final class NSLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "NSLock" }
    package init() {}
    package let lock = NSLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

/// Swift's `Synchronization.Mutex` (priority-inheritance futex on Linux) protecting the same
/// external counter as every other contender of the "Mutex" groups: `Mutex<Void>`, the shape
/// of NSLock-style code ported to it. (`Mutex<Int>` with the value inside is measured in the
/// "Mutex, value inline" groups, where the value shares the lock's cache line.)
package final class SynchronizationMutexContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Synchronization.Mutex" }
    package init() {}
    package let mutex = Mutex<Void>(())
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        mutex.withLock { _ in counter.pointer.pointee += 1 }
    }
    package func countUnderLock() -> Int { mutex.withLock { _ in counter.pointer.pointee } }
}

/// swift-nio's `NIOLock` (a pthread mutex in a ManagedBuffer).
package final class NIOLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "NIOLock" }
    package init() {}
    package let lock = NIOLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

// MARK: - Mutexes holding their value inline

/// Swift's `Synchronization.Mutex<Int>`: the counter lives inside the mutex, on the lock
/// word's cache line, so a contended hand-off moves one line instead of two.
package final class SynchronizationMutexInlineContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Synchronization.Mutex<Int>" }
    package init() {}
    package let mutex = Mutex<Int>(0)
    @inlinable @inline(__always) package func incrementUnderLock() {
        mutex.withLock { $0 += 1 }
    }
    package func countUnderLock() -> Int { mutex.withLock { $0 } }
}

/// InterlockCompat's `OSAllocatedUnfairLock<Int>`, as Darwin code mostly uses it: the state
/// inside the lock's allocation, changed in `withLock`.
package final class CompatAllocatedUnfairLockInlineContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "InterlockCompat OSAllocatedUnfairLock<Int>" }
    package init() {}
    package let lock = OSAllocatedUnfairLock(initialState: 0)
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.withLock { $0 += 1 }
    }
    package func countUnderLock() -> Int { lock.withLock { $0 } }
}

/// swift-nio's `NIOLockedValueBox<Int>` (a pthread mutex and the value in one ManagedBuffer).
package final class NIOLockedValueBoxContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "NIOLockedValueBox<Int>" }
    package init() {}
    package let box = NIOLockedValueBox<Int>(0)
    @inlinable @inline(__always) package func incrementUnderLock() {
        box.withLockedValue { $0 += 1 }
    }
    package func countUnderLock() -> Int { box.withLockedValue { $0 } }
}

/// Interlock's `Locked<Int>`: the counter inside the lock's one allocation, changed in
/// `withLock` (Lock's algorithm plus the owner word of the relock check).
package final class InterlockLockedContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock Locked<Int>" }
    package init() {}
    package let locked = Locked(0)
    @inlinable @inline(__always) package func incrementUnderLock() {
        locked.withLock { $0 += 1 }
    }
    package func countUnderLock() -> Int { locked.withLock { $0 } }
}

/// A glibc `pthread_mutex_t` (default kind) with the Int in the same 128-byte block, 64 bytes
/// after the mutex: what a C programmer writes for "a mutex and its data".
package final class PthreadMutexInlineContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "pthread mutex + Int" }
    package let mutex = ilk_peer_mutex_create(Int32(ILK_PEER_MUTEX_DEFAULT))!
    package let value: UnsafeMutablePointer<Int>
    package init() {
        // The peer's block is 128 bytes (128-aligned, zeroed); the mutex takes the first 40.
        value = (UnsafeMutableRawPointer(mutex) + 64).bindMemory(to: Int.self, capacity: 1)
    }
    deinit { ilk_peer_mutex_destroy(mutex) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_mutex_lock(mutex)
        value.pointee += 1
        ilk_peer_mutex_unlock(mutex)
    }
    package func countUnderLock() -> Int {
        ilk_peer_mutex_lock(mutex)
        defer { ilk_peer_mutex_unlock(mutex) }
        return value.pointee
    }
}

// MARK: - Spin locks

/// Interlock's `SpinLock`.
package final class InterlockSpinLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock SpinLock" }
    package init() {}
    package let lock = SpinLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

/// InterlockCompat's `OSSpinLock`: an `Int32` at a stable address, through Darwin's functions
/// (the algorithm of `SpinLock`).
package final class CompatOSSpinLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "InterlockCompat OSSpinLock" }
    package init() {}
    package let lock: UnsafeMutablePointer<OSSpinLock> = {
        let pointer = UnsafeMutablePointer<OSSpinLock>.allocate(capacity: 1)
        pointer.initialize(to: OS_SPINLOCK_INIT)
        return pointer
    }()
    package let counter = PlainCounter()
    deinit { lock.deallocate() }
    @inlinable @inline(__always) package func incrementUnderLock() {
        OSSpinLockLock(lock)
        counter.pointer.pointee += 1
        OSSpinLockUnlock(lock)
    }
    package func countUnderLock() -> Int {
        OSSpinLockLock(lock)
        defer { OSSpinLockUnlock(lock) }
        return counter.pointer.pointee
    }
}

/// glibc's `pthread_spinlock_t`.
package final class PthreadSpinContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "pthread spinlock" }
    package init() {}
    package let spin = ilk_peer_spin_create()!
    package let counter = PlainCounter()
    deinit { ilk_peer_spin_destroy(spin) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_spin_lock(spin)
        counter.pointer.pointee += 1
        ilk_peer_spin_unlock(spin)
    }
    package func countUnderLock() -> Int {
        ilk_peer_spin_lock(spin)
        defer { ilk_peer_spin_unlock(spin) }
        return counter.pointer.pointee
    }
}

/// Concurrency Kit's fetch-and-store spin lock (`ck_spinlock_fas`): never sleeps; waiters spin
/// on a load and swap again when it reads free, so the unlocking thread's core does not always
/// win the next round (no FIFO order).
package final class CKSpinlockFASContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "CK spinlock fas" }
    package init() {}
    package let spin = ilk_peer_ck_fas_create()!
    package let counter = PlainCounter()
    deinit { ilk_peer_ck_fas_destroy(spin) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_ck_fas_lock(spin)
        counter.pointer.pointee += 1
        ilk_peer_ck_fas_unlock(spin)
    }
    package func countUnderLock() -> Int {
        ilk_peer_ck_fas_lock(spin)
        defer { ilk_peer_ck_fas_unlock(spin) }
        return counter.pointer.pointee
    }
}

/// Concurrency Kit's ticket spin lock (`ck_spinlock_ticket`): never sleeps; FIFO, each waiter
/// takes a ticket with one fetch-and-add and spins on a load until its number is served, so a
/// preempted waiter stalls every waiter behind it.
package final class CKSpinlockTicketContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "CK spinlock ticket" }
    package init() {}
    package let spin = ilk_peer_ck_ticket_create()!
    package let counter = PlainCounter()
    deinit { ilk_peer_ck_ticket_destroy(spin) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_ck_ticket_lock(spin)
        counter.pointer.pointee += 1
        ilk_peer_ck_ticket_unlock(spin)
    }
    package func countUnderLock() -> Int {
        ilk_peer_ck_ticket_lock(spin)
        defer { ilk_peer_ck_ticket_unlock(spin) }
        return counter.pointer.pointee
    }
}

// MARK: - Recursive locks

/// Interlock's `RecursiveLock`.
package final class InterlockRecursiveLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock RecursiveLock" }
    package init() {}
    package let lock = RecursiveLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

/// glibc's `pthread_mutex_t` of kind `PTHREAD_MUTEX_RECURSIVE`.
package final class PthreadRecursiveMutexContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "pthread recursive mutex" }
    package init() {}
    package let mutex = ilk_peer_mutex_create(Int32(ILK_PEER_MUTEX_RECURSIVE))!
    package let counter = PlainCounter()
    deinit { ilk_peer_mutex_destroy(mutex) }
    @inlinable @inline(__always) package func incrementUnderLock() {
        ilk_peer_mutex_lock(mutex)
        counter.pointer.pointee += 1
        ilk_peer_mutex_unlock(mutex)
    }
    package func countUnderLock() -> Int {
        ilk_peer_mutex_lock(mutex)
        defer { ilk_peer_mutex_unlock(mutex) }
        return counter.pointer.pointee
    }
}

/// Foundation's `NSRecursiveLock`.
package final class NSRecursiveLockContender: CounterLock, @unchecked Sendable {
    package static var contenderName: String { "NSRecursiveLock" }
    package init() {}
    package let lock = NSRecursiveLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func incrementUnderLock() {
        lock.lock()
        counter.pointer.pointee += 1
        lock.unlock()
    }
    package func countUnderLock() -> Int { lock.withLock { counter.pointer.pointee } }
}

// MARK: - Reader-writer locks

/// A reader-writer lock protecting one counter.
package protocol CounterRWLock: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    /// Read-lock; read the counter; unlock.
    func readUnderLock() -> Int
    /// Write-lock; add one to the counter; unlock.
    func incrementUnderWriteLock()
}

/// Interlock's `ReadWriteLock`.
package final class InterlockRWLockContender: CounterRWLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock ReadWriteLock" }
    package init() {}
    package let lock = ReadWriteLock()
    package let counter = PlainCounter()
    @inlinable @inline(__always) package func readUnderLock() -> Int {
        lock.lockRead()
        let value = counter.pointer.pointee
        lock.unlockRead()
        return value
    }
    @inlinable @inline(__always) package func incrementUnderWriteLock() {
        lock.lockWrite()
        counter.pointer.pointee += 1
        lock.unlockWrite()
    }
}

/// glibc's `pthread_rwlock_t`, default kind (prefers readers).
package final class PthreadRWLockContender: CounterRWLock, @unchecked Sendable {
    package static var contenderName: String { "pthread rwlock" }
    package init() {}
    package let rwlock = ilk_peer_rwlock_create(Int32(ILK_PEER_RWLOCK_DEFAULT))!
    package let counter = PlainCounter()
    deinit { ilk_peer_rwlock_destroy(rwlock) }
    @inlinable @inline(__always) package func readUnderLock() -> Int {
        ilk_peer_rwlock_rdlock(rwlock)
        let value = counter.pointer.pointee
        ilk_peer_rwlock_unlock(rwlock)
        return value
    }
    @inlinable @inline(__always) package func incrementUnderWriteLock() {
        ilk_peer_rwlock_wrlock(rwlock)
        counter.pointer.pointee += 1
        ilk_peer_rwlock_unlock(rwlock)
    }
}

/// glibc's `pthread_rwlock_t` of kind `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`.
package final class PthreadWriterPreferringRWLockContender: CounterRWLock, @unchecked Sendable {
    package static var contenderName: String { "pthread rwlock prefer-writer" }
    package init() {}
    package let rwlock = ilk_peer_rwlock_create(Int32(ILK_PEER_RWLOCK_PREFER_WRITER))!
    package let counter = PlainCounter()
    deinit { ilk_peer_rwlock_destroy(rwlock) }
    @inlinable @inline(__always) package func readUnderLock() -> Int {
        ilk_peer_rwlock_rdlock(rwlock)
        let value = counter.pointer.pointee
        ilk_peer_rwlock_unlock(rwlock)
        return value
    }
    @inlinable @inline(__always) package func incrementUnderWriteLock() {
        ilk_peer_rwlock_wrlock(rwlock)
        counter.pointer.pointee += 1
        ilk_peer_rwlock_unlock(rwlock)
    }
}

/// Concurrency Kit's reader-writer lock (`ck_rwlock`): never sleeps; a reader increments a
/// reader count (after spinning while a writer holds or claims the lock), a writer claims the
/// lock with a fetch-and-store and spins until the readers drain.
package final class CKRWLockContender: CounterRWLock, @unchecked Sendable {
    package static var contenderName: String { "CK rwlock" }
    package init() {}
    package let rwlock = ilk_peer_ck_rwlock_create()!
    package let counter = PlainCounter()
    deinit { ilk_peer_ck_rwlock_destroy(rwlock) }
    @inlinable @inline(__always) package func readUnderLock() -> Int {
        ilk_peer_ck_rwlock_read_lock(rwlock)
        let value = counter.pointer.pointee
        ilk_peer_ck_rwlock_read_unlock(rwlock)
        return value
    }
    @inlinable @inline(__always) package func incrementUnderWriteLock() {
        ilk_peer_ck_rwlock_write_lock(rwlock)
        counter.pointer.pointee += 1
        ilk_peer_ck_rwlock_write_unlock(rwlock)
    }
}

/// Interlock's `ReadWriteLocked<Int>`: the counter inside the lock's allocation, after the
/// words; read in `withReadLock`, changed in `withWriteLock`. The other contenders of the
/// reader-writer groups keep their Int in a block of its own, so this row also measures the
/// placement (one allocation fewer to reach).
package final class InterlockRWLockedContender: CounterRWLock, @unchecked Sendable {
    package static var contenderName: String { "Interlock ReadWriteLocked<Int>" }
    package init() {}
    package let locked = ReadWriteLocked(0)
    @inlinable @inline(__always) package func readUnderLock() -> Int { locked.withReadLock { $0 } }
    @inlinable @inline(__always) package func incrementUnderWriteLock() { locked.withWriteLock { $0 += 1 } }
}
