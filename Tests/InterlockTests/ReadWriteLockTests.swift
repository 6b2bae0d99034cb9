// Tests of ReadWriteLock: readers overlap, a writer excludes everyone, writers are preferred
// (tryLockRead fails and new readers wait while a writer waits), readers are not starved by a
// stream of writers, try and timed forms (including the clean-up after a timed-out writer),
// with{Read,Write}Lock, and the unlock traps.

import Interlock
import Testing

@Suite("ReadWriteLock")
struct ReadWriteLockTests {
    @Test("two readers hold the lock at the same time")
    func readersOverlap() {
        let lock = ReadWriteLock()
        let inside = AtomicInt(0)
        let bothSeen = LockGuarded([false, false])
        runConcurrently(threadCount: 2) { index in
            lock.lockRead()
            inside.increment()
            // Each reader waits, holding the read lock, until both are inside: only possible
            // if the lock admits two readers at once (bounded, so a failure does not hang).
            let seen = lockEventually { inside.load() == 2 }
            lock.unlockRead()
            lock.withWriteLock { bothSeen.value[index] = seen }
        }
        #expect(bothSeen.value == [true, true])
    }

    @Test("a writer excludes readers and other writers: readers never see a torn update")
    func writerExcludesEveryone() {
        let lock = ReadWriteLock()
        let words = LockGuarded([Int](repeating: 0, count: 8))
        let torn = AtomicInt(0)
        let rounds = TestScale.count(5_000, small: 200)
        runConcurrently(threadCount: 4) { index in
            for round in 0..<rounds {
                if index < 2 || round % 16 == 0 {
                    lock.withWriteLock {
                        let next = words.value[0] + 1
                        for i in 0..<words.value.count { words.value[i] = next }
                    }
                } else {
                    lock.withReadLock {
                        let first = words.value[0]
                        if words.value.contains(where: { $0 != first }) { torn.increment() }
                    }
                }
            }
        }
        #expect(torn.load() == 0)
        let writes = 2 * rounds + 2 * ((rounds + 15) / 16)
        #expect(words.value == [Int](repeating: writes, count: 8))
    }

    @Test("try forms: a read lock admits readers but not writers; a write lock admits nobody")
    func tryForms() {
        let lock = ReadWriteLock()
        #expect(lock.tryLockRead())
        #expect(lock.tryLockRead())
        #expect(!lock.tryLockWrite())
        lock.unlockRead()
        lock.unlockRead()
        #expect(lock.tryLockWrite())
        #expect(readersRefused(lock))
        #expect(!lock.tryLockWrite())
        lock.unlockWrite()
        #expect(lock.tryLockWrite())
        lock.unlockWrite()
    }

    @Test("while a writer waits, tryLockRead fails and new readers wait behind it")
    func writerPreference() {
        let lock = ReadWriteLock()
        lock.lockRead()
        let writerDone = AtomicBool(false)
        let writer = TestThread {
            lock.lockWrite()
            writerDone.store(true)
            lock.unlockWrite()
        }
        // The writer cannot get in past our read lock; once it waits, readers are refused.
        let refused = lockEventually { readersRefused(lock) || writerDone.load() }
        #expect(refused)
        #expect(!writerDone.load())
        // A new reader with a deadline waits behind the writer and times out.
        let newReader = timedAttemptOnAnotherThread(after: .milliseconds(30)) { lock.lockRead(before: $0) }
        expectTimedOut(newReader)
        #expect(readersRefused(lock))
        lock.unlockRead()
        writer.join()
        #expect(writerDone.load())
        #expect(lock.tryLockRead())
        lock.unlockRead()
    }

    @Test("readers get in while writers hammer the lock (readers are not starved)")
    func readersNotStarved() {
        let lock = ReadWriteLock()
        let stop = AtomicBool(false)
        let writes = LockGuarded(0)
        let writers = (0..<2).map { _ in
            TestThread {
                while !stop.load() { lock.withWriteLock { writes.value += 1 } }
            }
        }
        // Start reading only once the writers are at it.
        #expect(lockEventually { lock.withReadLock { writes.value } > 0 })
        var readsDone = 0
        for _ in 0..<TestScale.count(200, small: 20) {
            guard lock.lockRead(before: .now + lockStallLimit) else { break }
            readsDone += 1
            lock.unlockRead()
        }
        stop.store(true)
        for writer in writers { writer.join() }
        #expect(readsDone == TestScale.count(200, small: 20))
        #expect(writes.value > 0)
    }

    @Test("writers get in while readers hammer the lock (writers are not starved)")
    func writersNotStarved() {
        let lock = ReadWriteLock()
        let stop = AtomicBool(false)
        let readers = (0..<3).map { _ in
            TestThread {
                while !stop.load() { lock.withReadLock { } }
            }
        }
        var writesDone = 0
        for _ in 0..<TestScale.count(200, small: 20) {
            guard lock.lockWrite(before: .now + lockStallLimit) else { break }
            writesDone += 1
            lock.unlockWrite()
        }
        stop.store(true)
        for reader in readers { reader.join() }
        #expect(writesDone == TestScale.count(200, small: 20))
    }

    @Test("timed forms time out no earlier than their deadline; a past deadline is a try")
    func timedForms() {
        let lock = ReadWriteLock()
        lock.lockWrite()
        expectTimedOut(timedAttemptOnAnotherThread(after: .milliseconds(30)) { lock.lockRead(before: $0) })
        expectTimedOut(timedAttemptOnAnotherThread(after: .milliseconds(30)) { lock.lockWrite(before: $0) })
        #expect(!lock.lockRead(before: .now - .seconds(1)))
        #expect(!lock.lockWrite(before: .now - .seconds(1)))
        lock.unlockWrite()
        #expect(lock.lockRead(before: .now - .seconds(1)))
        #expect(lock.lockRead(before: .now + .seconds(1)))
        lock.unlockRead()
        lock.unlockRead()
        #expect(lock.lockWrite(before: .now - .seconds(1)))
        lock.unlockWrite()
    }

    @Test("a writer that times out waiting does not leave readers locked out")
    func timedOutWriterCleansUp() {
        let lock = ReadWriteLock()
        lock.lockRead()
        expectTimedOut(timedAttemptOnAnotherThread(after: .milliseconds(30)) { lock.lockWrite(before: $0) })
        // No writer waits any more: new readers are admitted again.
        #expect(lock.tryLockRead())
        lock.unlockRead()
        let reader = timedAttemptOnAnotherThread(after: lockStallLimit) { lock.lockRead(before: $0) }
        #expect(reader.acquired)
        lock.unlockRead()  // the other thread's read lock: unlocking is not tied to a thread
        lock.unlockRead()
        #expect(lock.tryLockWrite())
        lock.unlockWrite()
    }

    @Test("readers queued behind a writer that times out are let in")
    func readersBehindTimedOutWriter() {
        let lock = ReadWriteLock()
        lock.lockRead()
        let writerTried = AtomicBool(false)
        let writer = TestThread {
            _ = lock.lockWrite(before: .now + .milliseconds(200))
            writerTried.store(true)
        }
        #expect(lockEventually { readersRefused(lock) })  // the writer waits
        let readerIn = AtomicBool(false)
        let reader = TestThread {
            lock.lockRead()  // queues behind the writer, then must be let in when it gives up
            readerIn.store(true)
            lock.unlockRead()
        }
        writer.join()
        #expect(writerTried.load())
        #expect(lockEventually { readerIn.load() })
        reader.join()
        lock.unlockRead()
        #expect(lock.tryLockWrite())
        lock.unlockWrite()
    }

    @Test("withReadLock and withWriteLock return the body's value and unlock when it throws")
    func withForms() {
        let lock = ReadWriteLock()
        #expect(lock.withReadLock { 1 } == 1)
        #expect(lock.withWriteLock { 2 } == 2)
        #expect(throws: LockTestError.self) { try lock.withReadLock { throw LockTestError() } }
        #expect(throws: LockTestError.self) { try lock.withWriteLock { throw LockTestError() } }
        #expect(lock.tryLockWrite())
        lock.unlockWrite()
    }

    @Test("unlockRead on a lock that is not read-locked traps")
    func unlockReadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ReadWriteLock().unlockRead()
        }
        expectLockTrapMessage(result, contains: "ReadWriteLock: unlockRead() called on a lock that is not locked")
    }

    @Test("unlockWrite on a read-locked lock traps")
    func unlockWriteTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = ReadWriteLock()
            lock.lockRead()
            lock.unlockWrite()
        }
        expectLockTrapMessage(result, contains: "ReadWriteLock: unlockWrite() called on a lock that is read-locked by 1 readers")
    }

    @Test("unlockRead on a write-locked lock traps")
    func unlockReadOfWriteLockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = ReadWriteLock()
            lock.lockWrite()
            lock.unlockRead()
        }
        expectLockTrapMessage(result, contains: "ReadWriteLock: unlockRead() called on a lock that is write-locked")
    }
}

/// Whether `tryLockRead` fails now; a read lock it takes by mistake is released at once, so
/// that a failing check does not also hang the test.
private func readersRefused(_ lock: ReadWriteLock) -> Bool {
    if lock.tryLockRead() {
        lock.unlockRead()
        return false
    }
    return true
}
