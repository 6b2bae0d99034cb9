// Tests of SpinLock: exclusion under contention (also with more threads than cores, where
// waiters must yield to a descheduled holder), tryLock, withLock and the unlock trap.

import Interlock
import Testing

@Suite("SpinLock")
struct SpinLockTests {
    @Test("a plain counter incremented under the lock by several threads ends exact")
    func exclusion() {
        checkExclusion(SpinLock(), threads: 2, rounds: TestScale.count(50_000, small: 1_000))
    }

    @Test("with more threads than cores, waiters yield and everyone finishes")
    func oversubscribed() {
        // 8 threads on a 2-core machine: a holder is often descheduled; waiters that never
        // yielded would stall the run for whole time slices, those that do let it finish.
        let start = ContinuousClock.now
        checkExclusion(SpinLock(), threads: 8, rounds: TestScale.count(5_000, small: 200))
        #expect(ContinuousClock.now - start < lockStallLimit)
    }

    @Test("waiters stay out while the lock is held, and all get in once it is released")
    func waitersGetIn() {
        let lock = SpinLock()
        let entered = AtomicInt(0)
        lock.lock()
        let waiters = (0..<3).map { _ in
            TestThread {
                lock.lock()
                entered.increment()
                lock.unlock()
            }
        }
        // The waiters back off and yield while we hold it; nobody gets in.
        #expect(entered.load() == 0)
        lock.unlock()
        for waiter in waiters { waiter.join() }
        #expect(entered.load() == 3)
    }

    @Test("tryLock takes a free lock and fails on a held one")
    func tryLock() {
        let lock = SpinLock()
        #expect(lock.tryLock())
        #expect(!lock.tryLock())
        let other = LockGuarded(true)
        TestThread { other.value = lock.tryLock() }.join()
        #expect(!other.value)
        lock.unlock()
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("withLock returns the body's value, and releases the lock when the body throws")
    func withLock() {
        let lock = SpinLock()
        #expect(lock.withLock { "value" } == "value")
        #expect(throws: LockTestError.self) {
            try lock.withLock { throw LockTestError() }
        }
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("unlocking a spin lock that is not locked traps")
    func unlockUnlockedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            SpinLock().unlock()
        }
        expectTrapMessage(result, contains: "SpinLock", "unlock() called on a lock that is not locked")
    }
}
