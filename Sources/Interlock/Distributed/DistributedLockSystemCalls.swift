// The POSIX calls DistributedLock is built from, each wrapped once: retried on EINTR, its
// failure turned into a `_DistributedLockFailure` that names the call, the path it acted on and
// errno. Nothing here follows a symbolic link in the last component of a lock's path:
// entries are examined with lstat(2), opened with O_NOFOLLOW, created with O_CREAT|O_EXCL
// (which never follows a link either), and link(2)/rename(2)/unlink(2) act on the name itself.
//
// The library imports neither Foundation nor Dispatch, so this file talks to the C library
// directly. Random bytes come from the standard library's SystemRandomNumberGenerator, which on
// Linux is getrandom(2) (the Glibc module does not export getrandom itself).

import CInterlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure below the public API, converted to a `DistributedLockError` by the operation
/// that saw it (which adds its own name and the lock's path).
@usableFromInline
internal enum _DistributedLockFailure: Error {
    /// A system call failed: its name, the path it acted on, and errno.
    case system(call: String, subject: String, errno: Int32)
    /// `subject` exists but is not an Interlock lock; `why` says what it is instead.
    case notALock(subject: String, why: String)
}

/// Identity of a file: same device and inode number. Inode numbers are reused once a file is
/// gone, so equal identities prove nothing alone; the lock's token is the proof.
@usableFromInline
internal struct _FileIdentity: Equatable, Sendable {
    @usableFromInline var device: UInt64
    @usableFromInline var inode: UInt64
}

@usableFromInline
internal enum _DLSys {
    /// The largest lock record we accept; a real one is about 150 bytes.
    static let recordLimit = 1024

    @inline(__always)
    static func fail(_ call: String, _ subject: String, _ code: Int32 = errno) -> _DistributedLockFailure {
        .system(call: call, subject: subject, errno: code)
    }

    /// lstat(2): the entry itself, never what a symbolic link points to; `nil` when absent.
    static func lstatEntry(_ path: String) throws(_DistributedLockFailure) -> stat? {
        var info = stat()
        let result = path.withCString { lstat($0, &info) }
        if result == 0 { return info }
        let code = errno
        if code == ENOENT { return nil }
        throw fail("lstat", path, code)
    }

    static func identity(_ info: stat) -> _FileIdentity {
        _FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    static func isRegular(_ info: stat) -> Bool { (info.st_mode & S_IFMT) == S_IFREG }

    /// What a non-lock entry is, for error messages.
    static func kindName(_ info: stat) -> String {
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link (never followed)"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device"
        default: return "a regular file"
        }
    }

    /// Creates `path` exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 less the umask, which
    /// the kernel applies), writes `bytes`, optionally fsyncs, and closes it. On any failure
    /// after the create the file is removed again, so nothing half-written stays behind.
    /// - Returns: the new file's identity.
    static func createExclusive(
        _ path: String, _ bytes: [UInt8], sync: Bool
    ) throws(_DistributedLockFailure) -> _FileIdentity {
        let fd = path.withCString {
            open($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
        }
        if fd < 0 { throw fail("open(O_CREAT|O_EXCL)", path) }
        var failure: _DistributedLockFailure?
        var written = 0
        while written < bytes.count && failure == nil {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n > 0 {
                written += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                failure = fail("write", path, n == 0 ? EIO : errno)
            }
        }
        if failure == nil && sync && fsync(fd) != 0 { failure = fail("fsync", path) }
        var info = stat()
        if failure == nil && fstat(fd, &info) != 0 { failure = fail("fstat", path) }
        // close(2) also reports a failed write-back (NFS flushes dirty pages on close).
        if close(fd) != 0 && failure == nil && errno != EINTR { failure = fail("close", path) }
        if let failure {
            _ = path.withCString { unlink($0) }
            throw failure
        }
        return identity(info)
    }

    // swift-format-ignore
    /// statfs(2) f_type of the file systems known to be local to this host, on which the
    /// unnamed-file recipe's proof of ownership (device and inode of a file we keep open) holds:
    /// ext2/3/4, xfs, btrfs and tmpfs. Everything else (NFS, FUSE, overlay, CIFS, unknown) may
    /// be shared or may reuse inode numbers behind our back, and gets the named recipe.
    static let localFileSystemTypes: Set<Int64> = [
        0xEF53,       // EXT2_SUPER_MAGIC (ext2, ext3, ext4)
        0x5846_5342,  // XFS_SUPER_MAGIC
        0x9123_683E,  // BTRFS_SUPER_MAGIC
        0x0102_1994,  // TMPFS_MAGIC
    ]

    /// The statfs(2) type of the file system holding `directory`, or nil when statfs fails.
    static func fileSystemType(_ directory: String) -> Int64? {
        var type: Int64 = 0
        return directory.withCString({ ilk_fs_type($0, &type) }) == 0 ? type : nil
    }

    #if os(Linux)
    /// O_TMPFILE (Linux 3.11), which the Glibc module does not export: __O_TMPFILE | O_DIRECTORY,
    /// with __O_TMPFILE = 0o20000000 on every architecture Swift supports (asm-generic/fcntl.h).
    static let openUnnamedFlag: Int32 = 0o20000000 | O_DIRECTORY
    #endif

    /// What `linkUnnamed` did.
    enum UnnamedOutcome {
        /// The record is at the entry now: its identity, and a descriptor open on it, which the
        /// caller keeps while it holds the lock (it pins the inode number, see DistributedLock).
        case linked(_FileIdentity, descriptor: Int32)
        /// Something is at the entry already.
        case held
        /// This file system (NFS, for one) or system cannot create unnamed files, or /proc is
        /// missing: use the named temporary file instead.
        case unsupported
    }

    /// Publishes `bytes` at `entry` in one step on Linux: an unnamed file created in `directory`
    /// with O_TMPFILE (mode 0666 less the umask), written (and fsync'ed if `sync`), then given
    /// its name with linkat(2) through /proc/self/fd, which fails with EEXIST if the entry
    /// exists and never follows a symbolic link there. Same atomicity as the named recipe
    /// without a temporary name to create and remove. The unnamed file vanishes on close if it
    /// was not linked, so nothing is ever left behind.
    static func linkUnnamed(
        directory: String, entry: String, _ bytes: [UInt8], sync: Bool
    ) throws(_DistributedLockFailure) -> UnnamedOutcome {
        #if os(Linux)
        let fd = directory.withCString { open($0, openUnnamedFlag | O_WRONLY | O_CLOEXEC, 0o666) }
        if fd < 0 {
            let code = errno
            // "EOPNOTSUPP: The filesystem containing pathname does not support O_TMPFILE";
            // EISDIR/EINVAL: a kernel that predates O_TMPFILE.
            if code == EOPNOTSUPP || code == EISDIR || code == EINVAL { return .unsupported }
            throw fail("open(O_TMPFILE)", directory, code)
        }
        var linked = false
        defer { if !linked { close(fd) } }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n > 0 {
                written += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw fail("write", entry, n == 0 ? EIO : errno)
            }
        }
        if sync && fsync(fd) != 0 { throw fail("fsync", entry) }
        var info = stat()
        if fstat(fd, &info) != 0 { throw fail("fstat", entry) }
        let source = "/proc/self/fd/\(fd)"
        let result = source.withCString { s in
            entry.withCString { e in linkat(AT_FDCWD, s, AT_FDCWD, e, AT_SYMLINK_FOLLOW) }
        }
        if result == 0 {
            linked = true
            return .linked(identity(info), descriptor: fd)
        }
        let code = errno
        if code == EEXIST { return .held }
        if code == ENOENT && access("/proc/self/fd", F_OK) != 0 { return .unsupported }
        throw fail("linkat", entry, code)
        #else
        return .unsupported
        #endif
    }

    /// Reads the lock record at `path` without following a symbolic link and without opening
    /// anything but a regular file (lstat first; fstat after open proves it is the same file).
    /// - Returns: `nil` when nothing is at `path`.
    /// - Throws: `.notALock` when something that is not a lock record is there.
    static func readRecord(_ path: String) throws(_DistributedLockFailure) -> (_LockRecord, _FileIdentity)? {
        guard let before = try lstatEntry(path) else { return nil }
        guard isRegular(before) else { throw .notALock(subject: path, why: "it is \(kindName(before))") }
        let fd = path.withCString { open($0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) }
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }  // removed since the lstat: nobody holds it now
            if code == ELOOP { throw .notALock(subject: path, why: "it is a symbolic link (never followed)") }
            throw fail("open", path, code)
        }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) != 0 { throw fail("fstat", path) }
        guard isRegular(info) else { throw .notALock(subject: path, why: "it is \(kindName(info))") }
        guard Int(info.st_size) <= recordLimit else {
            throw .notALock(
                subject: path, why: "it is a regular file of \(info.st_size) bytes, too large for a lock record")
        }
        var buffer = [UInt8](repeating: 0, count: recordLimit + 1)
        var count = 0
        // Stop at the size fstat reported: one read(2) for a record instead of a second one to
        // see the end (a file that grows meanwhile fails to parse, which is right).
        let size = max(Int(info.st_size), 1)
        while count < size {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n > 0 {
                count += n
            } else if n == 0 {
                break
            } else if errno == EINTR {
                continue
            } else {
                throw fail("read", path)
            }
        }
        guard let record = _LockRecord(parsing: buffer[..<count]) else {
            throw .notALock(subject: path, why: "it is a regular file that does not hold an Interlock lock record")
        }
        return (record, identity(info))
    }

    /// link(2). - Returns: 0, or errno.
    static func linkEntry(_ from: String, _ to: String) -> Int32 {
        let result = from.withCString { f in to.withCString { t in link(f, t) } }
        return result == 0 ? 0 : errno
    }

    /// rename(2). - Returns: 0, or errno.
    static func renameEntry(_ from: String, _ to: String) -> Int32 {
        let result = from.withCString { f in to.withCString { t in rename(f, t) } }
        return result == 0 ? 0 : errno
    }

    /// renameat2(2) with RENAME_EXCHANGE: swaps the two entries atomically. - Returns: 0, or
    /// errno (EINVAL or ENOSYS where the file system or kernel cannot, e.g. NFS).
    static func exchangeEntries(_ a: String, _ b: String) -> Int32 {
        let result = a.withCString { x in b.withCString { y in ilk_rename_exchange(x, y) } }
        return result == 0 ? 0 : errno
    }

    /// Whether `code` from `exchangeEntries` means "not supported here" (fall back).
    static func exchangeUnsupported(_ code: Int32) -> Bool {
        code == EINVAL || code == ENOSYS || code == EOPNOTSUPP || code == EXDEV
    }

    /// unlink(2). - Returns: 0, or errno.
    @discardableResult
    static func unlinkEntry(_ path: String) -> Int32 {
        path.withCString { unlink($0) } == 0 ? 0 : errno
    }

    /// The host name (gethostname(2)), with anything that is not printable ASCII replaced by
    /// `?` so that it fits on one line of a lock record.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count - 1) != 0 { return "?" }
        let raw = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return _LockRecord.sanitizedLine(raw)
    }

    /// Wall-clock time (CLOCK_REALTIME) since the Unix epoch.
    static func wallClockNow() -> Duration {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
    }

    /// Sleeps for `duration` with nanosleep(2), resuming after signals.
    static func sleep(_ duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Whether process `pid` exists on this host: kill(pid, 0) succeeds, or fails with EPERM
    /// (it exists but belongs to someone else). Only ESRCH proves it is gone.
    static func processExists(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        if kill(pid, 0) == 0 { return true }
        return errno != ESRCH
    }

    /// The OS's text for `code` (strerror).
    static func reason(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
