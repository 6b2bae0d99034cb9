// Tests of RecursiveLock: recursion by the owner (also through tryLock and lock(before:)),
// exclusion of other threads until unlocks balance locks, timed forms, and the two traps.

import Interlock
import Testing

@Suite("RecursiveLock")
struct RecursiveLockTests {
    @Test("a plain counter incremented under the lock by several threads ends exact")
    func exclusion() {
        checkExclusion(RecursiveLock(), threads: 4, rounds: TestScale.count(10_000, small: 300))
    }

    @Test("nested critical sections on several threads keep exclusion")
    func nestedExclusion() {
        let lock = RecursiveLock()
        let counter = LockGuarded(0)
        let rounds = TestScale.count(5_000, small: 200)
        let violations = LockGuarded(0)
        runConcurrently(threadCount: 3) { _ in
            for _ in 0..<rounds {
                lock.withLock {
                    let entry = counter.value
                    lock.withLock { counter.value += 1 }
                    counter.value += 1
                    if counter.value != entry + 2 { violations.value += 1 }
                }
            }
        }
        #expect(violations.value == 0)
        #expect(counter.value == 3 * 2 * rounds)
    }

    @Test("the owner may lock again; others get it only once unlocks balance locks")
    func recursion() {
        let lock = RecursiveLock()
        lock.lock()
        lock.lock()
        #expect(lock.tryLock())
        #expect(lock.lock(before: .now - .seconds(1)))  // owner: at once, even past the deadline
        let othersTry = { () -> Bool in
            let got = LockGuarded(false)
            TestThread {
                got.value = lock.tryLock()
                if got.value { lock.unlock() }
            }.join()
            return got.value
        }
        for _ in 0..<3 {
            #expect(!othersTry())
            lock.unlock()
        }
        #expect(!othersTry())  // still held once
        lock.unlock()
        #expect(othersTry())
    }

    @Test("lock(before:) by another thread times out no earlier than its deadline")
    func timedLockTimesOut() {
        let lock = RecursiveLock()
        lock.lock()
        expectTimedOut(timedAttemptOnAnotherThread(after: .milliseconds(30)) { lock.lock(before: $0) })
        let pastDeadline = timedAttemptOnAnotherThread(after: .seconds(-1)) { lock.lock(before: $0) }
        #expect(!pastDeadline.acquired)
        #expect(pastDeadline.returned - pastDeadline.deadline < lockLatenessLimit)
        lock.unlock()
    }

    @Test("lock(before:) succeeds when the owner releases before the deadline")
    func timedLockSucceeds() {
        let lock = RecursiveLock()
        lock.lock()
        lock.lock()
        let waiting = AtomicBool(false)
        let acquired = LockGuarded(false)
        let waiter = TestThread {
            waiting.store(true)
            acquired.value = lock.lock(before: .now + lockStallLimit)
            if acquired.value { lock.unlock() }
        }
        #expect(lockEventually { waiting.load() })
        lock.unlock()
        lock.unlock()
        waiter.join()
        #expect(acquired.value)
    }

    @Test("withLock returns the body's value, and releases the lock when the body throws")
    func withLock() {
        let lock = RecursiveLock()
        #expect(lock.withLock { lock.withLock { 7 } } == 7)
        #expect(throws: LockTestError.self) {
            try lock.withLock { try lock.withLock { throw LockTestError() } }
        }
        let free = LockGuarded(false)
        TestThread {
            free.value = lock.tryLock()
            if free.value { lock.unlock() }
        }.join()
        #expect(free.value)
    }

    @Test("name is nil until set")
    func name() {
        let lock = RecursiveLock()
        #expect(lock.name == nil)
        lock.name = "tree"
        #expect(lock.name == "tree")
    }

    @Test("unlocking while nobody holds it traps, naming the lock")
    func unlockUnheldTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = RecursiveLock()
            lock.name = "tree"
            lock.lock()
            lock.unlock()
            lock.unlock()
        }
        expectTrapMessage(
            result, contains: "RecursiveLock \"tree\"", "unlock() called on a lock that is not locked")
    }

    @Test("an unlock by a thread that does not own the lock traps")
    func unlockByNonOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = RecursiveLock()
            lock.lock()
            TestThread { lock.unlock() }.join()
        }
        expectTrapMessage(result, contains: "RecursiveLock (unnamed)", "which does not own the lock")
    }
}
