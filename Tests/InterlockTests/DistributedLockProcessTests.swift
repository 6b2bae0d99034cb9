// DistributedLock between processes, with interlock-dlock-helper as the children: exclusion,
// recovery from a holder killed with SIGKILL, and many processes breaking and taking at once.
//
// Each holder appends its steps to a shared log one write(2) at a time, yielding between them;
// DLTest.checkExclusion fails the test if two holders' steps ever interleave.

import Foundation
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("DistributedLock between processes")
struct DistributedLockProcessTests {
    static let exited = DLTest.Ending(exitCode: 0, signal: nil)

    /// Each test runs with both acquisition recipes: O_TMPFILE, and the named temporary file
    /// that NFS uses.
    static let recipes: [[String]] = [[], DLTest.namedTemporary]

    @Test(arguments: recipes)
    func holdersInSeveralProcessesNeverOverlap(environment: [String]) throws {
        let directory = try DLTempDirectory()
        let lock = directory.file("l"), log = directory.file("log")
        let processes = TestScale.count(4, small: 3)
        let rounds = TestScale.count(8, small: 3)
        let steps = 6
        let pids = try (0..<processes).map { _ in
            try DLTest.spawn(["steps", lock, log, "\(rounds)", "\(steps)"], environment: environment)
        }
        #expect(DLTest.waitAll(pids) == Array(repeating: Self.exited, count: processes))
        #expect(DLTest.checkExclusion(log, steps: steps) == processes * rounds)
        #expect(directory.entries == ["log"])
    }

    @Test(arguments: recipes)
    func aHolderKilledWithSIGKILLIsRecoveredFrom(environment: [String]) throws {
        let directory = try DLTempDirectory()
        let path = directory.file("l"), log = directory.file("log")
        let victim = try DLTest.spawn(["crash", path], environment: environment)
        #expect(DLTest.wait(victim) == DLTest.Ending(exitCode: nil, signal: SIGKILL))
        // The lock is still held, and says by whom.
        let lock = try DistributedLock(path: path)
        let info = try #require(try lock.lockInfo())
        #expect(info.processID == victim)
        #expect(info.hostName == DLTest.hostName)
        #expect(lock.isStale(info))
        #expect(try !lock.tryLock())
        // Several survivors break it (one of them does) and each then takes its turn.
        let survivors = 3, steps = 5
        let pids = try (0..<survivors).map { _ in
            try DLTest.spawn(["recover", path, log, "\(steps)", "unlock"], environment: environment)
        }
        #expect(DLTest.waitAll(pids) == Array(repeating: Self.exited, count: survivors))
        #expect(DLTest.checkExclusion(log, steps: steps) == survivors)
        #expect(try lock.lockInfo() == nil)
        #expect(directory.entries == ["log"])
    }

    @Test(arguments: recipes)
    func manyProcessesBreakingAndTakingAtOnceHaveOneHolderAtATime(environment: [String]) throws {
        let directory = try DLTempDirectory()
        let path = directory.file("l"), log = directory.file("log")
        // Start from a stale lock. Each racer, ROUNDS times, runs a child that takes the lock by
        // breaking the stale lock its predecessor left and exits still holding it: every
        // hand-over is a race of all racers' current children to break and take.
        let victim = try DLTest.spawn(["crash", path], environment: environment)
        #expect(DLTest.wait(victim) == DLTest.Ending(exitCode: nil, signal: SIGKILL))
        let racers = TestScale.count(6, small: 3), rounds = TestScale.count(6, small: 2), steps = 4
        let pids = try (0..<racers).map { _ in
            try DLTest.spawn(["recover-rounds", path, log, "\(steps)", "\(rounds)"], environment: environment)
        }
        #expect(DLTest.waitAll(pids) == Array(repeating: Self.exited, count: racers))
        #expect(DLTest.checkExclusion(log, steps: steps) == racers * rounds)
        // The last one left its lock behind, stale.
        let lock = try DistributedLock(path: path)
        let last = try #require(try lock.lockInfo())
        #expect(lock.isStale(last))
        #expect(try lock.breakLockIfStale())
        #expect(directory.entries == ["log"])
    }
}
