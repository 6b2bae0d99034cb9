// DistributedLockError: every failure of a DistributedLock, as a value naming the lock's path,
// the operation, what went wrong and, when the operating system said no, its reason (strerror
// text and errno). DistributedLock never traps.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error thrown by ``DistributedLock``.
///
/// Its ``description`` reads, for example:
/// `DistributedLock.tryLock at "/srv/jobs/nightly.lock": link("/srv/jobs/.ilk-…tmp", "/srv/jobs/nightly.lock") failed: Permission denied (errno 13)`.
public struct DistributedLockError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public enum Code: Sendable, Equatable {
        /// The path is empty, ends in `/`, or names `.` or `..`.
        case invalidPath
        /// The path or one of its components is too long (`ENAMETOOLONG`).
        case nameTooLong
        /// The directory that would hold the lock does not exist.
        case parentMissing
        /// Something on the way to the lock is not a directory (`ENOTDIR`).
        case parentNotDirectory
        /// The operating system refused access (`EACCES`, `EPERM`, `EROFS`).
        case permissionDenied
        /// Something exists at the path (or appeared at it) that is not an Interlock lock: a
        /// directory, a symbolic link, a foreign file. It is never removed or followed.
        case notALock
        /// `unlock` was called on an object that does not hold the lock.
        case notHeld
        /// `unlock` found that the lock this object held was broken (and maybe taken by
        /// someone else, whose lock was left in place).
        case lockLost
        /// Any other failure of a system call; see ``osErrorNumber``.
        case systemError
    }

    /// What kind of failure this is.
    public let code: Code
    /// The lock's path, as given to ``DistributedLock/init(path:)``.
    public let path: String
    /// The operation that failed: `init`, `tryLock`, `lock(before:)`, `unlock`, `breakLock`,
    /// `breakLockIfStale`, `lockInfo`.
    public let operation: String
    /// What went wrong, in words (it names the file involved when that is not ``path``).
    public let message: String
    /// The operating system's error number, when a system call failed.
    public let osErrorNumber: Int32?
    /// The operating system's text for ``osErrorNumber`` (strerror), when a system call failed.
    public let osReason: String?

    /// Creates an error; `osErrorNumber` fills in ``osReason``.
    public init(code: Code, path: String, operation: String, message: String, osErrorNumber: Int32? = nil) {
        self.code = code
        self.path = path
        self.operation = operation
        self.message = message
        self.osErrorNumber = osErrorNumber
        self.osReason = osErrorNumber.map(_DLSys.reason)
    }

    /// `DistributedLock.<operation> at "<path>": <message>[: <OS reason> (errno N)]`.
    public var description: String {
        var text = "DistributedLock.\(operation) at \"\(path)\": \(message)"
        if let osErrorNumber, let osReason { text += ": \(osReason) (errno \(osErrorNumber))" }
        return text
    }

    /// The code for a failed system call's errno.
    static func code(for errorNumber: Int32) -> Code {
        switch errorNumber {
        case ENAMETOOLONG: return .nameTooLong
        case ENOTDIR: return .parentNotDirectory
        case EACCES, EPERM, EROFS: return .permissionDenied
        case ENOENT: return .parentMissing
        case ELOOP: return .notALock
        default: return .systemError
        }
    }

    /// Converts an internal failure seen by `operation` on the lock at `path`.
    init(_ failure: _DistributedLockFailure, path: String, operation: String) {
        switch failure {
        case .system(let call, let subject, let errorNumber):
            let on = subject == path ? "" : "(\"\(subject)\") "
            self.init(
                code: Self.code(for: errorNumber), path: path, operation: operation,
                message: "\(call) \(on)failed", osErrorNumber: errorNumber)
        case .notALock(let subject, let why):
            let what = subject == path ? "the path" : "\"\(subject)\""
            self.init(
                code: .notALock, path: path, operation: operation,
                message: "\(what) exists but is not a lock: \(why); it was left untouched")
        }
    }
}
