// Which recipe a DistributedLock uses: the fast one (an unnamed O_TMPFILE file, ownership
// proved by device and inode) only on a file system known to be local to this host, the
// portable one (a named private file and link(2), ownership proved by the token) everywhere
// else. A FUSE file system supports O_TMPFILE and may front a shared or remote store, so a lock
// there must use the portable recipe: checked on a real FUSE mount (bindfs, which `make test`
// installs; scripts/ensure-test-deps.sh), taken and released by two processes, and on an
// overlay mount, where O_TMPFILE works, so only the file system rule keeps the fast recipe out.

import CInterlock
import Foundation
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#endif

@Suite("DistributedLock: the recipe follows the file system")
struct DistributedLockRecipeTests {
    /// The statfs type of `path`'s file system.
    static func fileSystemType(_ path: String) -> Int64? {
        var type: Int64 = 0
        return ilk_fs_type(path, &type) == 0 ? type : nil
    }

    @Test("on ext2/3/4, xfs, btrfs or tmpfs the fast recipe; on any other file system the portable one")
    func recipeFollowsStatfs() throws {
        let directory = try DLTempDirectory()
        let type = try #require(Self.fileSystemType(directory.path))
        let local: Set<Int64> = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994]
        let lock = try DistributedLock(path: directory.file("recipe.lock"))
        #expect(
            lock.usesLocalFileSystemRecipe == local.contains(type),
            "file system type 0x\(String(type, radix: 16)) at \(directory.path)")
        #expect(try lock.tryLock())
        try lock.unlock()
        #expect(directory.leftovers.isEmpty)
    }

    @Test("on tmpfs (/dev/shm) the fast recipe")
    func tmpfsIsLocal() throws {
        guard Self.fileSystemType("/dev/shm") == 0x0102_1994 else {
            try Test.cancel("/dev/shm is not a tmpfs here")
        }
        let path = "/dev/shm/interlock-recipe-\(getpid()).lock"
        defer { unlink(path) }
        let lock = try DistributedLock(path: path)
        #expect(lock.usesLocalFileSystemRecipe)
        #expect(try lock.tryLock())
        try lock.unlock()
    }

    @Test("on a FUSE mount the portable recipe, and two processes exclude each other there")
    func fuseUsesPortableRecipe() throws {
        let directory = try DLTempDirectory()
        let source = directory.file("source"), mountPoint = directory.file("mount")
        try #require(mkdir(source, 0o755) == 0 && mkdir(mountPoint, 0o755) == 0)
        let candidates: [String] = ["/usr/bin/bindfs", "/bin/bindfs", "/usr/local/bin/bindfs"]
        guard let bindfs = candidates.first(where: { access($0, X_OK) == 0 }) else {
            Issue.record("bindfs is not installed: run scripts/ensure-test-deps.sh (make test does)")
            return
        }
        let mounted = try Self.run(bindfs, [source, mountPoint])
        guard mounted == 0 else {
            // No /dev/fuse, or FUSE refused in this container: say so, visibly.
            try Test.cancel(
                "bindfs could not mount a FUSE file system here (exit \(mounted)); /dev/fuse present: \(access("/dev/fuse", F_OK) == 0)"
            )
        }
        defer { Self.unmount(mountPoint) }
        #expect(Self.fileSystemType(mountPoint) == 0x6573_5546, "not a FUSE mount")  // FUSE_SUPER_MAGIC

        let path = mountPoint + "/fuse.lock"
        let lock = try DistributedLock(path: path)
        #expect(!lock.usesLocalFileSystemRecipe, "a FUSE file system is not known to be local")
        #expect(try lock.tryLock())
        // The lock is visible in the backing directory: one entry, a complete record.
        #expect(DLTest.read(source + "/fuse.lock")?.hasPrefix("interlock-distributed-lock 1\n") == true)
        // Another process sees it held, then free.
        let output = directory.file("probe.out")
        #expect(try DLTest.probe("tryLock", path, output: output, environment: []) == "held")
        try lock.unlock()
        #expect(try DLTest.probe("tryLock", path, output: output, environment: []) == "ok")
        // That process exited holding it; this one cannot take it, then breaks it as stale.
        #expect(try !lock.tryLock())
        #expect(try lock.breakLockIfStale())
        #expect(try lock.tryLock())
        try lock.unlock()
        #expect(directory.leftovers.isEmpty)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: source))?.filter { $0.hasPrefix(".ilk-") } == [])
    }

    @Test("on an overlay file system, where O_TMPFILE works, still the portable recipe")
    func overlayUsesPortableRecipe() throws {
        let directory = try DLTempDirectory()
        let parts = ["lower", "upper", "work", "merged"].map(directory.file)
        for part in parts { try #require(mkdir(part, 0o755) == 0) }
        let options = "lowerdir=\(parts[0]),upperdir=\(parts[1]),workdir=\(parts[2])"
        guard mount("overlay", parts[3], "overlay", 0, options) == 0 else {
            let code = errno  // EPERM when not root (mounting needs CAP_SYS_ADMIN)
            try Test.cancel("cannot mount an overlay file system here: \(String(cString: strerror(code)))")
        }
        defer { umount2(parts[3], 0) }
        #expect(Self.fileSystemType(parts[3]) == 0x794C_7630, "not an overlay mount")  // OVERLAYFS_SUPER_MAGIC
        let lock = try DistributedLock(path: parts[3] + "/overlay.lock")
        #expect(try lock.tryLock())
        // Checked after taking the lock: O_TMPFILE works on overlay, so only the statfs rule
        // keeps the fast recipe away (the object would otherwise still report it in use).
        #expect(!lock.usesLocalFileSystemRecipe, "overlay is not known to be local")
        #expect(
            try DLTest.probe(
                "tryLock", parts[3] + "/overlay.lock", output: directory.file("probe.out"), environment: []) == "held")
        try lock.unlock()
        #expect(directory.leftovers.isEmpty)
    }

    /// A lock object forced onto the portable recipe, as on NFS or FUSE, in a local directory.
    static func portableLock(_ path: String) throws -> DistributedLock {
        let lock = try DistributedLock(path: path)
        lock.unnamedUnsupported.store(true, ordering: .relaxed)
        #expect(!lock.usesLocalFileSystemRecipe)
        return lock
    }

    @Test("the portable recipe's unlock proves ownership by the token when the inode number changed")
    func portableUnlockDoesNotNeedTheInodeNumber() throws {
        // sshfs numbers inodes per name (SFTP has no inode numbers): the lock's name gets another
        // number than the temporary file it was linked from, and unlock used to throw lockLost
        // ("someone else's lock is at the path"), leaving the lock held forever
        // (scripts/test-hosts.sh). A byte-identical copy renamed over the lock plays that here.
        let directory = try DLTempDirectory()
        let lock = try Self.portableLock(directory.file("l"))
        for _ in 0..<3 {
            #expect(try lock.tryLock())
            let copy = directory.file("copy")
            try DLTest.write(copy, try #require(DLTest.read(lock.path)))
            try #require(rename(copy, lock.path) == 0)
            try lock.unlock()
            #expect(directory.entries.isEmpty)
        }
        // Someone else's lock under a new number is still someone else's: lockLost, left alone.
        let theirs = try Self.portableLock(lock.path)
        #expect(try lock.tryLock())
        try lock.breakLock()
        #expect(try theirs.tryLock())
        let record = try #require(DLTest.read(lock.path))
        let copy = directory.file("copy")
        try DLTest.write(copy, record)
        try #require(rename(copy, lock.path) == 0)
        let error = try #require(throws: DistributedLockError.self) { try lock.unlock() }
        #expect(error.code == .lockLost)
        #expect(error.description.contains(lock.path))
        #expect(DLTest.read(lock.path) == record)
        #expect(directory.entries == ["l"])
        try theirs.unlock()
        #expect(directory.entries.isEmpty)
    }

    @Test("a link that fails with another errno than EEXIST while the lock is held means held (sshfs says EPERM)")
    func linkFailureWhileHeldMeansHeld() throws {
        let directory = try DLTempDirectory()
        let lock = try Self.portableLock(directory.file("l"))
        let output = directory.file("probe.out")
        func probe() throws -> String {
            let ending = try DLTest.run(
                ["--link-errors", "sshfs", "probe", "tryLock", lock.path, output], environment: DLTest.namedTemporary)
            #expect(ending == DLTest.Ending(exitCode: 0, signal: nil))
            return DLTest.read(output) ?? "<no output>"
        }
        #expect(try lock.tryLock())
        #expect(try probe() == "held")
        try lock.unlock()
        #expect(try probe() == "ok")  // the child took it (and exited holding it)
        #expect(try !lock.tryLock())
        #expect(try lock.breakLockIfStale())
        #expect(directory.leftovers.isEmpty)
    }

    @Test(
        "an unlock that the file system fails before it could look keeps the lock held, and a retry releases it",
        arguments: [false, true])
    func unlockFailureKeepsHolding(portable: Bool) throws {
        // What a network file system does when its server is gone (scripts/test-hosts.sh cuts
        // the network under a holder: EIO). Here the lock's directory is swapped for a file, so
        // that lstat(2) fails with ENOTDIR, then put back.
        let directory = try DLTempDirectory()
        let parent = directory.file("d"), away = directory.file("away")
        try #require(mkdir(parent, 0o755) == 0)
        let lock = try portable ? Self.portableLock(parent + "/l") : DistributedLock(path: parent + "/l")
        #expect(try lock.tryLock())
        try #require(rename(parent, away) == 0)
        try DLTest.write(parent, "not a directory")
        let error = try #require(throws: DistributedLockError.self) { try lock.unlock() }
        #expect(error.code == .parentNotDirectory)
        #expect(error.description.contains(lock.path))
        #expect(try !lock.tryLock())  // still held by this object
        try #require(unlink(parent) == 0 && rename(away, parent) == 0)
        try lock.unlock()
        #expect((try? FileManager.default.contentsOfDirectory(atPath: parent)) == [])
    }

    /// Runs `tool` with `arguments` (posix_spawn, then waitpid) and returns its exit status
    /// (-1 if it could not start or did not exit normally).
    static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        guard posix_spawn(&pid, tool, nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
    }

    /// Unmounts a FUSE mount (fusermount3, fusermount, then umount, whichever exists).
    static func unmount(_ mountPoint: String) {
        let tools: [(String, [String])] = [
            ("/usr/bin/fusermount3", ["-u", mountPoint]), ("/usr/bin/fusermount", ["-u", mountPoint]),
            ("/bin/umount", [mountPoint]), ("/usr/bin/umount", [mountPoint]),
        ]
        for (tool, arguments) in tools where access(tool, X_OK) == 0 {
            if (try? run(tool, arguments)) == 0 { return }
        }
        Issue.record("could not unmount the FUSE mount at \(mountPoint)")
    }
}
