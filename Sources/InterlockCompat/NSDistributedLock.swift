// NSDistributedLock: Foundation's lock between processes and hosts, over Interlock's
// DistributedLock (Sources/Interlock/Distributed/).
//
// Darwin's lock is a directory at the path (mkdir), Interlock's a file. DistributedLock refuses
// to be created over a directory (it is "not a lock"), so this class creates its
// DistributedLock when it first finds the path free of one, and until then answers for the
// directory itself: held, dated by its mtime, broken by rmdir. The DistributedLock, once made,
// is kept for the object's life (a Mutex guards the slot, so one object may be shared between
// threads as on Darwin). swift-corelibs-foundation, the Foundation
// of Linux, has no NSDistributedLock (checked with the 6.3 toolchain: `import Foundation`
// alone does not find the name), so this class does not clash with it.

import Foundation
import Interlock
import Synchronization

/// Foundation's `NSDistributedLock` on Linux: a lock that several processes, on one host or on
/// several hosts sharing a file system (NFS included), use to restrict access to a resource.
///
/// The lock is the file at the path given to ``init(path:)``, held by Interlock's
/// `DistributedLock` (which records the holder's process, host and acquisition time, and
/// proves ownership with a token). As in Foundation it never waits: ``try()`` answers at once;
/// release it with ``unlock()``, and remove a lock whose holder died with ``break()``.
/// It does not conform to `NSLocking` and has no `lock()`, as in Foundation.
///
/// With Darwin on the same path. Foundation on Darwin takes the lock by creating a directory at
/// the path (`mkdir`), where this class creates a file; each sees the other's lock as held. A
/// Darwin process's `mkdir` fails on this class's file, and here a directory at the path makes
/// ``try()`` return `false`, ``lockDate`` return the directory's modification time, and
/// ``break()`` remove it (when empty, as Darwin's are). So processes on Darwin and Linux
/// sharing a directory (NFS, SMB) exclude each other, and either can break the other's lock.
///
/// Exceptions. Where Foundation on Darwin raises `NSGenericException` (``try()`` on a
/// file-system error, ``unlock()`` of a lock this object does not hold or that was broken
/// meanwhile, ``break()`` that cannot remove the lock), this class stops the process with
/// `fatalError` and a message in Foundation's style naming the path and the reason. Swift code
/// cannot catch an Objective-C exception, so a Swift caller on Darwin dies there as well;
/// Linux has no Objective-C exceptions to raise.
open class NSDistributedLock: NSObject {
    /// The path given to ``init(path:)``.
    private let path: String
    /// The lock on the path, made when the path was first found free of a Darwin lock.
    private let slot: Mutex<DistributedLock?>

    /// Creates an object for the lock at `path`; creates nothing in the file system.
    ///
    /// Returns `nil`, as Foundation does, when the path is unusable: empty or too long, its
    /// parent directory missing, not a directory, not writable or not searchable, or something
    /// at the path that is neither a lock of this class nor Darwin's (a directory).
    public init?(path: String) {
        self.path = path
        do {
            slot = Mutex(try DistributedLock(path: path))
        } catch let error as DistributedLockError where error.code == .notALock && Self.isDirectory(path) {
            slot = Mutex(nil)  // Darwin's lock is there; made later (see the file comment)
        } catch {
            return nil
        }
        super.init()
    }

    /// Whether a directory, the form of a lock that Foundation on Darwin holds, is at `path`.
    private static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    /// The DistributedLock on the path, made now if the path no longer holds a Darwin lock;
    /// `nil` while it does. Stops the process, naming `operation`, when the path became unusable.
    private func distributedLock(for operation: String) -> DistributedLock? {
        slot.withLock { lock in
            if let lock { return lock }
            do {
                lock = try DistributedLock(path: path)
                return lock
            } catch let error as DistributedLockError where error.code == .notALock && Self.isDirectory(path) {
                return nil
            } catch {
                fatalError("*** -[NSDistributedLock \(operation)]: \(error)")
            }
        }
    }

    /// Attempts to take the lock, and returns at once whether it was taken.
    ///
    /// - Returns: `true` when this call took the lock; `false` when anyone holds it, this object
    ///   included, or a process on Darwin holds it (a directory at the path; see the class).
    /// - Note: A file-system error (permissions, space) stops the process, where Foundation
    ///   raises `NSGenericException`.
    open func `try`() -> Bool {
        guard let lock = distributedLock(for: "tryLock") else { return false }
        do {
            return try lock.tryLock()
        } catch let error as DistributedLockError where error.code == .notALock && Self.isDirectory(path) {
            return false  // a process on Darwin took it meanwhile
        } catch {
            fatalError("*** -[NSDistributedLock tryLock]: \(error)")
        }
    }

    /// Releases the lock held by this object.
    ///
    /// Prefer it to ``break()``. When this object does not hold the lock, or held it but it was
    /// broken meanwhile (then another holder's lock, if any, is left in place), or the file
    /// system refuses, the process stops with a message, where Foundation raises
    /// `NSGenericException`.
    open func unlock() {
        guard let lock = slot.withLock({ $0 }) else {
            fatalError("*** -[NSDistributedLock unlock]: the lock at \(path) is not held by this object")
        }
        do {
            try lock.unlock()
        } catch {
            fatalError("*** -[NSDistributedLock unlock]: \(error)")
        }
    }

    /// Removes the lock whoever holds it, a process on Darwin included; does nothing when nobody
    /// holds it.
    ///
    /// For a lock whose holder died. The holder is not told: its ``unlock()`` then stops the
    /// process. When the lock cannot be removed (the file system refuses, or something that is
    /// not a lock is at the path: a directory that is not empty is not Darwin's lock) the
    /// process stops with a message, where Foundation raises `NSGenericException`.
    open func `break`() {
        if Self.isDirectory(path) {
            breakDarwinLock()
            return
        }
        guard let lock = distributedLock(for: "breakLock") else {
            breakDarwinLock()  // a process on Darwin took it since the check above
            return
        }
        do {
            try lock.breakLock()
        } catch let error as DistributedLockError where error.code == .notALock && Self.isDirectory(path) {
            breakDarwinLock()
        } catch {
            fatalError("*** -[NSDistributedLock breakLock]: \(error)")
        }
    }

    /// Removes Darwin's lock, an empty directory at the path, as Darwin's break does.
    private func breakDarwinLock() {
        if rmdir(path) != 0 && errno != ENOENT {
            let reason = String(cString: strerror(errno))
            fatalError("*** -[NSDistributedLock breakLock]: cannot remove the directory at \(path): \(reason)")
        }
    }

    /// When the lock was taken, by any object or process using the same path: the acquisition
    /// time recorded in the lock's file, or for a lock a process on Darwin holds, the
    /// modification time of its directory (what Darwin reports).
    ///
    /// `Date.distantPast` when nobody holds the lock or its record cannot be read (Foundation's
    /// property is a non-optional `Date`; its Objective-C getter returns nil then).
    open var lockDate: Date {
        var status = stat()
        if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR {
            let time = status.st_mtim
            return Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9)
        }
        guard let lock = slot.withLock({ $0 }) ?? (try? DistributedLock(path: path)),
            let info = (try? lock.lockInfo()) ?? nil
        else { return .distantPast }
        let (seconds, attoseconds) = info.acquiredAt.components
        return Date(timeIntervalSince1970: Double(seconds) + Double(attoseconds) * 1e-18)
    }
}
