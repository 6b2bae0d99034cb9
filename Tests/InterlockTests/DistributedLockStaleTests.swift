// DistributedLock's stale-lock rules: break when the holder is on this host and its process is
// gone, or when the lock is older than the caller's limit; never otherwise. And the breakers'
// guard: a live breaker blocks others, an abandoned one does not.

import Foundation
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("DistributedLock stale locks")
struct DistributedLockStaleTests {
    /// The pid of a process that has exited and been reaped.
    func deadProcessID() throws -> Int32 {
        let pid = try DLTest.spawn(["noop"])
        #expect(DLTest.wait(pid) == DLTest.Ending(exitCode: 0, signal: nil))
        #expect(kill(pid, 0) != 0 && errno == ESRCH)
        return pid
    }

    @Test func deadHolderOnThisHostIsStale() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        try DLTest.write(lock.path, DLTest.record(pid: try deadProcessID()))
        let info = try #require(try lock.lockInfo())
        #expect(lock.isStale(info))
        #expect(try !lock.tryLock())
        #expect(try lock.breakLockIfStale())
        #expect(try lock.lockInfo() == nil)
        #expect(directory.entries.isEmpty)  // the breakers' guard is gone too
        #expect(try !lock.breakLockIfStale())  // nothing left to break
        #expect(try lock.tryLock())
        try lock.unlock()
    }

    @Test func liveHolderIsNotStale() throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        let other = try DistributedLock(path: holder.path)
        #expect(try holder.tryLock())
        #expect(try !other.breakLockIfStale())
        #expect(try !other.breakLockIfStale(olderThan: .seconds(3600)))
        #expect(try other.lockInfo()?.processID == getpid())
        try holder.unlock()
    }

    @Test func otherHostsLocksAreBrokenOnlyByAge() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let dead = try deadProcessID()
        try DLTest.write(lock.path, DLTest.record(pid: dead, host: "elsewhere.invalid", secondsAgo: 120))
        #expect(try !lock.breakLockIfStale())  // its pid means nothing here
        #expect(try !lock.breakLockIfStale(olderThan: .seconds(600)))
        #expect(try lock.lockInfo() != nil)
        #expect(try lock.breakLockIfStale(olderThan: .seconds(60)))
        #expect(try lock.lockInfo() == nil)
        #expect(directory.entries.isEmpty)
    }

    @Test func ageRuleBreaksEvenALiveHolderWhoseUnlockThenThrows() throws {
        let directory = try DLTempDirectory()
        let holder = try DistributedLock(path: directory.file("l"))
        #expect(try holder.tryLock())
        #expect(try DistributedLock(path: holder.path).breakLockIfStale(olderThan: .zero))
        let error = try #require(throws: DistributedLockError.self) { try holder.unlock() }
        #expect(error.code == .lockLost)
    }

    @Test func aLiveBreakerBlocksOthersAndAnAbandonedOneDoesNot() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let dead = try deadProcessID()
        try DLTest.write(lock.path, DLTest.record(pid: dead))
        // A breaker that is alive (this process) and recent holds the guard: others back off.
        try DLTest.write(lock.breakGuardPath, DLTest.record(pid: getpid(), token: "ffffffffffffffffffffffffffffffff"))
        #expect(try !lock.breakLockIfStale())
        #expect(try lock.lockInfo()?.processID == dead)
        // The breaker died holding the guard: its guard is broken and the stale lock with it.
        try DLTest.write(lock.breakGuardPath, DLTest.record(pid: dead, token: "ffffffffffffffffffffffffffffffff"))
        #expect(try lock.breakLockIfStale())
        #expect(directory.entries.isEmpty)
        // A guard abandoned long ago by a breaker on another host is broken by its age.
        try DLTest.write(lock.path, DLTest.record(pid: dead))
        try DLTest.write(lock.breakGuardPath, DLTest.record(pid: 7, host: "elsewhere.invalid", secondsAgo: 3600))
        #expect(try lock.breakLockIfStale())
        #expect(directory.entries.isEmpty)
    }

    @Test func foreignFileAtTheGuardPathIsReported() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        try DLTest.write(lock.path, DLTest.record(pid: try deadProcessID()))
        try DLTest.write(lock.breakGuardPath, "not a lock")
        let error = try #require(throws: DistributedLockError.self) { try lock.breakLockIfStale() }
        #expect(error.code == .notALock)
        #expect(error.description.contains(lock.breakGuardPath))
        #expect(DLTest.read(lock.breakGuardPath) == "not a lock")
        #expect(try lock.lockInfo() != nil)
    }
}
