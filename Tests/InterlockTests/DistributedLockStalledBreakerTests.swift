// A breaker stalled for longer than the breakers' guard is trusted (SIGSTOP here; a paused VM or
// an NFS hang elsewhere) must never take a lock away from a holder that came after it.
//
// The scenario: a lock whose holder died; breaker B1 (a child process) takes the guard, judges
// the lock stale and stops right before removing it. The guard ages out, so another breaker
// (this process) breaks the stale lock, and a new holder H takes the lock. B1 resumes, moves
// aside whatever is at the path, and stops again: at that moment the lock must still look held
// to everyone (nobody else may take it), and once B1 has finished, H must still hold it: its
// record at the path and its unlock succeeding. A breaker that moved the entry aside by rename
// left the path empty there: a third process took the lock while H held it.

import Foundation
import Testing

@_spi(Testing) @testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("DistributedLock: a stalled breaker", .serialized)
struct DistributedLockStalledBreakerTests {
    /// The scheduler state letter of process `pid` ("T" when stopped), "?" if unknown.
    static func processState(_ pid: pid_t) -> String {
        guard let text = DLTest.read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return "?" }
        return text[text.index(after: close)...].drop(while: { $0 == " " }).first.map(String.init) ?? "?"
    }

    /// Waits (bounded) until `pid` has stopped itself.
    static func awaitStopped(_ pid: pid_t) -> Bool {
        lockEventually(within: .seconds(60)) { processState(pid) == "T" }
    }

    @Test("a breaker stopped past the guard's age never displaces the lock of a later holder")
    func stalledBreakerKeepsNewHolder() throws {
        let directory = try DLTempDirectory()
        let path = directory.file("stalled.lock")
        // A stale lock: its holder, a helper that exited, is dead.
        let dead = try DLTest.spawn(["noop"])
        _ = DLTest.wait(dead)
        try DLTest.write(path, DLTest.record(pid: dead, token: "0000000000000000000000000000dead"))

        let output = directory.file("breaker.out")
        let breaker = try DLTest.spawn(["break-stalling", path, output])
        var breakerRunning = true
        defer { if breakerRunning { kill(breaker, SIGKILL); _ = DLTest.wait(breaker) } }
        try #require(Self.awaitStopped(breaker), "the breaker never reached its first stop")

        // The guard ages out (shortened for the test); this process breaks the stale lock.
        let savedAge = DistributedLock.breakGuardMaximumAge
        DistributedLock.breakGuardMaximumAge = .milliseconds(50)
        defer { DistributedLock.breakGuardMaximumAge = savedAge }
        let other = try DistributedLock(path: path)
        let broke = lockEventually(within: .seconds(30)) { (try? other.breakLockIfStale()) == true }
        try #require(broke, "the stale lock could not be broken past the stalled breaker's guard")

        // A new holder.
        let holder = try DistributedLock(path: path)
        try #require(try holder.tryLock())
        let heldRecord = try #require(DLTest.read(path))

        // The stalled breaker resumes, moves the entry aside, and stops again.
        kill(breaker, SIGCONT)
        try #require(Self.awaitStopped(breaker), "the breaker never reached its second stop")
        // Nobody may take the lock now: H holds it.
        let third = try DistributedLock(path: path)
        let thirdTook = try third.tryLock()
        #expect(!thirdTook, "the lock was free while its holder held it: a third process took it")
        if thirdTook { try? third.unlock() }

        kill(breaker, SIGCONT)
        let ending = DLTest.wait(breaker)
        breakerRunning = false
        #expect(ending == DLTest.Ending(exitCode: 0, signal: nil))
        #expect(DLTest.read(output) == "false", "the stalled breaker must report that it removed nothing")
        #expect(DLTest.read(path) == heldRecord, "the holder's record is no longer at the path")
        #expect(throws: Never.self, "the holder lost its lock") { try holder.unlock() }
        #expect(directory.leftovers.isEmpty, "left behind: \(directory.leftovers)")
    }
}
