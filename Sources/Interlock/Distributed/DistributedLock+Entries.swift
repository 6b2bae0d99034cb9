// DistributedLock's entry operations, shared by acquisition, release and the breakers: taking an
// entry (acquire), removing one only if it is the expected one (removeLock, putBack), and the
// private names they use. The algorithms and their guarantees are described at the top of
// DistributedLock.swift.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DistributedLock {
    /// A unique name in the lock's directory: ".ilk-<host>-<pid>-<hex>.<suffix>".
    func privateName(_ hex: String, _ suffix: String) -> String {
        "\(privateNamePrefix)\(getpid())-\(hex).\(suffix)"
    }

    /// Steps 1-3 of acquisition for the entry `entry`.
    /// - Returns: our token and the entry's identity when we took it; `nil` when it is held.
    func acquire(_ entry: String, operation: String)
        throws -> (token: _LockToken, identity: _FileIdentity, descriptor: Int32)?
    {
        let token = _LockToken.random()
        let record = _LockRecord(
            info: Info(acquiredAt: _DLSys.wallClockNow(), processID: getpid(), hostName: hostName), token: token)
        let bytes = record.encoded
        let temporary = privateName(token.hex, "tmp")
        do {
            // Relaxed: a hint that only selects between two correct recipes.
            if !unnamedUnsupported.load(ordering: .relaxed) {
                switch try _DLSys.linkUnnamed(directory: directory, entry: entry, bytes, sync: durable) {
                case .linked(let identity, let descriptor):
                    _inject(.distributedLockLinked)
                    return (token, identity, descriptor)
                case .held:
                    _ = try _DLSys.readRecord(entry)  // a foreign entry is reported, see below
                    return nil
                case .unsupported:
                    unnamedUnsupported.store(true, ordering: .relaxed)  // relaxed: see the load
                }
            }
            let identity = try _DLSys.createExclusive(temporary, bytes, sync: durable)
            defer { _DLSys.unlinkEntry(temporary) }
            for attempt in 1...3 {
                var linkError = _DLSys.linkEntry(temporary, entry)
                if let hook = Self.linkTestHook { linkError = hook(linkError) }
                if linkError == 0 {
                    _inject(.distributedLockLinked)
                    return (token, identity, -1)
                }
                // A lost NFS reply: the link happened if the temporary file now has two names.
                if let temp = try? _DLSys.lstatEntry(temporary), temp.st_nlink == 2 { return (token, identity, -1) }
                // Whatever the error, what is at the path now decides: not every file system
                // says EEXIST (sshfs says EPERM: its SFTP server answers a generic failure).
                // A lock is checked to be one, so that a foreign file at the path is reported
                // instead of looking held forever.
                if let (record, _) = try _DLSys.readRecord(entry) {
                    // Our token: the link happened though it reported a failure (a lost reply
                    // where link counts say nothing: sshfs reports 1). Another: held.
                    return record.token == token ? (token, identity, -1) : nil
                }
                // Nothing there now. EEXIST: it was held at the link and released since.
                if linkError == EEXIST { return nil }
                // Another error: the link's own failure - or one that meant "exists" and the
                // holder released the lock since; tried three times before it is reported.
                if attempt == 3 { throw _DLSys.fail("link(\"\(temporary)\", \"\(entry)\")", entry, linkError) }
            }
            return nil  // not reached: the third attempt returns or throws
        } catch let failure as _DistributedLockFailure {
            throw DistributedLockError(failure, path: path, operation: operation)
        }
    }

    /// Which entry `removeLock` may remove.
    enum Expectation {
        /// Any valid lock record.
        case anyLock
        /// The lock with this token.
        case token(_LockToken)
        /// The file with this identity, whose inode the caller keeps open (so that the number
        /// cannot belong to another file meanwhile) and which holds this token.
        case identity(_FileIdentity, _LockToken)
    }

    /// What `removeLock` found.
    enum Removal {
        /// The lock was removed.
        case removed
        /// Nothing was at the path.
        case absent
        /// Another lock was there; it was put back (or could not be, because the path was
        /// taken meanwhile).
        case mismatch(restored: Bool)
    }

    /// Removes the lock at `entry` if it is the one `expected` describes: rename it to a
    /// tombstone, check the tombstone, unlink it or put it back.
    func removeLock(
        at entry: String, expecting expected: Expectation, tombstone: String? = nil, breaking: Bool = false
    ) throws(_DistributedLockFailure) -> Removal {
        let tombstone = tombstone ?? privateName(_LockToken.random().hex, "dead")
        let renameError = _DLSys.renameEntry(entry, tombstone)
        if renameError == ENOENT {
            // On NFS a retransmitted rename that had succeeded reports ENOENT.
            if (try? _DLSys.lstatEntry(tombstone)) == nil { return .absent }
        } else if renameError != 0 {
            throw _DLSys.fail("rename(\"\(entry)\", \"\(tombstone)\")", entry, renameError)
        }
        if breaking { Self.breakerTestHook?(.movedAside) }
        var expected = expected
        if case .identity(let identity, let token) = expected {
            // No read needed: the pinned identity proves ownership.
            if let moved = try? _DLSys.lstatEntry(tombstone), _DLSys.identity(moved) == identity {
                _DLSys.unlinkEntry(tombstone)
                return .removed
            }
            expected = .token(token)  // not ours: find out what it is, and put it back
        }
        let found: _LockRecord
        do {
            guard let (record, _) = try _DLSys.readRecord(tombstone) else { return .absent }
            found = record
        } catch {
            // Not a lock (swapped in since we looked): put it back, never remove it.
            let restored = putBack(tombstone, entry, removeIfStuck: false)
            switch error {
            case .notALock(_, let why):
                throw .notALock(
                    subject: entry,
                    why: why + (restored ? "" : "; it was moved to \"\(tombstone)\" and could not be put back"))
            case .system:
                throw error
            }
        }
        if case .token(let token) = expected, found.token != token {
            return .mismatch(restored: putBack(tombstone, entry, removeIfStuck: true))
        }
        _DLSys.unlinkEntry(tombstone)
        return .removed
    }

    /// Moves `tombstone` back to `entry` without replacing anything there (link, then unlink
    /// the tombstone name). When that fails, removes the tombstone if `removeIfStuck` (a lock
    /// record whose holder lost it anyway) or leaves it for a human.
    private func putBack(_ tombstone: String, _ entry: String, removeIfStuck: Bool) -> Bool {
        if _DLSys.linkEntry(tombstone, entry) == 0 {
            _DLSys.unlinkEntry(tombstone)
            return true
        }
        if removeIfStuck { _DLSys.unlinkEntry(tombstone) }
        return false
    }
}
