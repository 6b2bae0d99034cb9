// NSDistributedLock: Foundation's lock between processes and hosts, over Interlock's
// DistributedLock (Sources/Interlock/Distributed/). swift-corelibs-foundation, the Foundation
// of Linux, has no NSDistributedLock (checked with the 6.3 toolchain: `import Foundation`
// alone does not find the name), so this class does not clash with it.

import Foundation
import Interlock

/// Foundation's `NSDistributedLock` on Linux: a lock that several processes, on one host or on
/// several hosts sharing a file system (NFS included), use to restrict access to a resource.
///
/// The lock is the file at the path given to ``init(path:)``, held by Interlock's
/// `DistributedLock` (which records the holder's process, host and acquisition time, and
/// proves ownership with a token). As in Foundation it never waits: ``try()`` answers at once;
/// release it with ``unlock()``, and remove a lock whose holder died with ``break()``.
/// It does not conform to `NSLocking` and has no `lock()`, as in Foundation.
///
/// Exceptions. Where Foundation on Darwin raises `NSGenericException` (``try()`` on a
/// file-system error, ``unlock()`` of a lock this object does not hold or that was broken
/// meanwhile, ``break()`` that cannot remove the lock), this class stops the process with
/// `fatalError` and a message in Foundation's style naming the path and the reason. Swift code
/// cannot catch an Objective-C exception, so a Swift caller on Darwin dies there as well;
/// Linux has no Objective-C exceptions to raise.
open class NSDistributedLock: NSObject {
    private let distributedLock: DistributedLock

    /// Creates an object for the lock at `path`; creates nothing in the file system.
    ///
    /// Returns `nil`, as Foundation does, when the path is unusable: empty or too long, its
    /// parent directory missing, not a directory, not writable or not searchable, or something
    /// that is not a lock at the path.
    public init?(path: String) {
        guard let lock = try? DistributedLock(path: path) else { return nil }
        distributedLock = lock
        super.init()
    }

    /// Attempts to take the lock, and returns at once whether it was taken.
    ///
    /// - Returns: `true` when this call took the lock; `false` when anyone holds it, this object
    ///   included.
    /// - Note: A file-system error (permissions, space) stops the process, where Foundation
    ///   raises `NSGenericException`.
    open func `try`() -> Bool {
        do {
            return try distributedLock.tryLock()
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
        do {
            try distributedLock.unlock()
        } catch {
            fatalError("*** -[NSDistributedLock unlock]: \(error)")
        }
    }

    /// Removes the lock whoever holds it; does nothing when nobody holds it.
    ///
    /// For a lock whose holder died. The holder is not told: its ``unlock()`` then stops the
    /// process. When the lock cannot be removed (the file system refuses, or something that is
    /// not a lock is at the path) the process stops with a message, where Foundation raises
    /// `NSGenericException`.
    open func `break`() {
        do {
            try distributedLock.breakLock()
        } catch {
            fatalError("*** -[NSDistributedLock breakLock]: \(error)")
        }
    }

    /// When the lock was taken, by any object or process using the same path: the acquisition
    /// time recorded in the lock's file.
    ///
    /// `Date.distantPast` when nobody holds the lock or its record cannot be read (Foundation's
    /// property is a non-optional `Date`; its Objective-C getter returns nil then).
    open var lockDate: Date {
        guard let info = (try? distributedLock.lockInfo()) ?? nil else { return .distantPast }
        let (seconds, attoseconds) = info.acquiredAt.components
        return Date(timeIntervalSince1970: Double(seconds) + Double(attoseconds) * 1e-18)
    }
}
