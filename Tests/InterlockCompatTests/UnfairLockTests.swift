// os_unfair_lock: mutual exclusion from 4 threads (with sections long enough that waiters park
// in the kernel), a waiter seen asleep in the kernel (/proc) woken by the unlock, trylock, the
// owner asserts when they hold, and every misuse trap in a child process: unlock by a thread
// that does not own the lock, unlock of a free lock, unlock in a fork()ed child of a lock the
// parent holds, assert_owner by a non-owner, assert_not_owner by the owner, and a recursive
// lock.

import CInterlock
import Interlock
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

    /// Proves the wake-up of a parked waiter: the waiter is seen with the waiters bit set and
    /// asleep in the kernel (/proc/self/task/<tid>/stat state "S") before the unlock, and then
    /// takes the lock; no sleep stands in for "it has parked by now".
    @Test("a waiter proven parked in the kernel on a held lock is woken by the unlock")
    func parkedWaiterWoken() {
        let lock = os_unfair_lock_t.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
        let entered = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        entered.initialize(to: false)
        defer {
            lock.deallocate()
            entered.deallocate()
        }
        nonisolated(unsafe) let (l, e) = (lock, entered)
        let waiterID = AtomicUInt32(0)
        let finished = CompatFlag()
        os_unfair_lock_lock(lock)
        let waiter = CompatTestThread {
            waiterID.store(ilk_current_thread_id())
            os_unfair_lock_lock(l)
            e.pointee = true  // under the lock
            os_unfair_lock_unlock(l)
            finished.raise()
        }
        let tid = compatPublishedThreadID(waiterID)
        #expect(tid != 0, "the waiter published its thread id")
        // Parked: only the waiter sets the waiters bit (this thread holds the lock), and once it
        // has, the waiter's next blocking call is its futex wait; so the bit read first, then the
        // waiter asleep in the kernel ("S"), means it sleeps in that wait.
        let parked = compatPoll { lockWord(lock) & 0x8000_0000 != 0 && compatThreadState(tid) == "S" }
        #expect(parked, "the waiter set the waiters bit and went to sleep in the kernel")
        #expect(!entered.pointee, "the waiter cannot have entered: this thread holds the lock")
        os_unfair_lock_unlock(lock)
        let woken = finished.wait(seconds: 60)
        #expect(woken, "the unlock woke the parked waiter, which took the lock")
        if !woken {
            // Let the waiter retry (the lock is free now), so that the join below returns.
            _ = ilk_futex_wake(UnsafeMutableRawPointer(lock).assumingMemoryBound(to: UInt32.self), .max)
        }
        waiter.join()
        #expect(entered.pointee)
        #expect(lockWord(lock) == 0, "free, with no waiters bit left behind")
    }

    /// Proves that the child of fork() is not the owner of a lock its parent held (its thread
    /// has another id, even if the id cache was copied): its unlock is killed by the trap, while
    /// the parent's unlock still works.
    @Test("a lock held across fork() cannot be unlocked in the child; the parent still can")
    func unlockInForkedChildTraps() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let lock = os_unfair_lock_t.allocate(capacity: 1)
            lock.initialize(to: os_unfair_lock())
            os_unfair_lock_lock(lock)
            let child = fork()
            if child == 0 {
                // The child's thread has another id: it does not own the lock and must trap.
                os_unfair_lock_unlock(lock)
                _exit(0)
            }
            guard child > 0 else { exit(2) }
            // Wait for the child, bounded only to catch a hang (the child is then killed).
            var status: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(60)
            while true {
                let reaped = waitpid(child, &status, WNOHANG)
                if reaped == child { break }
                if reaped < 0 && errno != EINTR { exit(5) }
                if ContinuousClock.now >= deadline {
                    kill(child, SIGKILL)
                    exit(3)
                }
                usleep(1_000)
            }
            // WIFSIGNALED(status): the low 7 bits hold the signal, neither 0 (exited) nor 0x7f (stopped).
            let killedBySignal = status & 0x7f != 0 && status & 0x7f != 0x7f
            // The parent's thread still owns the lock.
            os_unfair_lock_unlock(lock)
            guard lockWord(lock) == 0 else { exit(4) }
            exit(killedBySignal ? 0 : 1)
        }
        // The child inherited the exit test's standard error.
        compatExpectStderr(result, contains: "os_unfair_lock: unlock of a lock not owned by the current thread")
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
