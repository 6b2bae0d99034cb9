// PostgresLock: a mutex between processes on many hosts that share a PostgreSQL server, on a
// session-level advisory lock held on a connection that the lock object owns, with fencing
// tokens (PostgresLockSQL.swift) and lock-loss detection.
//
// The object's state (its session, touched only by the holder of `gate`, a binary Semaphore:
// every call runs one at a time, and an async call waits for its turn without blocking a thread;
// the idle watcher takes the gate with tryWait, PostgresLock+Async.swift):
//
//   connection  held   lost   meaning                                   next
//   nil         no     no     not connected (after a loss, or a        tryLock/lock/holderInfo
//                             failed open)                              connect first
//   open        no     no     connected, lock not held                  tryLock/lock may take it
//   open        yes    no     holding; token published in `token`      unlock releases it;
//                                                                       checkHeld asks the server
//   any         yes    yes    the session died while holding: the      unlock throws lockLost and
//                             server released the lock                  clears held; checkHeld false
//
// Invariants: (1) `held` is true only from a granted acquisition until unlock (which clears it
// whatever the server says); (2) `token` is non-zero exactly while held and not known lost:
// the token of the current acquisition; (3) a session that may hold the lock and whose
// connection failed mid-statement is closed, never reused: the server then releases whatever
// it held, so a failure never leaves a lock held that the object does not know of; (4) while
// held, the connection is never replaced: a new session would not hold the lock, and the loss
// must be reported by checkHeld or unlock, not papered over.
//
// Its own session, and only its own. Advisory locks belong to a server session and are
// re-entrant in it, so a pooler that hands one server session to many clients (PgBouncer in
// transaction or statement mode) would give the lock to whichever client lands there next.
// When a session opens, the client claims it: a random nonce in the session-level setting
// `interlock.client`, refused when another client's nonce is already there; when the backend
// pid that libpq was told differs from the backend's own (a pooler in between), a second
// connection looks for the nonce, and finds it when the pooler shares sessions. Every statement
// that takes, releases or reads the lock tests the nonce in the same statement and does nothing
// on a session that is not the client's, so no ordering of the pooler's choices lets two
// clients hold the lock (PostgresLockSQL.swift). The same claim sets the server side's TCP
// keepalives, so that the server releases the lock of a holder whose host vanished within
// about 25 s (measured: PostgresLockPartitionTests), not the kernel's two hours.
//
// Waiting: `lock(before:)` tries once, then waits in the server (`pg_advisory_lock` under
// `lock_timeout` set to the time left): the server grants the lock the moment its holder
// releases it, in the order the waiters queued, with no polling traffic (`pollInterval` is not
// used). Measured against polling `pg_try_advisory_lock` (PostgresBenchmarks, "lock hand-off"):
// 3.03 ms per hand-off including a 2-3 ms pause, against 3.68 ms polling every 1 ms (which also
// costs a round trip per waiter per millisecond) and 10.7 ms every 10 ms.
//
// Memory ordering: `token` is an Atomic read by `fencingToken` without the mutex; it is stored
// with release after the acquisition completed and loaded with acquire, so that a reader that
// sees a token also sees the state that produced it (the value is all it reads, so relaxed
// would do; release/acquire is free on x86 and one barrier on aarch64, outside any hot loop).

import Interlock
import Synchronization

/// A mutex between processes, on any number of hosts, that share a PostgreSQL server: a
/// session-level advisory lock held on a connection that the object owns.
///
/// ```swift
/// let lock = try PostgresLock(connectionString: "host=db.internal dbname=jobs", name: "nightly-report")
/// if try lock.tryLock() {
///     defer { try? lock.unlock() }
///     try storage.write(report, fencingToken: lock.fencingToken!)   // the resource checks it
/// }
/// ```
///
/// - The lock is the advisory lock whose bigint key is the 64-bit FNV-1a hash of `name`'s UTF-8
///   bytes, in the connection's database. Names whose keys collide share one lock (they exclude
///   each other; nothing is corrupted); so would another application's advisory locks on the
///   same keys.
/// - Each acquisition gets a ``fencingToken`` strictly greater than every earlier holder's, kept
///   across server restarts and crashes. A lock alone cannot protect a resource from a holder
///   that paused (a GC pause, a stopped VM) and woke after losing the lock: pass the token with
///   every write, and have the resource refuse any token smaller than the largest it has seen.
/// - The lock dies with its session. A dropped connection, a server restart or
///   `pg_terminate_backend` never leaves the object believing it holds the lock once it asks:
///   ``checkHeld()-5fab1`` answers with one round trip, and ``unlock()-8ydsa`` throws
///   ``PostgresLockError/Code/lockLost``.
/// - A holder whose host vanishes (power loss, a partition) loses the lock within about 30 s:
///   the session sets TCP keepalives on both sides (libpq's `keepalives_*` for the client's
///   socket, on by default here, and the same values as the server's `tcp_keepalives_*` for
///   the server's), so the server ends the session and releases the lock, and the client
///   notices a server that vanished.
/// - The lock needs a server session of its own: connect directly, or through a pooler in
///   session mode. A pooler that shares server sessions between clients (PgBouncer in
///   transaction or statement mode) is refused with ``PostgresLockError/Code/unsupportedPooler``,
///   when the object connects or at the latest at the first statement that lands on another
///   client's session: never are two holders let in.
/// - Setup: the first use creates the schema `interlock` (an unlogged sequence and two one-row
///   tables for the tokens), which needs the `CREATE` privilege on the database; or have an
///   administrator create it once with the same statements (``PostgresLock/setupSQL``) and
///   grant `USAGE` on the schema, `SELECT, INSERT` on `interlock.fencing_current`,
///   `SELECT, UPDATE` on `interlock.fencing_epoch` and `USAGE` on `interlock.fencing_counter`.
///   PostgreSQL 15 or later.
/// - Calls on one object run one at a time (a mutex inside); a ``lock(before:pollInterval:)``
///   that waits in the server makes the object's other calls wait for it. Give each thread or
///   task that locks independently its own object: two objects of the same name exclude each
///   other, as two processes do.
public final class PostgresLock: DistributedLocking {
    /// The lock's name, as given to ``init(connectionString:name:)``.
    public let name: String
    /// The advisory-lock key that `name` maps to (see the type's notes).
    public let key: Int64

    /// Who may use the session now: one call at a time, blocking or async (the holder of the
    /// single unit), or the idle watcher.
    let gate = Semaphore(value: 1)
    /// The session, touched only by the gate's holder.
    let box: _PGSessionBox
    /// Tasks waiting in `waitUntilLost()`.
    let lossWaiters = _PGLossWaiters()
    /// The current acquisition's token; 0 when not held (or known lost). Tokens are positive.
    let token = Atomic<Int64>(0)
    /// The engine over leased connections, for a lock made with a connection pool
    /// (PostgresLockEngine.swift); nil for a lock on its own libpq session.
    let engine: (any _PGLockEngine)?

    /// The statements that create the schema `interlock`, for an administrator who creates it
    /// once instead of giving clients the `CREATE` privilege.
    public static var setupSQL: String { _PostgresLockSQL.setup }

    /// The statements that install fencing at the resource: `interlock.fence(name text, token
    /// bigint) → boolean`, true only while `token` is the newest fencing token issued for the
    /// lock `name`, so that a table in the same database refuses a paused ex-holder's late
    /// write in the very statement that writes.
    ///
    /// Run it once per database (an administrator, or any role with `CREATE` on the schema
    /// `interlock`; it creates the schema too, as ``setupSQL`` does). Every later acquisition,
    /// also through objects created before it ran, records its token (an UNLOGGED table: no
    /// WAL flush per acquisition). Then check the token in the protected write itself:
    ///
    /// ```sql
    /// UPDATE reports SET body = $1 WHERE id = $2 AND interlock.fence('nightly-report', $3);
    /// -- 0 rows: the token is not the newest any more; the lock passed on
    /// ```
    ///
    /// or in a `CHECK` constraint or a trigger that reads the token from the row. `fence` is
    /// false for every token after a server crash until the next acquisition (the holders'
    /// sessions died with it), and still true for the newest token after its holder released
    /// the lock, until the next acquisition. It reads the name's row `FOR SHARE`, so an
    /// acquisition that comes while the previous holder's protected write is in flight waits for
    /// that write's transaction to end: keep protected transactions short.
    public static var fencingSQL: String { _PostgresLockSQL.setup + "\n" + _PostgresLockSQL.fencing }

    /// Connects to the server and prepares the lock's statements.
    ///
    /// - Parameters:
    ///   - connectionString: a libpq connection string, `key=value` pairs or a
    ///     `postgresql://` URI; empty means libpq's defaults (`PGHOST` and the like). Its values
    ///     override the lock's defaults (`connect_timeout=10`, `keepalives_idle=10`,
    ///     `keepalives_interval=5`, `keepalives_count=3`, `tcp_user_timeout=30000`,
    ///     `application_name=interlock`).
    ///   - name: the lock's name; every process that uses the same name and database shares
    ///     the lock.
    /// - Throws: ``PostgresLockError`` with code `invalidConnectionString`, `connectionFailed`
    ///   (with libpq's reason: the host and port tried, authentication, an unknown database),
    ///   `permissionDenied` (the schema cannot be created or used), `unsupportedServer`
    ///   (before PostgreSQL 15), `unsupportedPooler` (a pooler that shares server sessions
    ///   between clients, such as PgBouncer in transaction or statement mode).
    public convenience init(connectionString: String, name: String) throws(PostgresLockError) {
        try self.init(connectionString: connectionString, name: name, key: _PostgresLockSQL.key(for: name))
    }

    /// Connects to the server for the advisory lock `key`, which another program may use too.
    ///
    /// Every bigint is a key, `Int64.min` and `Int64.max` included; the lock is then the one
    /// that `pg_advisory_lock(key)` takes, so that a program that is not Swift can share it.
    /// - Parameters:
    ///   - connectionString: as in ``init(connectionString:name:)``.
    ///   - name: the lock's name in errors and ``holderInfo()``; it does not choose the key.
    ///   - key: the advisory lock's bigint key.
    /// - Throws: what ``init(connectionString:name:)`` throws.
    public convenience init(connectionString: String, name: String, key: Int64) throws(PostgresLockError) {
        try self.init(connectionString: connectionString, name: name, key: key, probingPoolers: true)
    }

    /// The designated initializer; `probingPoolers: false` skips the second connection that
    /// looks for a pooler sharing sessions (tests of the statements' own-session test).
    init(connectionString: String, name: String, key: Int64, probingPoolers: Bool) throws(PostgresLockError) {
        self.name = name
        self.key = key
        if let reason = _PGConnection.syntaxError(in: connectionString) {
            throw PostgresLockError(
                code: .invalidConnectionString, lockName: name, operation: "init",
                message: "the connection string cannot be parsed", serverMessage: reason)
        }
        let session = _PostgresSession(
            connectionString: connectionString, name: name, key: key, probingPoolers: probingPoolers)
        _ = try session.connection(for: "init")
        self.box = _PGSessionBox(session)
        self.engine = nil
    }

    /// A lock whose round trips go through `engine` (a connection pool's leases).
    init(name: String, key: Int64, engine: any _PGLockEngine) {
        self.name = name
        self.key = key
        // Never opened: every call goes to the engine.
        self.box = _PGSessionBox(_PostgresSession(connectionString: "", name: name, key: key, probingPoolers: false))
        self.engine = engine
    }

    // MARK: - Taking the lock

    /// Takes the lock if no session holds it, without waiting: one round trip.
    ///
    /// - Returns: `true` when this call took the lock (``fencingToken`` is then its token);
    ///   `false` when anyone holds it, this object included. An object that lost the lock
    ///   (``checkHeld()-5fab1`` said `false`) still counts as holding it until ``unlock()-8ydsa`` has thrown
    ///   ``PostgresLockError/Code/lockLost``: the loss is acknowledged before the lock is taken
    ///   again.
    /// - Throws: ``PostgresLockError``: `connectionFailed` when no session can be opened (a
    ///   session that broke since the last call is reopened once, silently, when the lock is
    ///   not held), `permissionDenied`, `serverError`, `tokensExhausted`.
    public func tryLock() throws(PostgresLockError) -> Bool {
        if let engine {
            return try _PGBlocking.run(name, "tryLock") { [self] in
                try await gateAsync { try await engineAcquire(engine, "tryLock", nil) }
            }
        }
        return try exclusively { session throws(PostgresLockError) -> Bool in
            guard !session.held else { return false }
            guard let acquired = try session.acquire(operation: "tryLock", waitingUntil: nil) else { return false }
            // Release: pairs with fencingToken's acquire load.
            token.store(acquired, ordering: .releasing)
            return true
        }
    }

    /// Takes the lock, waiting in the server until `deadline` at most.
    ///
    /// Tries at once; then the session waits in the server's queue for the lock, which grants
    /// it the moment the holder releases it (in arrival order among waiters), so nothing polls.
    /// A deadline in the past makes it a ``tryLock()-9dozi``. The calling thread blocks meanwhile.
    /// - Parameters:
    ///   - deadline: when to give up.
    ///   - pollInterval: not used: the server wakes the waiter (kept for `DistributedLocking`).
    /// - Returns: `true` when the lock was taken, `false` when the deadline passed first (never
    ///   before it; the server's `lock_timeout` has a resolution of 1 ms).
    /// - Throws: what ``tryLock()-9dozi`` throws.
    public func lock(
        before deadline: ContinuousClock.Instant, pollInterval: Duration = .milliseconds(10)
    ) throws(PostgresLockError) -> Bool {
        if let engine {
            return try _PGBlocking.run(name, "lock(before:)") { [self] in
                try await gateAsync { try await engineAcquire(engine, "lock(before:)", deadline) }
            }
        }
        return try exclusively { session throws(PostgresLockError) -> Bool in
            guard !session.held else { return false }
            guard let acquired = try session.acquire(operation: "lock(before:)", waitingUntil: deadline) else {
                return false
            }
            // Release: as in tryLock().
            token.store(acquired, ordering: .releasing)
            return true
        }
    }

    // MARK: - Holding and releasing

    /// The current acquisition's fencing token: strictly greater than the token of every earlier
    /// acquisition of this lock, by any process, across server restarts and crashes.
    ///
    /// `nil` when this object does not hold the lock, or ``checkHeld()-5fab1`` found it lost. Read
    /// without a round trip. A resource protected by the lock keeps the largest token it has
    /// accepted and refuses a write that carries a smaller one: then a holder that lost the
    /// lock without knowing it (paused past its session's death) cannot overwrite the work of
    /// the next holder. The token's top 20 bits count the server's crashes, the low 43 its
    /// acquisitions since.
    public var fencingToken: Int64? {
        // Acquire: pairs with the release store in tryLock() and lock(before:).
        let value = token.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    /// Asks the server whether this object's session still holds the lock: one round trip.
    ///
    /// - Returns: `true` when it does; `false` when this object does not hold the lock, or held
    ///   it and its session died (the connection broke, the server restarted, the backend was
    ///   terminated): the server released it, ``fencingToken`` is then `nil` and ``unlock()-8ydsa``
    ///   will throw ``PostgresLockError/Code/lockLost``.
    /// - Throws: ``PostgresLockError`` when the server answered with an error.
    public func checkHeld() throws(PostgresLockError) -> Bool {
        if let engine {
            return try _PGBlocking.run(name, "checkHeld") { [self] in try await engineCheck(engine) }
        }
        return try exclusively { session throws(PostgresLockError) -> Bool in try session.checkHeld() }
    }

    /// Releases the lock held by this object: one round trip.
    ///
    /// Afterwards the object does not hold the lock, whatever the outcome.
    /// - Throws: ``PostgresLockError`` with code `notHeld` when this object does not hold the
    ///   lock; `lockLost` when its session died while holding it (the server had released it,
    ///   and someone else may hold it now); `serverError` when the server refused the unlock
    ///   (the session is then closed, which releases the lock).
    public func unlock() throws(PostgresLockError) {
        if let engine {
            return try _PGBlocking.run(name, "unlock") { [self] in try await engineRelease(engine) }
        }
        try exclusively { session throws(PostgresLockError) in
            // Relaxed: the token is only cleared; nothing is published with the zero.
            token.store(0, ordering: .relaxed)
            try session.release()
        }
    }

    /// Who holds the lock now, as the server sees it; `nil` when nobody does.
    ///
    /// Reads `pg_locks` joined with `pg_stat_activity`: one round trip.
    /// - Throws: ``PostgresLockError`` when no session can be opened or the server refused.
    public func holderInfo() throws(PostgresLockError) -> Holder? {
        if let engine {
            return try _PGBlocking.run(name, "holderInfo") { [self] in try await gateAsync { try await engine.holder() }
            }
        }
        return try exclusively { session throws(PostgresLockError) -> Holder? in try session.holder() }
    }
}

extension PostgresLock.Holder {
    /// The holder that a row of the `holder` statement describes (PostgresLockSQL.swift);
    /// nil for no row.
    init?(holderRow row: [String?]?) {
        guard let row, row.count >= 5 else { return nil }
        self.init(
            backendProcessID: row[0].flatMap { Int32($0) } ?? 0,
            clientAddress: row[1],
            applicationName: row[2],
            sessionStart: row[3].flatMap { Double($0) }.map { Duration.seconds($0) },
            isThisObject: row[4] == "t")
    }
}

extension PostgresLock {
    /// The session holding a ``PostgresLock``, as the server reports it.
    ///
    /// PostgreSQL shows the client address and the session's start of another role's session
    /// only to members of that role and of `pg_read_all_stats`; to others they are `nil`.
    public struct Holder: Sendable, Equatable {
        /// The process ID of the server backend serving the holder's session.
        public var backendProcessID: Int32
        /// The holder's client address (`nil` for a Unix-domain socket, or when hidden).
        public var clientAddress: String?
        /// The holder's `application_name` (`interlock` unless its connection string set one).
        public var applicationName: String?
        /// Since when the holder's session exists (wall-clock time since the Unix epoch): the
        /// server does not record when an advisory lock was granted, so this is a lower bound.
        public var sessionStart: Duration?
        /// Whether the holder is this object's own session.
        public var isThisObject: Bool

        /// Creates a holder description.
        public init(
            backendProcessID: Int32, clientAddress: String?, applicationName: String?, sessionStart: Duration?,
            isThisObject: Bool
        ) {
            self.backendProcessID = backendProcessID
            self.clientAddress = clientAddress
            self.applicationName = applicationName
            self.sessionStart = sessionStart
            self.isThisObject = isThisObject
        }
    }
}
