// Breaking a stale DistributedLock: one whose holder crashed, which NSDistributedLock leaves
// held forever.
//
// RULES: a lock is stale when
//   (a) its record names this host (host name equal) and kill(pid, 0) fails with ESRCH: the
//       holder's process no longer exists; or
//   (b) the caller gave a maximum age and the record's acquisition time is older than that by
//       this host's wall clock.
// WHAT IT CANNOT KNOW
//   - Whether a process on another host is alive: rule (a) never applies to other hosts' locks;
//     only the age rule (b) can break them, and it trusts the clocks of both hosts to agree.
//   - Reused process ids: when the holder died and its pid now belongs to another process,
//     rule (a) sees a live process and does not break. This errs on the safe side (a stale
//     lock is kept, never a live one broken); /proc/<pid>/stat's start time could tell the two
//     apart and is not consulted.
//   - A holder that exited but was not yet reaped by its parent (a zombie) still exists for
//     kill(2): its lock becomes breakable once the parent waits for it.
//   - Hosts that share a host name but not a pid space (containers with the same UTS name on
//     one shared directory) defeat rule (a): give such containers distinct host names.
//   - Rule (b) can break a lock whose holder is alive but slow; that holder's unlock then
//     throws `lockLost`. Choose an age longer than any critical section.
//
// ALGORITHM: several processes usually discover a dead holder at the same moment. If each
// removed "the stale lock" by check-then-remove, one could remove the fresh lock that another
// had just taken after breaking the stale one. So breakers serialize on a guard: a second lock
// at "<path>.ilk-break", taken with the same link(2) recipe. Under the guard a breaker re-reads
// the lock and removes it only if its token is still the stale one it judged (rename, verify the
// token, unlink). Takers never need the guard: the stale entry stays in place until a breaker
// removes it, and while one breaker holds the guard nobody else removes it, so the token check
// under the guard cannot be overtaken by a take - exactly one stale lock is removed, exactly
// once, and a fresh lock is never touched. A breaker that finds the guard held gives up and
// returns false (the other breaker is doing the work), unless the guard itself is stale by rule
// (a) or older than `breakGuardMaximumAge` (a breaker holds it for microseconds); such a guard
// is removed by token, the one place where two breakers can overlap.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DistributedLock {
    /// How old a breakers' guard must be before it is considered abandoned.
    static let breakGuardMaximumAge: Duration = .seconds(10)

    /// The path of the guard that serializes breakers: the lock's path with ".ilk-break" added.
    public var breakGuardPath: String { path + ".ilk-break" }

    /// Breaks the lock only when it is provably stale.
    ///
    /// A lock is stale when its holder is on this host (same host name) and its process no
    /// longer exists, or when `maximumAge` is given and the lock was acquired longer ago than
    /// that. Locks of other hosts are broken only by age. Several processes may call this at
    /// once: exactly one of them breaks a given stale lock, and a lock taken after it is never
    /// broken by the others.
    ///
    /// Typical use by a waiter:
    /// ```swift
    /// while try !lock.tryLock() {
    ///     _ = try lock.breakLockIfStale(olderThan: .seconds(600))
    ///     try await Task.sleep(for: .milliseconds(50))
    /// }
    /// ```
    /// - Parameter maximumAge: break locks older than this, whoever holds them; `nil` breaks
    ///   only locks of dead processes on this host.
    /// - Returns: `true` when this call removed a stale lock; `false` when the lock is free,
    ///   not stale, or another caller is breaking it at this moment.
    /// - Throws: ``DistributedLockError`` when something that is not a lock is at the path or at
    ///   ``breakGuardPath``, or the file system refuses.
    /// - Note: Rule "dead process" cannot see other hosts' processes, errs on the side of keeping
    ///   the lock when a pid was reused, and assumes host names are unique per pid space.
    public func breakLockIfStale(olderThan maximumAge: Duration? = nil) throws -> Bool {
        do {
            guard let (record, _) = try _DLSys.readRecord(path), isStale(record.info, olderThan: maximumAge) else {
                return false
            }
            guard let guardToken = try takeBreakGuard() else { return false }
            defer { _ = try? removeLock(at: breakGuardPath, expecting: .token(guardToken)) }
            // Under the guard: still the lock we judged? (Another breaker may have removed it
            // and someone taken the lock since.)
            guard let (current, _) = try _DLSys.readRecord(path), current.token == record.token else { return false }
            if case .removed = try removeLock(at: path, expecting: .token(record.token)) { return true }
            return false
        } catch let failure as _DistributedLockFailure {
            throw DistributedLockError(failure, path: path, operation: "breakLockIfStale")
        }
    }

    /// Whether a lock with this record is stale by the rules of ``breakLockIfStale(olderThan:)``.
    ///
    /// - Parameters:
    ///   - info: a record, from ``lockInfo()``.
    ///   - maximumAge: the age rule's limit, or `nil` for the dead-process rule only.
    public func isStale(_ info: Info, olderThan maximumAge: Duration? = nil) -> Bool {
        if let maximumAge, _DLSys.wallClockNow() - info.acquiredAt > maximumAge { return true }
        return info.hostName == hostName && !_DLSys.processExists(info.processID)
    }

    /// Takes the breakers' guard. - Returns: our token, or `nil` when another breaker holds it.
    private func takeBreakGuard() throws -> _LockToken? {
        for _ in 0..<2 {
            if let taken = try acquire(breakGuardPath, operation: "breakLockIfStale") {
                if taken.descriptor >= 0 { close(taken.descriptor) }  // the guard is removed by token
                return taken.token
            }
            guard let (holder, _) = try _DLSys.readRecord(breakGuardPath) else { continue }  // just released
            guard isStale(holder.info, olderThan: Self.breakGuardMaximumAge) else { return nil }
            _ = try removeLock(at: breakGuardPath, expecting: .token(holder.token))
        }
        return nil
    }
}
