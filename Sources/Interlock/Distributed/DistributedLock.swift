// DistributedLock: a mutex between processes, and between hosts sharing a file system (NFS
// included), held by one entry in the file system, as Apple's NSDistributedLock.
//
// ALGORITHM — acquisition publishes a complete record at `path` with one link, never creating
// `path` empty and then writing it. Two recipes, same guarantees:
//   FAST (Linux, on file systems known to be local: statfs(2) says ext2/3/4, xfs, btrfs or
//     tmpfs; O_TMPFILE working proves nothing, FUSE and overlay support it and may front a
//     shared or remote store): open(directory, O_TMPFILE) makes an unnamed file (mode
//     0666 less the umask), the record is written to it (fsync'ed if `durable`), and
//     linkat("/proc/self/fd/N", path, AT_SYMLINK_FOLLOW) names it: EEXIST means held. If the
//     link fails the unnamed file disappears on close. One directory change instead of three.
//   NFS-SAFE (every other file system, NFS and FUSE included, and wherever O_TMPFILE fails;
//     chosen at init from statfs, or on the first EOPNOTSUPP, and remembered per object;
//     forced by INTERLOCK_DLOCK_NAMED_TEMPORARY=1) - link(2) of a
//     private file, the recipe of open(2)'s manual, section O_EXCL, used by liblockfile and Exim:
//   1. Write the record (pid, host, wall-clock time, a fresh 128-bit random token; format in
//      DistributedLockRecord.swift) into a temporary file of our own in the lock's directory,
//      named ".ilk-<host>-<pid>-<token>.tmp" and created O_CREAT|O_EXCL|O_NOFOLLOW with mode
//      0666 (the kernel applies the umask). Then close it: NFS writes dirty data back on close,
//      so any client that opens the lock after step 2 sees the whole record (close-to-open
//      consistency). With `durable: true` the file is also fsync'ed first.
//   2. link(temp, path). Success: we hold the lock. Any failure: a link count of 2 on the temp
//      file, or our token in the record now at path, means the link did happen (an NFS reply
//      was lost and the retransmitted request failed; the token also where link counts say
//      nothing, sshfs) - we hold the lock. Another lock record at path: someone holds it,
//      whatever the errno (sshfs reports EEXIST as EPERM: its SFTP server answers a generic
//      failure). Nothing at path: EEXIST means it was held and released since; another errno
//      is the link's own failure, thrown after three attempts (or a holder left meanwhile).
//      link(2) is atomic on local file systems, on NFS and through SFTP's hard link extension,
//      where O_CREAT|O_EXCL was not before NFSv3 and mkdir cannot carry the record atomically.
//   3. unlink(temp), on every path, success or failure: nothing is left behind.
//   The lock entry therefore appears complete or not at all; a reader never sees a partial record.
//
// RELEASE — proven by the token, or by the inode we keep open, without removing someone
// else's lock:
//   1. lstat(path): its (device, inode) must be those of the file we linked - or, NFS-SAFE
//      recipe, the record there must hold our token (file systems that number inodes per name,
//      not per file, give the lock's name another number than the temporary file it was linked
//      from: sshfs, whose SFTP has no inode numbers); if not, or if nothing is there, the lock
//      was broken: throw `lockLost`, touch nothing.
//   2. rename(path, tombstone) with a unique tombstone name in the same directory: atomically
//      takes whatever is at path away from the name (rename ENOENT after a lost NFS reply is
//      resolved by looking for the tombstone).
//   3. Prove the tombstone is ours. FAST recipe: we kept the O_TMPFILE descriptor open while
//      holding, which pins the inode, so no other file can have its (device, inode) on this
//      host; lstat(tombstone) with our identity is proof, no read needed. NFS-SAFE recipe
//      (another client may break our lock and the server reuse the file id): read the
//      tombstone's token. Ours: unlink it, done. Not ours (our lock was broken and another
//      taken between 1 and 2): put it back with link(tombstone, path), which fails rather than
//      replace anything that appeared meanwhile, unlink the tombstone name, throw `lockLost`.
//   breakLock is the same with "any valid lock record" for "our token"; a tombstone that is not
//   a lock record (something was swapped in) is put back, and the error names it.
//
// STATE OF THIS OBJECT (`state`, an AtomicInt; `heldToken`/`heldIdentity` are plain fields
// owned by whichever thread moved `state` out of 0 or 2):
//   0 idle      this object does not hold the lock          tryLock: 0 -> 1
//   1 acquiring a thread is in tryLock                      -> 2 on success, -> 0 otherwise
//   2 held      heldToken/heldIdentity describe our entry    unlock: 2 -> 3
//   3 releasing a thread is in unlock                       -> 0, or -> 2 when unlock failed
//                                                             without touching the lock
//   tryLock in 1, 2 or 3 returns false at once ("false when this object holds it"); unlock in
//   0 or 1 throws `notHeld`. No thread ever waits for another, so no lock is needed.
// ORDERINGS: the 0->1 and 2->3 compare-exchanges are `.acquire` and every store that ends a
//   transition is `.release`, so the thread that takes a state sees the heldToken/heldIdentity/
//   heldDescriptor written by the thread that left it (2 is stored with release after they are written;
//   unlock's acquire CAS reads 2). Nothing else is shared between threads.
//
// WHAT IS AND IS NOT GUARANTEED
//   - At most one holder, as long as locks are removed only by their holders (unlock) and by
//     breakLockIfStale's "holder's process is dead" rule: those removals are exact (a breaker
//     swaps a placeholder in with RENAME_EXCHANGE, so the path is never free while it checks,
//     and removes only the lock it judged, however long it stalled; see
//     DistributedLock+Stale.swift, also for the fallback on NFS).
//   - breakLock() and the age rule of breakLockIfStale remove a lock whose holder may be
//     alive: that holder still believes it holds the lock until its unlock throws `lockLost`.
//     This is the documented meaning of breaking a lock, as in NSDistributedLock.
//   - Removal is check-then-rename: if, in the microseconds between unlock's lstat and its
//     rename, someone breaks our lock AND someone else takes it, our rename moves the new lock
//     away until link(2) puts it back; a third process could take the lock in that window
//     (two holders) - then link fails and the displaced lock's holder gets `lockLost` at its
//     unlock. This needs a break of a live holder first; POSIX has no "unlink if this inode"
//     to close it. (An earlier break is always seen by the lstat: with the FAST recipe our
//     open descriptor keeps our inode number from being reused.)
//   - A crashed holder leaves the lock held (as NSDistributedLock). Use breakLockIfStale.
//   - Hostile paths: the last component is never followed (lstat, O_NOFOLLOW, link/rename
//     act on names); only regular files holding a valid record are ever removed; our own
//     temporary and tombstone names, unique per call, are the only other entries we create.
//
// COST: FAST recipe, a tryLock+unlock cycle is open(O_TMPFILE)+write+fstat+linkat, then
// lstat+rename+lstat+unlink+close: three directory changes (link, rename, unlink) against two for
// a bare O_CREAT|O_EXCL lock file, which proves nothing at release. No fsync unless `durable`.
// A held lock keeps one descriptor open (O_CLOEXEC). The methods are not @inlinable:
// system calls dominate and the state machine is two atomics.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutual-exclusion lock between processes, on one host or on several hosts sharing a file
/// system (NFS included), held by one entry in the file system — Apple's `NSDistributedLock`.
///
/// The lock is the file at ``path``: it exists while someone holds the lock and not otherwise.
/// It records the holder's process id, host name, acquisition time (see ``lockInfo()``) and a
/// random token that proves ownership to ``unlock()``. Creating the object creates nothing.
///
/// The lock never blocks by itself: ``tryLock()`` answers at once,
/// ``lock(before:pollInterval:)-2azyp`` polls until a deadline, and its async form
/// ``lock(before:pollInterval:)-5qx52`` polls suspending the task instead of blocking its thread.
/// A holder that crashes leaves the lock held; ``breakLockIfStale(olderThan:)`` removes it only
/// when it is provably stale, ``breakLock()`` unconditionally.
///
/// One object may be used from several threads; it holds the lock at most once (a second
/// `tryLock` while it holds the lock returns `false`).
///
/// - Note: A symbolic link at ``path`` is never followed, and nothing but regular files holding
///   a lock record is ever removed. Every failure is a thrown ``DistributedLockError`` naming the
///   path and the operating system's reason; nothing traps.
public final class DistributedLock: @unchecked Sendable {
    /// Who holds a lock, as recorded in its file.
    public struct Info: Sendable, Equatable {
        /// Wall-clock time (CLOCK_REALTIME) of the acquisition, since the Unix epoch.
        public var acquiredAt: Duration
        /// The holder's process id, on ``hostName``.
        public var processID: Int32
        /// The holder's host name (gethostname), non-printable characters replaced by `?`.
        public var hostName: String

        /// Creates a description of a holder.
        public init(acquiredAt: Duration, processID: Int32, hostName: String) {
            self.acquiredAt = acquiredAt
            self.processID = processID
            self.hostName = hostName
        }
    }

    /// The path of the lock's file system entry.
    public let path: String
    /// Whether records are fsync'ed before they are linked into place.
    public let durable: Bool
    /// The lock's directory.
    let directory: String
    /// The lock's directory followed by "/", for our temporary and tombstone names.
    let directoryPrefix: String
    /// Set when the named temporary file recipe must be used: the directory is not on a file
    /// system known to be local (statfs, at init), or turned out not to support unnamed files
    /// (O_TMPFILE).
    /// Starts set when the environment variable `INTERLOCK_DLOCK_NAMED_TEMPORARY` is `1`, which
    /// forces the NFS recipe on any file system (tests use it to cover that recipe locally).
    let unnamedUnsupported = AtomicBool(false)
    /// Whether the directory supports RENAME_EXCHANGE: 0 not known yet, 1 yes, 2 no (a hint
    /// cached by `exchangeWorks`, DistributedLock+Stale.swift).
    let exchangeSupport = AtomicInt(0)
    /// This host's name, as recorded in our locks and compared by the stale-lock rules.
    let hostName: String
    /// "<directory>/.ilk-<host>-": the start of our temporary and tombstone names.
    let privateNamePrefix: String

    // 0 idle, 1 acquiring, 2 held, 3 releasing: see the file header.
    private let state = AtomicInt(0)
    // Written only in state 1, read only in state 3 (and while moving 1 -> 2).
    private var heldToken = _LockToken(high: 0, low: 0)
    private var heldIdentity = _FileIdentity(device: 0, inode: 0)
    // A descriptor open on our lock file while we hold it (O_TMPFILE recipe), else -1.
    private var heldDescriptor: Int32 = -1

    private static let idle = 0, acquiring = 1, held = 2, releasing = 3

    /// Creates an object for the lock at `path`; creates nothing in the file system.
    ///
    /// - Parameter path: the lock's entry. Its directory must exist and be writable and
    ///   searchable; the entry itself must be absent or a lock. The last component is never
    ///   followed if it is a symbolic link.
    /// - Throws: ``DistributedLockError`` when the path is empty or malformed, too long, its
    ///   parent is missing, not a directory or not writable, or something that is not a lock is
    ///   at the path.
    public convenience init(path: String) throws {
        try self.init(path: path, durable: false)
    }

    /// Creates an object for the lock at `path`, choosing whether lock records are fsync'ed.
    ///
    /// - Parameters:
    ///   - path: the lock's entry, as for ``init(path:)``.
    ///   - durable: `true` fsyncs each record before linking it into place, so that a
    ///     lock file found after a power failure of the writing host is complete. Other processes
    ///     and NFS clients see complete records either way; `false` is several times faster.
    /// - Throws: ``DistributedLockError``, as ``init(path:)`` does.
    public init(path: String, durable: Bool) throws {
        self.path = path
        self.durable = durable
        self.hostName = _DLSys.hostName()
        func failure(_ code: DistributedLockError.Code, _ message: String, _ errorNumber: Int32? = nil)
            -> DistributedLockError
        {
            DistributedLockError(
                code: code, path: path, operation: "init", message: message, osErrorNumber: errorNumber)
        }
        guard !path.isEmpty else { throw failure(.invalidPath, "the path is empty") }
        let directory: String, name: Substring
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
            name = path[path.index(after: slash)...]
        } else {
            directory = "."
            name = Substring(path)
        }
        guard !name.isEmpty, name != ".", name != ".." else {
            throw failure(.invalidPath, "the path must end in a file name, not \"/\", \".\" or \"..\"")
        }
        self.directory = directory
        if let value = getenv("INTERLOCK_DLOCK_NAMED_TEMPORARY"), String(cString: value) == "1" {
            unnamedUnsupported.store(true, ordering: .relaxed)  // before the object is shared
        }
        directoryPrefix = directory.hasSuffix("/") ? directory : directory + "/"
        let host = String(hostName.prefix(64).map { $0 == "/" ? "_" : $0 })
        privateNamePrefix = "\(directoryPrefix).ilk-\(host)-"

        // The parent may be reached through symbolic links (stat follows them); only the
        // lock's own entry is protected from being followed.
        var info = stat()
        if directory.withCString({ stat($0, &info) }) != 0 {
            let code = errno
            switch code {
            case ENOENT: throw failure(.parentMissing, "the parent directory \"\(directory)\" does not exist", code)
            case ENOTDIR: throw failure(.parentNotDirectory, "a component of \"\(directory)\" is not a directory", code)
            default: throw failure(DistributedLockError.code(for: code), "stat(\"\(directory)\") failed", code)
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw failure(.parentNotDirectory, "the parent \"\(directory)\" is not a directory", ENOTDIR)
        }
        if directory.withCString({ faccessat(AT_FDCWD, $0, W_OK | X_OK, AT_EACCESS) }) != 0 {
            let code = errno
            throw failure(
                DistributedLockError.code(for: code),
                "the parent directory \"\(directory)\" is not writable and searchable", code)
        }
        // The FAST recipe only where the file system is known to be local (file header).
        if !(_DLSys.fileSystemType(directory).map(_DLSys.localFileSystemTypes.contains) ?? false) {
            unnamedUnsupported.store(true, ordering: .relaxed)  // before the object is shared
        }
        do {
            if let entry = try _DLSys.lstatEntry(path), !_DLSys.isRegular(entry) {
                throw _DistributedLockFailure.notALock(subject: path, why: "it is \(_DLSys.kindName(entry))")
            }
        } catch let failure as _DistributedLockFailure {
            throw DistributedLockError(failure, path: path, operation: "init")
        }
    }

    /// Whether this lock uses the fast recipe (an unnamed O_TMPFILE file linked into place,
    /// ownership proved by device and inode), which it does only on a file system known to be
    /// local to this host (ext2/3/4, xfs, btrfs, tmpfs); elsewhere (NFS, FUSE, overlay, ...) it
    /// uses the portable recipe (a named private file, link(2), ownership proved by the token).
    public var usesLocalFileSystemRecipe: Bool {
        // Relaxed: a snapshot of a hint that only ever goes from false to true.
        !unnamedUnsupported.load(ordering: .relaxed)
    }

    deinit {
        // A lock still held stays held (as NSDistributedLock's); only our descriptor goes.
        if heldDescriptor >= 0 { close(heldDescriptor) }
    }

    // MARK: - Acquiring

    /// Takes the lock if nobody holds it; never waits.
    ///
    /// - Returns: `true` when this call took the lock; `false` when anyone holds it, this
    ///   object included.
    /// - Throws: ``DistributedLockError`` when the file system refuses (permissions, space,
    ///   a path that is not a lock).
    public func tryLock() throws -> Bool {
        // acquire: pairs with the release store that returned the object to idle, so the
        // previous holder's use of heldToken happens before ours.
        guard state.compareExchange(expected: Self.idle, desired: Self.acquiring, ordering: .acquire).exchanged else {
            return false
        }
        do {
            guard let taken = try acquire(path, operation: "tryLock") else {
                state.store(Self.idle, ordering: .release)  // pairs with the next acquire CAS
                return false
            }
            heldToken = taken.token
            heldIdentity = taken.identity
            heldDescriptor = taken.descriptor
            state.store(Self.held, ordering: .release)  // publishes heldToken to unlock's CAS
            return true
        } catch {
            state.store(Self.idle, ordering: .release)  // pairs with the next acquire CAS
            throw error
        }
    }

    /// Takes the lock, polling until `deadline`.
    ///
    /// Tries at once, then every `pollInterval` with a random jitter of ±25% (so that many
    /// waiters do not retry in step), and once more at the deadline. A deadline in the past
    /// makes it a ``tryLock()``. It blocks the calling thread between attempts; in a task, call
    /// it with `await`, which selects the overload that suspends the task instead.
    /// - Parameters:
    ///   - deadline: when to give up.
    ///   - pollInterval: the mean time between attempts; non-positive values mean 1 ms.
    /// - Returns: `true` when the lock was taken, `false` when the deadline passed first (never
    ///   before it).
    /// - Throws: what ``tryLock()`` throws, at once.
    public func lock(
        before deadline: ContinuousClock.Instant,
        pollInterval: Duration = .milliseconds(10)
    ) throws -> Bool {
        #if INTERLOCK_CONTENTION
        if try tryLock() { return true }
        // A first attempt that failed makes this a contended acquisition (ContentionRecorder.swift).
        let probe = _Contention.begin()
        let taken = try _poll(before: deadline, pollInterval: pollInterval, firstTried: true)
        if probe != 0 && taken { _Contention.end(probe, .distributedLock, address: _contentionKey, label: path) }
        return taken
        #else
        return try _poll(before: deadline, pollInterval: pollInterval, firstTried: false)
        #endif
    }

    /// `lock(before:pollInterval:)`'s loop of attempts and pauses; `firstTried`: the caller made
    /// the first attempt, so the loop starts with the deadline check and a pause.
    internal func _poll(
        before deadline: ContinuousClock.Instant, pollInterval: Duration, firstTried: Bool
    ) throws -> Bool {
        var tried = firstTried
        while true {
            if !tried, try tryLock() { return true }
            tried = false
            let now = ContinuousClock.now
            if now >= deadline { return false }
            _DLSys.sleep(Self.pollPause(pollInterval, before: deadline, now: now))
        }
    }

    /// The pause between two attempts of `lock(before:pollInterval:)`, the blocking one and the
    /// async one (DistributedLock+Async.swift), so that both follow the same rules: the mean is
    /// `pollInterval` (non-positive values mean 1 ms), with a random jitter of ±25% so that many
    /// waiters do not retry in step, and it never ends after `deadline`.
    static func pollPause(
        _ pollInterval: Duration, before deadline: ContinuousClock.Instant, now: ContinuousClock.Instant
    ) -> Duration {
        let interval = pollInterval > .zero ? pollInterval : .milliseconds(1)
        return min(interval * Double.random(in: 0.75...1.25), deadline - now)
    }

    // MARK: - Releasing

    /// Releases the lock held by this object.
    ///
    /// - Throws: ``DistributedLockError`` with code ``DistributedLockError/Code/notHeld`` when
    ///   this object does not hold the lock, ``DistributedLockError/Code/lockLost`` when it
    ///   held it but the lock was broken (and perhaps taken by someone else, whose lock is left
    ///   in place); afterwards this object no longer holds the lock. Other codes when the file
    ///   system refused; the object then still holds the lock and `unlock` may be retried.
    public func unlock() throws {
        // acquire: pairs with tryLock's release store of `held`, making heldToken visible.
        guard state.compareExchange(expected: Self.held, desired: Self.releasing, ordering: .acquire).exchanged else {
            throw DistributedLockError(
                code: .notHeld, path: path, operation: "unlock",
                message: "this DistributedLock object does not hold the lock")
        }
        var stillHeld = false
        defer {
            if !stillHeld && heldDescriptor >= 0 {
                close(heldDescriptor)
                heldDescriptor = -1
            }
            // release: the next tryLock (or retried unlock) acquires our writes.
            state.store(stillHeld ? Self.held : Self.idle, ordering: .release)
        }
        func lost(_ detail: String) -> DistributedLockError {
            DistributedLockError(
                code: .lockLost, path: path, operation: "unlock",
                message: "the lock held by this object was broken; \(detail)")
        }
        do {
            guard let entry = try _DLSys.lstatEntry(path) else { throw lost("nothing is at the path now") }
            guard try isOurs(entry) else { throw lost("someone else's lock is at the path and was left in place") }
            // With a descriptor open on our file its inode number cannot be reused, so the
            // identity alone proves the entry is ours; otherwise (NFS recipe) read the token.
            let proof: Expectation = heldDescriptor >= 0 ? .identity(heldIdentity, heldToken) : .token(heldToken)
            // Our token names the tombstone: unique, and no random bytes to draw.
            switch try removeLock(at: path, expecting: proof, tombstone: privateName(heldToken.hex, "dead")) {
            case .removed: return
            case .absent: throw lost("nothing is at the path now")
            case .mismatch(let restored):
                throw lost(
                    restored
                        ? "someone else's lock is at the path and was left in place"
                        : "someone else's lock was at the path, and could not be put back because the lock was taken meanwhile"
                )
            }
        } catch let failure as _DistributedLockFailure {
            // The lock was not touched (rename failed) or not ours: keep holding only if the
            // failure came before the rename, i.e. the entry may still be ours - it is, or the
            // file system cannot say (a network file system that lost its server answers EIO):
            // a later unlock releases it then, instead of leaving it held by nobody.
            do {
                if let entry = try _DLSys.lstatEntry(path) { stillHeld = try isOurs(entry) }
            } catch {
                stillHeld = true
            }
            throw DistributedLockError(failure, path: path, operation: "unlock")
        }
    }

    /// Whether `entry`, lstat'ed at the path while this object holds the lock, is our lock file:
    /// the identity (device, inode) of the file we linked, or, with the portable recipe, a
    /// record with our token. Some file systems number inodes per name, not per file (sshfs:
    /// SFTP has no inode numbers, so the lock's name gets another number than the temporary
    /// file it was linked from): the token decides there. Either way removeLock proves the
    /// token again after its rename.
    private func isOurs(_ entry: stat) throws(_DistributedLockFailure) -> Bool {
        if _DLSys.identity(entry) == heldIdentity { return true }
        // FAST recipe: the inode we keep open pins the number; another number is another file.
        guard heldDescriptor < 0 else { return false }
        do {
            return try _DLSys.readRecord(path)?.0.token == heldToken
        } catch {
            if case .notALock = error { return false }  // not a lock: not ours either
            throw error
        }
    }

    /// Removes the lock, whoever holds it. Does nothing when nobody holds it.
    ///
    /// The holder is not told; its ``unlock()`` will throw ``DistributedLockError/Code/lockLost``.
    /// Prefer ``breakLockIfStale(olderThan:)``, which removes only provably stale locks.
    /// - Throws: ``DistributedLockError`` when something that is not a lock is at the path (it
    ///   is left in place) or the file system refuses.
    public func breakLock() throws {
        do {
            guard try _DLSys.readRecord(path) != nil else { return }
            _ = try removeLock(at: path, expecting: .anyLock)
        } catch {
            throw DistributedLockError(error, path: path, operation: "breakLock")
        }
    }

    /// Who holds the lock.
    ///
    /// - Returns: the holder's record, or `nil` when nobody holds the lock.
    /// - Throws: ``DistributedLockError`` when something that is not a lock is at the path, or
    ///   it cannot be read.
    public func lockInfo() throws -> Info? {
        do {
            return try _DLSys.readRecord(path)?.0.info
        } catch {
            throw DistributedLockError(error, path: path, operation: "lockInfo")
        }
    }
}
