// ConditionLock: NSConditionLock's semantics — hand-off in an exact order, try and timed forms,
// exclusion, and the condition snapshot.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("ConditionLock")
struct ConditionLockTests {
    @Test("init sets the condition; unlock(withCondition:) changes it; unlock() keeps it")
    func conditionValue() {
        let lock = ConditionLock(condition: 7)
        #expect(lock.condition == 7)
        #expect(ConditionLock().condition == 0)
        lock.lock()
        lock.unlock(withCondition: -3)
        #expect(lock.condition == -3)
        lock.lock()
        lock.unlock()
        #expect(lock.condition == -3)
        #expect(lock.name == nil)
        lock.name = "stage"
        #expect(lock.name == "stage")
    }

    @Test("tryLock(whenCondition:) with the wrong condition is false and leaves it unlocked")
    func tryLockWhenCondition() {
        let lock = ConditionLock(condition: 1)
        #expect(lock.tryLock(whenCondition: 2) == false)
        #expect(lock.tryLock())  // it was left unlocked
        #expect(lock.tryLock(whenCondition: 1) == false)  // held: false even for the right value
        lock.unlock()
        #expect(lock.tryLock(whenCondition: 1))
        #expect(!lock.tryLock())
        lock.unlock(withCondition: 2)
        #expect(lock.tryLock(whenCondition: 2))
        lock.unlock()
    }

    @Test("lock(whenCondition:) with the current condition takes it at once")
    func lockWhenConditionImmediate() {
        let lock = ConditionLock(condition: 4)
        lock.lock(whenCondition: 4)
        #expect(!lock.tryLock())
        lock.unlock(withCondition: 5)
        #expect(lock.condition == 5)
    }

    @Test("withLock returns the body's value and unlocks, keeping the condition")
    func withLock() {
        let lock = ConditionLock(condition: 3)
        #expect(lock.withLock { 9 } == 9)
        #expect(lock.condition == 3)
        #expect(lock.tryLock(whenCondition: 3))
        lock.unlock()
    }

    @Test("mutual exclusion: a plain counter incremented under the lock ends exact")
    func exclusion() {
        let lock = ConditionLock()
        let counter = PlainShared(0)
        let threads = 4
        let perThread = TestScale.count(100_000, small: 2_000)
        runConcurrently(threadCount: threads) { _ in
            for _ in 0..<perThread {
                lock.lock()
                counter.value += 1
                lock.unlock()
            }
        }
        #expect(counter.value == threads * perThread)
    }

    @Test("hand-off chain A 0→1, B 1→2, C 2→0 runs in exact order", arguments: [2, 3, 5])
    func handOffChain(threads: Int) {
        let lock = ConditionLock(condition: 0)
        let rounds = TestScale.count(3_000, small: 150)
        let log = PlainShared([Int]())
        log.value.reserveCapacity(rounds * threads)
        runConcurrently(threadCount: threads) { index in
            for _ in 0..<rounds {
                lock.lock(whenCondition: index)
                log.value.append(index)
                lock.unlock(withCondition: (index + 1) % threads)
            }
        }
        let expected = (0..<rounds * threads).map { $0 % threads }
        #expect(log.value == expected)
        #expect(lock.condition == 0)
    }

    @Test("hand-off chain with timed waits: every step succeeds well before its deadline")
    func handOffChainTimed() {
        let threads = 3
        let lock = ConditionLock(condition: 0)
        let rounds = TestScale.count(1_000, small: 100)
        let log = PlainShared([Int]())
        let failures = PlainShared(0)
        runConcurrently(threadCount: threads) { index in
            for _ in 0..<rounds {
                if lock.lock(whenCondition: index, before: .now + .seconds(60)) {
                    log.value.append(index)
                    lock.unlock(withCondition: (index + 1) % threads)
                } else {
                    lock.lock()
                    failures.value += 1
                    lock.unlock()
                    return
                }
            }
        }
        #expect(failures.value == 0)
        #expect(log.value == (0..<rounds * threads).map { $0 % threads })
    }

    @Test("waiters for other conditions do not take the lock: mixed waiters, exact order")
    func mixedWaiters() {
        // Two waiters per condition value 1...3; the main thread sets the values in turn, and
        // after each, exactly one waiter of that value may run (it sets the value back to 0).
        let lock = ConditionLock(condition: 0)
        let ran = PlainShared([Int]())
        let threads = (1...3).flatMap { value in
            (0..<2).map { _ in
                TestThread {
                    lock.lock(whenCondition: value)
                    ran.value.append(value)
                    lock.unlock(withCondition: 0)
                }
            }
        }
        var stalled = false
        for value in [3, 1, 2, 2, 1, 3] {
            // Bounded, so that a lost wake-up fails the test instead of hanging it.
            guard lock.lock(whenCondition: 0, before: .now + conditionStallLimit) else {
                stalled = true
                break
            }
            lock.unlock(withCondition: value)
        }
        #expect(!stalled, "no waiter took its turn: lost wake-up")
        if stalled { return }  // leak the blocked waiters rather than hang
        for thread in threads { thread.join() }
        #expect(ran.value == [3, 1, 2, 2, 1, 3])
        #expect(lock.condition == 0)
    }

    @Test("lock(whenCondition:before:) times out: false, never early, not absurdly late, unlocked")
    func lockWhenConditionTimesOut() {
        let lock = ConditionLock(condition: 0)
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(50)
        #expect(lock.lock(whenCondition: 1, before: deadline) == false)
        let end = ContinuousClock.now
        #expect(end >= deadline, "returned \(deadline - end) early")
        #expect(end - start < .seconds(5), "returned absurdly late: \(end - start)")
        #expect(lock.tryLock())  // it does not hold the lock after a timeout
        lock.unlock()
    }

    @Test("lock(before:) and lock(whenCondition:before:) time out while another thread holds it")
    func lockBeforeTimesOutWhileHeld() {
        let lock = ConditionLock(condition: 0)
        let holding = AtomicBool(false)
        let release = AtomicBool(false)
        let holder = TestThread {
            lock.lock()
            holding.store(true)
            while !release.load() { sched_yield() }
            lock.unlock()
        }
        #expect(progresses { holding.load() })
        for form in 0..<2 {
            let start = ContinuousClock.now
            let deadline = start + .milliseconds(30)
            let result =
                form == 0
                ? lock.lock(before: deadline)
                : lock.lock(whenCondition: 0, before: deadline)
            let end = ContinuousClock.now
            #expect(result == false)
            #expect(end >= deadline)
            #expect(end - start < .seconds(5))
        }
        release.store(true)
        holder.join()
        #expect(lock.lock(before: .now + .seconds(60)))
        lock.unlock()
    }

    @Test("a deadline in the past is a try")
    func pastDeadlineIsATry() {
        let lock = ConditionLock(condition: 2)
        let past = ContinuousClock.now - .seconds(1)
        #expect(lock.lock(before: past))
        lock.unlock()
        #expect(lock.lock(whenCondition: 2, before: past))
        lock.unlock()
        let start = ContinuousClock.now
        #expect(lock.lock(whenCondition: 3, before: past) == false)
        #expect(ContinuousClock.now - start < lockStallLimit, "it slept")  // generous: a hang, not a slow machine
        #expect(lock.tryLock())
        lock.unlock()
    }

    @Test("a timed waiter takes the lock when its condition comes in time")
    func timedWaiterSucceeds() {
        let lock = ConditionLock(condition: 0)
        let outcome = PlainShared<Bool?>(nil)
        lock.lock()
        let waiter = TestThread {
            let got = lock.lock(whenCondition: 1, before: .now + .seconds(60))
            outcome.value = got  // protected by the lock when got is true
            if got { lock.unlock(withCondition: 2) }
        }
        lock.unlock(withCondition: 1)
        waiter.join()
        #expect(outcome.value == true)
        #expect(lock.condition == 2)
    }
}
