// Tests of Lock, the futex mutex: exclusion under contention, try and timed forms, withLock,
// the name, and the trap on unlocking a lock that is not locked.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Lock")
struct LockTests {
    @Test("a plain counter incremented under the lock by several threads ends exact")
    func exclusion() {
        let rounds = TestScale.count(20_000, small: 500)
        checkExclusion(Lock(), threads: 4, rounds: rounds)
    }

    @Test("threads that park in the kernel are all woken: none is lost")
    func parkedWaitersAreWoken() {
        // Each thread holds the lock across a yield, so the others spin out and park.
        let lock = Lock()
        let rounds = TestScale.count(300, small: 30)
        let counter = LockGuarded(0)
        runConcurrently(threadCount: 6) { _ in
            for _ in 0..<rounds {
                lock.withLock {
                    counter.value += 1
                    sched_yield()
                }
            }
        }
        #expect(counter.value == 6 * rounds)
    }

    @Test("tryLock takes a free lock and fails on a held one")
    func tryLock() {
        let lock = Lock()
        #expect(lock.tryLock())
        #expect(!lock.tryLock())
        let other = LockGuarded(true)
        TestThread { other.value = lock.tryLock() }.join()
        #expect(!other.value)
        lock.unlock()
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("lock(before:) with a deadline in the past is a try")
    func pastDeadlineIsATry() {
        let lock = Lock()
        #expect(lock.lock(before: .now - .seconds(1)))
        let start = ContinuousClock.now
        #expect(!lock.lock(before: .now - .seconds(1)))
        #expect(ContinuousClock.now - start < lockLatenessLimit)
        lock.unlock()
    }

    @Test("lock(before:) times out no earlier than its deadline, and not absurdly late")
    func timedLockTimesOut() {
        let lock = Lock()
        lock.lock()
        for timeout in [Duration.milliseconds(1), .milliseconds(20), .milliseconds(100)] {
            // Another thread, so the wait is a real futex wait on a held mutex.
            expectTimedOut(timedAttemptOnAnotherThread(after: timeout) { lock.lock(before: $0) })
        }
        lock.unlock()
    }

    @Test("lock(before:) succeeds when the holder releases before the deadline")
    func timedLockSucceeds() {
        let lock = Lock()
        lock.lock()
        let acquired = LockGuarded(false)
        let tid = AtomicUInt32(0)
        let returned = AtomicBool(false)
        let waiter = TestThread {
            tid.store(ilk_current_thread_id())
            let ok = lock.lock(before: .now + lockStallLimit)
            acquired.value = ok
            if ok { lock.unlock() }
            returned.store(true)
        }
        // The waiter is parked in its timed futex wait (word 2, thread asleep) before the
        // unlock, so only the unlock's wake can let it in before its deadline.
        #expect(
            lockEventually {
                ilk_atomic_load_u32(lock._word, ILK_ORDER_RELAXED) == 2 && tid.load() != 0
                    && threadState(Int32(bitPattern: tid.load())) == "S"
            }, "the waiter never parked")
        lock.unlock()
        #expect(lockEventually { returned.load() })
        if returned.load() { waiter.join() }
        #expect(acquired.value)
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("withLock returns the body's value and releases the lock")
    func withLockReturns() {
        let lock = Lock()
        #expect(lock.withLock { 42 } == 42)
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("withLock releases the lock when the body throws")
    func withLockUnlocksOnThrow() {
        let lock = Lock()
        #expect(throws: LockTestError.self) {
            try lock.withLock { throw LockTestError() }
        }
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("name is nil until set, and can be set and read from any thread")
    func name() {
        let lock = Lock()
        #expect(lock.name == nil)
        lock.name = "cache"
        #expect(lock.name == "cache")
        runConcurrently(threadCount: 2) { index in
            for i in 0..<TestScale.count(1_000, small: 100) {
                if index == 0 { lock.name = "name \(i)" } else { _ = lock.name }
            }
        }
        #expect(lock.name?.hasPrefix("name ") == true)
        lock.name = nil
        #expect(lock.name == nil)
    }

    @Test("unlocking a lock that is not locked traps, naming the lock")
    func unlockUnlockedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = Lock()
            lock.name = "inventory"
            lock.unlock()
        }
        expectTrapMessage(result, contains: "Lock \"inventory\"", "unlock() called on a lock that is not locked")
    }

    @Test("unlocking an unnamed lock twice traps, saying it is unnamed")
    func unlockTwiceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = Lock()
            lock.lock()
            lock.unlock()
            lock.unlock()
        }
        expectTrapMessage(result, contains: "Lock (unnamed)", "not locked")
    }
}
