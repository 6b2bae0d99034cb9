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
// had just taken after breaking the stale one. Two mechanisms prevent it:
//   1. The removal never frees the path on the way (`removeStale`): the breaker swaps a
//      placeholder lock of its own (a valid record: this live process, a fresh token) into the
//      path with one renameat2(RENAME_EXCHANGE), then reads what came out. The stale lock it
//      judged: removed, and the placeholder released as any holder releases its lock. Anything
//      else (a later holder's lock): swapped back with a second exchange, exactly where it was.
//      At every instant the path holds a lock, so no taker can get in between, and nothing but
//      the judged lock is ever removed, however long the breaker stalled between judging and
//      acting (SIGSTOP, a paused VM, an NFS hang). Interleavings: (i) the stale lock is still
//      there: exchange, verify, remove, release; takers meanwhile see our placeholder held;
//      (ii) another breaker removed it and a holder H took the lock while we stalled: we swap
//      H's record out and back; a taker in between sees our placeholder held; H itself is only
//      affected if it unlocks inside those microseconds (its unlock finds our placeholder,
//      touches nothing and throws `lockLost`; its record, swapped back, then stays until H's
//      process is gone and rule (a) breaks it); (iii) nothing is there: ENOENT, nothing done.
//   2. Breakers serialize on a guard, a second lock at "<path>.ilk-break" taken with the same
//      link(2) recipe, so that one breaker works and the others return false at once; under
//      it a breaker re-reads the lock and acts only if its token is still the stale one. A
//      guard counts as abandoned when its breaker's process is gone (rule (a)), and, where the
//      exchange works, also when older than `breakGuardMaximumAge`: there two overlapping
//      breakers cost nothing but work, by 1.
// Where RENAME_EXCHANGE is not supported (NFS, FUSE without rename flags, kernels before 3.15)
// the removal falls back to rename-aside, verify, link back - which frees the path for a
// moment if the entry was not the judged one - and the guard is then never aged out, so that
// breakers cannot overlap: the price is that a guard left by a breaker that died on another
// host blocks breaking until someone removes "<path>.ilk-break" by hand. A breaker that dies
// between the exchange and its cleanup leaves its placeholder (breakable by rule (a)) and the
// stale record under a private ".swap" name.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DistributedLock {
    /// How old a breakers' guard must be before it is considered abandoned (tests shorten it).
    @_spi(Testing) public nonisolated(unsafe) static var breakGuardMaximumAge: Duration = .seconds(10)

    /// The points of `breakLockIfStale` at which a test may stall a breaker.
    @_spi(Testing) public enum BreakerStep: Sendable {
        /// Holding the guard, the stale lock judged and re-read: about to remove it.
        case judged
        /// The entry that was at the path has been moved aside (to be verified).
        case movedAside
    }

    /// Called at each ``BreakerStep`` of a breaker (tests stop the process there to play a
    /// breaker stalled by SIGSTOP, a paused VM or an NFS hang). `nil` in production.
    @_spi(Testing) public nonisolated(unsafe) static var breakerTestHook: (@Sendable (BreakerStep) -> Void)?

    /// Maps the errno of acquisition's link(2) (0 for success) before the lock looks at it:
    /// tests play file systems that report failures their own way (sshfs reports EEXIST as
    /// EPERM). `nil` in production.
    @_spi(Testing) public nonisolated(unsafe) static var linkTestHook: (@Sendable (Int32) -> Int32)?

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
            Self.breakerTestHook?(.judged)
            if case .removed = try removeStale(at: path, token: record.token) { return true }
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
    /// - Returns: Whether ``breakLockIfStale(olderThan:)`` would break a lock with this record.
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
            // Abandoned: its breaker's process is gone, or (only where removals cannot displace
            // a later holder's lock, see the file comment) it is older than the guard's age.
            let maximumAge: Duration? = try exchangeWorks() ? Self.breakGuardMaximumAge : nil
            guard isStale(holder.info, olderThan: maximumAge) else { return nil }
            _ = try removeLock(at: breakGuardPath, expecting: .token(holder.token))
        }
        return nil
    }

    /// Removes the lock with `token` at `entry` without the path ever being free meanwhile:
    /// a placeholder lock of this process is swapped in with one RENAME_EXCHANGE, what came out
    /// is verified, and then either removed (the stale lock) and the placeholder released, or
    /// swapped back (anything else: a later holder's lock stays exactly where it was). Where
    /// the exchange is not supported (NFS, old kernels) it falls back to `removeLock`'s rename.
    func removeStale(at entry: String, token: _LockToken) throws(_DistributedLockFailure) -> Removal {
        let placeholder = _LockToken.random()
        let record = _LockRecord(
            info: Info(acquiredAt: _DLSys.wallClockNow(), processID: getpid(), hostName: hostName), token: placeholder)
        let aside = privateName(placeholder.hex, "swap")
        _ = try _DLSys.createExclusive(aside, record.encoded, sync: durable)
        let swapped = _DLSys.exchangeEntries(aside, entry)
        if swapped != 0 {
            _DLSys.unlinkEntry(aside)
            if swapped == ENOENT { return .absent }  // removed by someone else already
            if _DLSys.exchangeUnsupported(swapped) {
                exchangeSupport.store(2, ordering: .relaxed)  // relaxed: a hint, see exchangeWorks
                return try removeLock(at: entry, expecting: .token(token), breaking: true)
            }
            throw _DLSys.fail("renameat2(\"\(aside)\", \"\(entry)\", RENAME_EXCHANGE)", entry, swapped)
        }
        Self.breakerTestHook?(.movedAside)
        // `entry` holds our placeholder (a live lock of this process); `aside` what was there.
        let found: _LockRecord?
        do {
            found = try _DLSys.readRecord(aside)?.0
        } catch {
            // Not a lock (swapped in since we looked): swap it back, never remove it.
            let restored = _DLSys.exchangeEntries(aside, entry) == 0
            if restored { _DLSys.unlinkEntry(aside) }  // our placeholder came back out
            switch error {
            case .notALock(_, let why):
                throw .notALock(
                    subject: entry,
                    why: why + (restored ? "" : "; it was moved to \"\(aside)\" and could not be put back"))
            case .system:
                throw error
            }
        }
        if found?.token == token {
            _DLSys.unlinkEntry(aside)
            // Our placeholder is a lock of a live process: released as any holder releases.
            _ = try removeLock(at: entry, expecting: .token(placeholder))
            return .removed
        }
        // A later holder's lock: swap it back, then take our placeholder away.
        if _DLSys.exchangeEntries(aside, entry) == 0 {
            if (try? _DLSys.readRecord(aside))??.0.token == placeholder { _DLSys.unlinkEntry(aside) }
            return .mismatch(restored: true)
        }
        // Our placeholder was removed from the path meanwhile (breakLock): put the lock back
        // without replacing anything that appeared since.
        let restored = _DLSys.linkEntry(aside, entry) == 0
        if restored { _DLSys.unlinkEntry(aside) }
        return .mismatch(restored: restored)
    }

    /// Whether this lock's directory supports RENAME_EXCHANGE (probed once, on two private
    /// files of ours, the first time a guard looks abandoned).
    func exchangeWorks() throws(_DistributedLockFailure) -> Bool {
        // Relaxed: a cached answer that any thread may compute again.
        switch exchangeSupport.load(ordering: .relaxed) {
        case 1: return true
        case 2: return false
        default: break
        }
        let probe = _LockToken.random().hex
        let first = privateName(probe, "probe1"), second = privateName(probe, "probe2")
        _ = try _DLSys.createExclusive(first, [], sync: false)
        defer { _DLSys.unlinkEntry(first) }
        _ = try _DLSys.createExclusive(second, [], sync: false)
        defer { _DLSys.unlinkEntry(second) }
        let works = _DLSys.exchangeEntries(first, second) == 0
        exchangeSupport.store(works ? 1 : 2, ordering: .relaxed)
        return works
    }
}
