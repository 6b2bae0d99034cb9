// os_unfair_lock: mutual exclusion from 4 threads (with sections long enough that waiters park
// in the kernel), trylock, the owner asserts when they hold, and every misuse trap in a child
// process: unlock by a thread that does not own the lock, unlock of a free lock, assert_owner
// by a non-owner, assert_not_owner by the owner, and a recursive lock.

import InterlockCompat
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("os_unfair_lock")
struct UnfairLockTests {
    @Test("the struct imports as Darwin's: one UInt32 word, zero when unlocked")
    func layout() {
        #expect(MemoryLayout<os_unfair_lock>.size == 4)
        #expect(os_unfair_lock()._os_unfair_lock_opaque == 0)
        #expect(os_unfair_lock_s(_os_unfair_lock_opaque: 0)._os_unfair_lock_opaque == 0)
    }

    @Test("trylock takes a free lock, fails on a held one (the owner's own included)")
    func tryLock() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        defer { lock.deallocate() }
        #expect(os_unfair_lock_trylock(lock))
        #expect(!os_unfair_lock_trylock(lock))
        nonisolated(unsafe) let l = lock
        let otherTook = CompatFlag()
        compatRunThreads(1) { _ in if os_unfair_lock_trylock(l) { otherTook.raise() } }
        #expect(!otherTook.isRaised)
        os_unfair_lock_unlock(lock)
        #expect(lock.pointee._os_unfair_lock_opaque == 0)
        compatRunThreads(1) { _ in
            if os_unfair_lock_trylock(l) {
                otherTook.raise()
                os_unfair_lock_unlock(l)
            }
        }
        #expect(otherTook.isRaised)
    }

    @Test("assert_owner returns for the owner; assert_not_owner for a free lock and another's")
    func assertsHold() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        defer { lock.deallocate() }
        os_unfair_lock_assert_not_owner(lock)
        os_unfair_lock_lock(lock)
        os_unfair_lock_assert_owner(lock)
        nonisolated(unsafe) let l = lock
        compatRunThreads(1) { _ in os_unfair_lock_assert_not_owner(l) }
        os_unfair_lock_unlock(lock)
        os_unfair_lock_assert_not_owner(lock)
    }

    @Test("4 threads incrementing a plain counter lose no update (fast path and parking)")
    func exclusion() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        defer {
            lock.deallocate()
            counter.deallocate()
        }
        nonisolated(unsafe) let (l, c) = (lock, counter)
        compatRunThreads(4) { index in
            for i in 0..<50_000 {
                os_unfair_lock_lock(l)
                let seen = c.pointee
                if i % 5_000 == index { usleep(200) }  // long sections: waiters park
                c.pointee = seen + 1
                os_unfair_lock_unlock(l)
            }
        }
        #expect(counter.pointee == 200_000)
        #expect(lock.pointee._os_unfair_lock_opaque == 0, "free, with no waiters bit left behind")
    }

    @Test("a waiter parked on a held lock is woken by the unlock")
    func parkedWaiterWoken() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        defer { lock.deallocate() }
        nonisolated(unsafe) let l = lock
        let got = CompatFlag()
        os_unfair_lock_lock(lock)
        let waiter = CompatTestThread {
            os_unfair_lock_lock(l)
            got.raise()
            os_unfair_lock_unlock(l)
        }
        // The waiter spins briefly, then sets the waiters bit and parks; wait (bounded) for the bit.
        let deadline = ContinuousClock.now + .seconds(60)
        while lockWord(lock) & 0x8000_0000 == 0 && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(lockWord(lock) & 0x8000_0000 != 0, "the waiter set the waiters bit")
        usleep(10_000)  // let it reach the futex wait
        #expect(!got.isRaised)
        os_unfair_lock_unlock(lock)
        #expect(got.wait(seconds: 60))
        waiter.join()
    }

    @Test("unlock by a thread that does not own the lock traps")
    func unlockByNonOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            os_unfair_lock_lock(lock)
            nonisolated(unsafe) let l = lock
            compatMisuseChild { os_unfair_lock_unlock(l) }
        }
        compatExpectStderr(result, contains: "os_unfair_lock: unlock of a lock not owned by the current thread")
    }

    @Test("unlock of a free lock traps")
    func unlockFreeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            os_unfair_lock_unlock(lock)
        }
        compatExpectStderr(result, contains: "os_unfair_lock: unlock of a lock not owned by the current thread")
    }

    @Test("assert_owner by a thread that does not own the lock traps")
    func assertOwnerByNonOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            os_unfair_lock_lock(lock)
            nonisolated(unsafe) let l = lock
            compatMisuseChild { os_unfair_lock_assert_owner(l) }
        }
        compatExpectStderr(result, contains: "os_unfair_lock_assert_owner: lock not owned by the current thread")
    }

    @Test("assert_not_owner by the owner traps")
    func assertNotOwnerByOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            os_unfair_lock_lock(lock)
            os_unfair_lock_assert_not_owner(lock)
        }
        compatExpectStderr(result, contains: "os_unfair_lock_assert_not_owner: lock owned by the current thread")
    }

    @Test("locking again on the owning thread traps instead of deadlocking")
    func recursiveLockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            nonisolated(unsafe) let l = lock
            compatMisuseChild {
                os_unfair_lock_lock(l)
                os_unfair_lock_lock(l)
            }
        }
        compatExpectStderr(result, contains: "os_unfair_lock: recursive lock attempt")
    }
}

/// The lock word, read atomically (OR-ing in nothing returns the current value).
private func lockWord(_ lock: os_unfair_lock_t) -> UInt32 {
    let raw = UnsafeMutableRawPointer(lock).assumingMemoryBound(to: UInt32.self)
    return UInt32(bitPattern: OSAtomicOr32Barrier(0, raw))
}
