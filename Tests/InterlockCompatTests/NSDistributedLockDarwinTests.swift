// NSDistributedLock beside Foundation on Darwin, which takes the same lock by creating a
// directory at the path (mkdir): here a directory at the path is a lock held, with the
// directory's modification time as its date, and break() removes it when it is empty. The
// other direction (Darwin's mkdir failing with EEXIST on this class's file) is checked with
// mkdir itself.

import Foundation
import InterlockCompat
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("NSDistributedLock with Darwin's directory locks")
struct NSDistributedLockDarwinTests {
    @Test("a directory at the path (Darwin's lock) is held: try() is false, lockDate is its mtime")
    func darwinLockIsHeld() throws {
        let directory = try makeLockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lock"
        #expect(mkdir(path, 0o755) == 0)
        var times = [
            timespec(tv_sec: 1_000_000_000, tv_nsec: 500_000_000),
            timespec(tv_sec: 1_000_000_000, tv_nsec: 500_000_000),
        ]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        let lock = try #require(NSDistributedLock(path: path))
        #expect(!lock.try())
        #expect(!lock.try())
        #expect(abs(lock.lockDate.timeIntervalSince1970 - 1_000_000_000.5) < 1e-6)
        // The directory is left as it was.
        var status = stat()
        #expect(lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR)
    }

    @Test("break() removes an empty directory lock; the lock can then be taken")
    func breakRemovesDarwinLock() throws {
        let directory = try makeLockDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lock"
        #expect(mkdir(path, 0o755) == 0)
        let lock = try #require(NSDistributedLock(path: path))
        lock.break()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(lock.try())
        // Darwin's mkdir now finds the path taken: Darwin sees this lock as held.
        #expect(mkdir(path, 0o755) == -1 && errno == EEXIST)
        lock.unlock()
        #expect(mkdir(path, 0o755) == 0)
    }

    @Test("break() of a directory that is not empty stops the process, naming the path")
    func breakRefusesNonEmptyDirectory() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // Named after the test process (the child's parent), which removes it afterwards.
            let directory = NSTemporaryDirectory() + "/ilk-nsdlock-darwin-exit-\(getppid())"
            #expect(mkdir(directory, 0o755) == 0)
            let path = directory + "/lock"
            #expect(mkdir(path, 0o755) == 0)
            #expect(creat(path + "/inside", 0o644) >= 0)
            guard let lock = NSDistributedLock(path: path) else { return }
            lock.break()
        }
        try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "/ilk-nsdlock-darwin-exit-\(getpid())")
        compatExpectStderr(result, contains: "cannot remove the directory at")
    }
}
