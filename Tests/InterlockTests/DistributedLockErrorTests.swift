// DistributedLock on bad and hostile paths: every failure is a thrown error naming the path and
// the operating system's reason; symbolic links are never followed; nothing but a lock is ever
// removed; nothing is left behind; created files respect the umask.

import Foundation
import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("DistributedLock errors")
struct DistributedLockErrorTests {
    /// Runs `body`, which must throw a DistributedLockError with `code` whose description names
    /// `path` and contains every string of `mentions`.
    func expectError(
        _ code: DistributedLockError.Code, path: String, mentions: [String] = [],
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("expected a \(code) error, nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as DistributedLockError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.path == path, sourceLocation: sourceLocation)
            #expect(error.description.contains("\"\(path)\""), "\(error)", sourceLocation: sourceLocation)
            for text in mentions {
                #expect(
                    error.description.contains(text), "\(error) should mention \(text)", sourceLocation: sourceLocation)
            }
        } catch {
            Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func emptyPath() {
        expectError(.invalidPath, path: "", mentions: ["empty"]) { _ = try DistributedLock(path: "") }
    }

    @Test func pathEndingInSlashOrDots() throws {
        let directory = try DLTempDirectory()
        for path in [directory.path + "/", directory.path + "/.", directory.path + "/.."] {
            expectError(.invalidPath, path: path) { _ = try DistributedLock(path: path) }
        }
    }

    @Test func missingParent() throws {
        let directory = try DLTempDirectory()
        let path = directory.file("no/such/dir/l")
        expectError(.parentMissing, path: path, mentions: ["No such file or directory", "errno \(ENOENT)"]) {
            _ = try DistributedLock(path: path)
        }
    }

    @Test func parentIsAFile() throws {
        let directory = try DLTempDirectory()
        try DLTest.write(directory.file("plain"), "x")
        let path = directory.file("plain/l")
        expectError(.parentNotDirectory, path: path, mentions: ["Not a directory"]) {
            _ = try DistributedLock(path: path)
        }
    }

    @Test func nameTooLong() throws {
        let directory = try DLTempDirectory()
        let path = directory.file(String(repeating: "n", count: 300))
        expectError(.nameTooLong, path: path, mentions: ["File name too long", "errno \(ENAMETOOLONG)"]) {
            _ = try DistributedLock(path: path)
        }
    }

    @Test func unwritableParentIsPermissionDenied() throws {
        let directory = try DLTempDirectory()
        let readOnly = directory.file("ro")
        #expect(mkdir(readOnly, 0o555) == 0)
        chmod(readOnly, 0o555)
        let path = readOnly + "/l"
        let output = try DLTest.probeUnprivileged("init", path, output: directory.file("out"))
        #expect(output.contains("\"\(path)\""), "\(output)")
        #expect(output.contains("Permission denied"), "\(output)")
        #expect(output.contains("errno \(EACCES)"), "\(output)")
        #expect(output.contains("not writable"), "\(output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: readOnly).isEmpty)
    }

    @Test func unreadableLockIsPermissionDenied() throws {
        let directory = try DLTempDirectory()
        let path = directory.file("l")
        // Taken by a child with umask 077: mode 0600, owned by us, unreadable to others.
        #expect(try DLTest.run(["--umask", "077", "hold", path]) == DLTest.Ending(exitCode: 0, signal: nil))
        chmod(directory.path, 0o777)  // so that init, which wants a writable parent, succeeds
        let output = try DLTest.probeUnprivileged("lockInfo", path, output: directory.file("out"))
        #expect(output.hasPrefix("DistributedLock.lockInfo at \"\(path)\": open failed"), "\(output)")
        #expect(output.contains("Permission denied"), "\(output)")
        #expect(DLTest.lstatEntry(path) != nil)
    }

    @Test(arguments: [[], DLTest.namedTemporary])
    func createdFilesRespectTheUmask(environment: [String]) throws {
        let directory = try DLTempDirectory()
        for (mask, expected) in [("022", 0o644), ("027", 0o640), ("077", 0o600), ("0", 0o666)] as [(String, mode_t)] {
            let path = directory.file("l\(mask)")
            #expect(
                try DLTest.run(["--umask", mask, "hold", path], environment: environment)
                    == DLTest.Ending(exitCode: 0, signal: nil))
            let entry = try #require(DLTest.lstatEntry(path))
            #expect(
                entry.st_mode & 0o7777 == expected, "umask \(mask): mode \(String(entry.st_mode & 0o7777, radix: 8))")
        }
        #expect(directory.leftovers.isEmpty)
    }

    @Test func symbolicLinkAtPathIsNeverFollowed() throws {
        let directory = try DLTempDirectory()
        let target = directory.file("precious")
        try DLTest.write(target, "precious data")
        let path = directory.file("l")
        #expect(symlink(target, path) == 0)
        expectError(.notALock, path: path, mentions: ["symbolic link"]) { _ = try DistributedLock(path: path) }

        // Appearing after init: every operation refuses, the link and its target stay as they were.
        #expect(unlink(path) == 0)
        let lock = try DistributedLock(path: path)
        #expect(symlink(target, path) == 0)
        expectError(.notALock, path: path, mentions: ["symbolic link"]) { _ = try lock.tryLock() }
        expectError(.notALock, path: path, mentions: ["symbolic link"]) { try lock.breakLock() }
        expectError(.notALock, path: path, mentions: ["symbolic link"]) { _ = try lock.lockInfo() }
        expectError(.notALock, path: path, mentions: ["symbolic link"]) {
            _ = try lock.breakLockIfStale(olderThan: .zero)
        }
        #expect(DLTest.read(target) == "precious data")
        #expect(DLTest.lstatEntry(path).map { $0.st_mode & S_IFMT == S_IFLNK } == true)
        #expect(directory.entries == ["l", "precious"])
    }

    @Test func danglingSymbolicLinkIsNotFollowedToCreateItsTarget() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let target = directory.file("would-be-created")
        #expect(symlink(target, lock.path) == 0)
        expectError(.notALock, path: lock.path) { _ = try lock.tryLock() }
        #expect(DLTest.lstatEntry(target) == nil)
        #expect(directory.entries == ["l"])
        // The same with the NFS recipe (named temporary file), in a child.
        let output = try DLTest.probe(
            "tryLock", lock.path, output: directory.path + "-out", environment: DLTest.namedTemporary)
        unlink(directory.path + "-out")
        #expect(output.contains("symbolic link"), "\(output)")
        #expect(DLTest.lstatEntry(target) == nil)
        #expect(directory.entries == ["l"])
    }

    @Test func directoryAtPathIsNotALock() throws {
        let directory = try DLTempDirectory()
        let path = directory.file("l")
        #expect(mkdir(path, 0o755) == 0)
        expectError(.notALock, path: path, mentions: ["directory"]) { _ = try DistributedLock(path: path) }
        #expect(rmdir(path) == 0)
        let lock = try DistributedLock(path: path)
        #expect(mkdir(path, 0o755) == 0)
        expectError(.notALock, path: path, mentions: ["directory"]) { _ = try lock.tryLock() }
        expectError(.notALock, path: path, mentions: ["directory"]) { try lock.breakLock() }
        #expect(DLTest.lstatEntry(path).map { $0.st_mode & S_IFMT == S_IFDIR } == true)
        #expect(directory.entries == ["l"])
    }

    @Test func foreignFileAtPathIsNotALockAndIsNeverRemoved() throws {
        let directory = try DLTempDirectory()
        let lock = try DistributedLock(path: directory.file("l"))
        let foreign = [
            "hello\n",
            "",
            "interlock-distributed-lock 1\npid=1\nhost=h\ntime=1.000000000\ntoken=0123\n",  // short token
            "interlock-distributed-lock 1\npid=0\nhost=h\ntime=1.000000000\ntoken=0123456789abcdef0123456789abcdef\n",
            "interlock-distributed-lock 1\npid=5\nhost=h\ntime=1.5\ntoken=0123456789abcdef0123456789abcdef\n",
            "interlock-distributed-lock 1\npid=5\nhost=h\ntime=1.000000000\ntoken=0123456789ABCDEF0123456789abcdef\n",
            // no final newline
            "interlock-distributed-lock 1\npid=5\nhost=h\ntime=1.000000000\ntoken=0123456789abcdef0123456789abcdef",
            "interlock-distributed-lock 1\npid=5\nhost=h\ntime=1.000000000\ntoken=0123456789abcdef0123456789abcdef\nextra=1\n",
            String(repeating: "x", count: 5000),
        ]
        for contents in foreign {
            try DLTest.write(lock.path, contents)
            expectError(.notALock, path: lock.path, mentions: ["not a lock"]) { _ = try lock.tryLock() }
            expectError(.notALock, path: lock.path) { try lock.breakLock() }
            expectError(.notALock, path: lock.path) { _ = try lock.lockInfo() }
            #expect(DLTest.read(lock.path) == contents)
            #expect(directory.entries == ["l"])
        }
    }

    @Test func failedCreationLeavesNothingBehind() throws {
        let directory = try DLTempDirectory()
        let parent = directory.file("p")
        #expect(mkdir(parent, 0o755) == 0)
        let lock = try DistributedLock(path: parent + "/l")
        // The parent disappears after init: the error names the path and the reason.
        #expect(rmdir(parent) == 0)
        expectError(.parentMissing, path: lock.path, mentions: ["No such file or directory"]) { _ = try lock.tryLock() }
        #expect(directory.entries.isEmpty)
        // The object is usable again once the parent is back.
        #expect(mkdir(parent, 0o755) == 0)
        #expect(try lock.tryLock())
        try lock.unlock()
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent).isEmpty)
    }

    @Test func errorDescriptionFormat() {
        let error = DistributedLockError(
            code: .permissionDenied, path: "/x/l", operation: "tryLock",
            message: "open failed", osErrorNumber: EACCES)
        #expect(
            error.description == "DistributedLock.tryLock at \"/x/l\": open failed: Permission denied (errno \(EACCES))"
        )
        #expect(error.osReason == "Permission denied")
    }
}
