// DistributedLock within one process: acquisition, release proven by token, breaking, lock
// info, deadlines, and one object shared by several threads.

import Foundation
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("DistributedLock")
struct DistributedLockTests {
    @Test func initCreatesNothingAndKeepsThePath() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("job.lock"))
        #expect(lock.path == directory.file("job.lock"))
        #expect(directory.entries.isEmpty)
        #expect(try lock.lockInfo() == nil)
    }

    @Test func tryLockCreatesTheEntryAndUnlockRemovesIt() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("job.lock"))
        #expect(try lock.tryLock())
        #expect(directory.entries == ["job.lock"])  // the temporary file is gone
        let entry = try #require(DLTest.lstatEntry(lock.path))
        #expect(entry.st_mode & S_IFMT == S_IFREG)
        #expect(entry.st_nlink == 1)
        try lock.unlock()
        #expect(directory.entries.isEmpty)
        #expect(try lock.lockInfo() == nil)
        // and again: the object is reusable
        #expect(try lock.tryLock())
        try lock.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test func tryLockIsFalseWhenHeldByThisObjectOrAnother() throws {
        let directory = try DLTempDirectory()
        let first = try DistributedLock(path: directory.file("l"))
        let second = try DistributedLock(path: directory.file("l"))
        #expect(try first.tryLock())
        #expect(try !first.tryLock())
        #expect(try !second.tryLock())
        #expect(directory.entries == ["l"])
        try first.unlock()
        #expect(try second.tryLock())
        #expect(try !first.tryLock())
        try second.unlock()
    }

    @Test func lockInfoRoundTrip() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let before = Duration.seconds(Int64(now.tv_sec)) + .nanoseconds(Int64(now.tv_nsec))
        #expect(try lock.tryLock())
        clock_gettime(CLOCK_REALTIME, &now)
        let after = Duration.seconds(Int64(now.tv_sec)) + .nanoseconds(Int64(now.tv_nsec))
        let info = try #require(try lock.lockInfo())
        #expect(info.processID == getpid())
        #expect(info.hostName == DLTest.hostName)
        #expect(info.acquiredAt >= before && info.acquiredAt <= after)
        // Another object reads the same record.
        #expect(try DistributedLock(path: lock.path).lockInfo() == info)
        try lock.unlock()
    }

    @Test func lockInfoParsesTheDocumentedFormat() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        try DLTest.write(
            lock.path,
            "interlock-distributed-lock 1\npid=4242\nhost=far.example\ntime=1700000000.000000123\ntoken=00000000000000000000000000000abc\n"
        )
        let info = try #require(try lock.lockInfo())
        #expect(
            info
                == DistributedLock.Info(
                    acquiredAt: .seconds(1_700_000_000) + .nanoseconds(123),
                    processID: 4242, hostName: "far.example"))
    }

    @Test func unlockWithoutHoldingThrowsNotHeld() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let error = try #require(throws: DistributedLockError.self) { try lock.unlock() }
        #expect(error.code == .notHeld)
        #expect(error.description.contains(lock.path))
        // Held by another object: still not ours, and theirs stays.
        let other = try DistributedLock(path: lock.path)
        #expect(try other.tryLock())
        #expect(throws: DistributedLockError.self) { try lock.unlock() }
        #expect(try other.lockInfo() != nil)
        try other.unlock()
    }

    @Test func unlockAfterBreakAndRetakeThrowsAndLeavesTheirs() throws {
        let directory = try DLTempDirectory()
        let ours = try DistributedLock(path: directory.file("l"))
        let theirs = try DistributedLock(path: ours.path)
        for _ in 0..<20 {  // repeated: ext4 reuses the freed inode number, exercising the token check
            #expect(try ours.tryLock())
            try theirs.breakLock()
            #expect(try theirs.tryLock())
            let theirInfo = try theirs.lockInfo()
            let error = try #require(throws: DistributedLockError.self) { try ours.unlock() }
            #expect(error.code == .lockLost)
            #expect(error.description.contains(ours.path))
            #expect(try theirs.lockInfo() == theirInfo)
            #expect(directory.entries == ["l"])
            // The object no longer holds the lock: unlock again is notHeld.
            let again = try #require(throws: DistributedLockError.self) { try ours.unlock() }
            #expect(again.code == .notHeld)
            try theirs.unlock()
        }
        #expect(directory.entries.isEmpty)
    }

    @Test func unlockAfterBreakWithoutRetakeThrowsLockLost() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        #expect(try lock.tryLock())
        try DistributedLock(path: lock.path).breakLock()
        let error = try #require(throws: DistributedLockError.self) { try lock.unlock() }
        #expect(error.code == .lockLost)
        #expect(try lock.tryLock())  // and the object can take it again
        try lock.unlock()
    }

    @Test func breakLockWhenFreeDoesNothing() throws {
        let directory = try DLTempDirectory()
        try DLTest.write(directory.file("bystander"), "keep")
        let lock = try DistributedLock(path: directory.file("l"))
        try lock.breakLock()
        #expect(directory.entries == ["bystander"])
    }

    @Test func breakLockRemovesAHeldLock() throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        #expect(try holder.tryLock())
        let breaker = try DistributedLock(path: holder.path)
        try breaker.breakLock()
        #expect(try breaker.lockInfo() == nil)
        #expect(directory.entries.isEmpty)
        #expect(try breaker.tryLock())
        try breaker.unlock()
    }

    @Test func lockBeforeDeadlineReturnsFalseAtTheDeadlineNotBefore() throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let deadline = ContinuousClock.now + .milliseconds(60)
        #expect(try !waiter.lock(before: deadline, pollInterval: .milliseconds(5)))
        #expect(ContinuousClock.now >= deadline)
        // A past deadline is a try.
        #expect(try !waiter.lock(before: .now - .seconds(1)))
        try holder.unlock()
        #expect(try waiter.lock(before: .now - .seconds(1)))
        try waiter.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test func lockBeforeDeadlineTakesTheLockOnceReleased() throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let waiter = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        let took = AtomicBool(false)
        let thread = TestThread {
            took.store((try? waiter.lock(before: .now + .seconds(30), pollInterval: .milliseconds(2))) ?? false)
        }
        try holder.unlock()  // before or while the waiter polls: it must get the lock either way
        thread.join()
        #expect(took.load())
        let info = try #require(try waiter.lockInfo())
        #expect(info.processID == getpid())
        try waiter.unlock()
    }

    @Test func durableLocksWorkTheSame() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"), durable: true)
        #expect(lock.durable)
        #expect(try lock.tryLock())
        #expect(try !DistributedLock(path: lock.path).tryLock())
        try lock.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test func aPathWithoutDirectoryMeansTheCurrentDirectory() throws {
        let lock = try DistributedLock(path: "interlock-dlock-relative-test-\(getpid()).lock")
        #expect(try lock.lockInfo() == nil)
    }

    @Test func oneObjectSharedByThreadsHoldsAtMostOnce() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let threads = 4
        let attempts = TestScale.count(200, small: 30)
        let inside = AtomicInt(0)
        let violations = AtomicInt(0)
        let successes = AtomicInt(0)
        let failures = AtomicInt(0)
        runConcurrently(threadCount: threads) { _ in
            for _ in 0..<attempts {
                do {
                    guard try lock.tryLock() else { continue }
                    if inside.increment() != 1 { violations.increment() }
                    successes.increment()
                    inside.decrement()
                    try lock.unlock()
                } catch {
                    failures.increment()
                }
            }
        }
        #expect(violations.load() == 0)
        #expect(failures.load() == 0)
        #expect(successes.load() > 0)
        #expect(directory.entries.isEmpty)
    }

    @Test func separateObjectsOnThreadsExcludeEachOther() throws {
        let directory = try DLTempDirectory()
        let path = directory.file("l")
        let rounds = TestScale.count(100, small: 20)
        let inside = AtomicInt(0)
        let violations = AtomicInt(0)
        let acquired = AtomicInt(0)
        let failures = AtomicInt(0)
        runConcurrently(threadCount: 4) { _ in
            do {
                let lock = try DistributedLock(path: path)
                for _ in 0..<rounds {
                    guard try lock.lock(before: .now + .seconds(60), pollInterval: .microseconds(200)) else {
                        failures.increment()
                        return
                    }
                    if inside.increment() != 1 { violations.increment() }
                    acquired.increment()
                    inside.decrement()
                    try lock.unlock()
                }
            } catch {
                failures.increment()
            }
        }
        #expect(violations.load() == 0)
        #expect(failures.load() == 0)
        #expect(acquired.load() == 4 * rounds)
        #expect(directory.entries.isEmpty)
    }
}
