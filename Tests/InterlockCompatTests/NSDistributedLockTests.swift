// NSDistributedLock over DistributedLock: try/unlock/break/lockDate in a temporary directory,
// init?(path:) returning nil for a missing parent, and unlock of a lock not held stopping the
// process (Foundation raises NSGenericException there).

import Foundation
import InterlockCompat
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A new empty directory under the temporary directory.
func makeLockDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "/ilk-nsdlock-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("NSDistributedLock")
struct NSDistributedLockTests {
    @Test("init?(path:) is nil when the parent directory is missing or the path empty")
    func missingParent() throws {
        let directory = try makeLockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(NSDistributedLock(path: directory + "/missing/lock") == nil)
        #expect(NSDistributedLock(path: "") == nil)
        #expect(NSDistributedLock(path: directory + "/lock") != nil)
        // Creating the object creates nothing.
        #expect(!FileManager.default.fileExists(atPath: directory + "/lock"))
    }

    @Test("try, unlock, try again; a second object is refused while the first holds it")
    func tryAndUnlock() throws {
        let directory = try makeLockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lock"
        let first = try #require(NSDistributedLock(path: path))
        let second = try #require(NSDistributedLock(path: path))
        #expect(first.lockDate == .distantPast)
        let before = Date()
        #expect(first.try())
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(!first.try())
        #expect(!second.try())
        // lockDate: the acquisition time, the same through any object on the path.
        let date = first.lockDate
        #expect(date >= before.addingTimeInterval(-1) && date <= Date().addingTimeInterval(1))
        #expect(second.lockDate == date)
        first.unlock()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(second.lockDate == .distantPast)
        #expect(second.try())
        #expect(!first.try())
        second.unlock()
    }

    @Test("break removes another object's lock; break of a free lock does nothing")
    func breakLock() throws {
        let directory = try makeLockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lock"
        let holder = try #require(NSDistributedLock(path: path))
        let breaker = try #require(NSDistributedLock(path: path))
        breaker.break()
        #expect(holder.try())
        breaker.break()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(holder.lockDate == .distantPast)
        #expect(breaker.try())
        #expect(breaker.lockDate != .distantPast)
        breaker.unlock()
    }

    /// Proves that unlock() without try() stops the process with Foundation's method name and
    /// DistributedLock's notHeld reason on standard error.
    @Test("unlock of a lock this object does not hold stops the process")
    func unlockNotHeld() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let path = NSTemporaryDirectory() + "/ilk-nsdlock-exit-\(getpid())"
            guard let lock = NSDistributedLock(path: path) else { exit(0) }  // would pass: fails the test
            lock.unlock()
        }
        compatExpectStderr(result, contains: "*** -[NSDistributedLock unlock]: DistributedLock.unlock at \"")
        compatExpectStderr(result, contains: "this DistributedLock object does not hold the lock")
    }

    /// Proves that unlock() of a lock broken meanwhile stops the process, saying the lock was
    /// broken and nothing is at the path.
    @Test("unlock after the lock was broken stops the process")
    func unlockAfterBreak() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let path = NSTemporaryDirectory() + "/ilk-nsdlock-exit-broken-\(getpid())"
            guard let lock = NSDistributedLock(path: path), lock.try() else { exit(0) }
            NSDistributedLock(path: path)?.break()
            lock.unlock()
        }
        compatExpectStderr(result, contains: "*** -[NSDistributedLock unlock]: DistributedLock.unlock at \"")
        compatExpectStderr(
            result, contains: "the lock held by this object was broken; nothing is at the path now")
    }
}
