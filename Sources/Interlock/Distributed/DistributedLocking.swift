// DistributedLocking: what a lock between processes offers, so that code can take either the
// file lock (DistributedLock, here) or the lock on a PostgreSQL server (PostgresLock, in the
// product InterlockPostgres) without knowing which.

/// A mutex between processes, possibly on different hosts: ``DistributedLock`` (a file-system
/// entry) and `PostgresLock` (a PostgreSQL advisory lock, in the product `InterlockPostgres`).
///
/// Every operation may fail with an error that the lock's type documents (a file system or a
/// server said no); none traps. An object holds the lock at most once: ``tryLock()`` on an
/// object that holds it returns `false`.
public protocol DistributedLocking: AnyObject, Sendable {
    /// Takes the lock if nobody holds it, without waiting.
    /// - Returns: `true` when this call took the lock; `false` when anyone holds it, this object
    ///   included.
    func tryLock() throws -> Bool

    /// Takes the lock, waiting until `deadline` at most.
    /// - Parameters:
    ///   - deadline: when to give up.
    ///   - pollInterval: the mean time between attempts, for a lock that polls.
    /// - Returns: `true` when the lock was taken, `false` when the deadline passed first (never
    ///   before it).
    /// - Throws: The conforming type's error when the lock's storage fails (a file system, a
    ///   server).
    func lock(before deadline: ContinuousClock.Instant, pollInterval: Duration) throws -> Bool

    /// Releases the lock held by this object.
    /// - Throws: when this object does not hold the lock, or lost it meanwhile (someone broke
    ///   it, or its session died), or the file system or server refused.
    func unlock() throws
}

extension DistributedLock: DistributedLocking {}
