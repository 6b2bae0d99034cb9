// The connection-owning half of PostgresLock and PostgresSemaphore: its state (PostgresLock.swift's
// table) and the round trips, run by the holder of the object's gate. A semaphore's session is
// the same with `slots` set: its acquisition tries the slots and records the granted one in
// `heldKey`, which the check and the release then use (Semaphore/).

/// The session of a ``PostgresLock`` and what it knows (see PostgresLock.swift).
final class _PostgresSession {
    let connectionString: String
    let name: String
    let key: Int64
    /// A PostgresSemaphore's slots (the keys of its permits); nil for a PostgresLock.
    let slots: [Int64]?
    /// How long a semaphore's waiter sleeps at most without a notification (tests lengthen it
    /// to prove that a release wakes the waiter).
    var recheckInterval = _PostgresSemaphoreSQL.recheckInterval
    /// The key of the advisory lock held: `key` for a lock, the granted slot for a semaphore.
    private(set) var heldKey: Int64
    /// The open session, if any (nil after a loss or a failed open).
    private(set) var open: _PGConnection?
    /// This client's mark on the open session's server side (`interlock.client`): random, new
    /// for every session, carried by every statement of the lock (PostgresLockSQL.swift).
    private(set) var nonce = ""
    /// Whether this object holds the lock (from a granted acquisition until unlock).
    private(set) var held = false
    /// Whether the session died while holding the lock (found by checkHeld, or by a call).
    private var lost = false
    /// Held and not known lost: the token is current.
    var heldAndAlive: Bool { held && !lost }
    /// Whether the idle watcher is registered with the reactor, and on which socket
    /// (PostgresSession+Async.swift).
    var watching = false
    var watchedSocket: Int32 = -1

    /// Closes the session: the reactor must not keep a registration for a socket that closes.
    deinit { close() }

    /// Records that the session that held the lock died, and closes it.
    func markLost() {
        lost = true
        close()
    }

    /// Whether a session that seems to pass through a pooler is probed with a second connection.
    let probingPoolers: Bool

    init(connectionString: String, name: String, key: Int64, probingPoolers: Bool, slots: [Int64]? = nil) {
        self.connectionString = connectionString
        self.name = name
        self.key = key
        self.heldKey = key
        self.slots = slots
        self.probingPoolers = probingPoolers
    }

    // MARK: - The session

    /// The open session, opening one (and preparing the statements, creating the schema the
    /// first time) when there is none. Never called while `held` and not lost (invariant 4).
    func connection(for operation: String) throws(PostgresLockError) -> _PGConnection {
        if let open, open.isUsable { return open }
        close()
        let connection: _PGConnection
        do {
            connection = try _PGConnection(connectionString: connectionString)
        } catch {
            throw PostgresLockError(
                code: .connectionFailed, lockName: name, operation: operation,
                message: "cannot connect to the server", serverMessage: error.message)
        }
        guard connection.serverVersion >= 150000 else {
            throw PostgresLockError(
                code: .unsupportedServer, lockName: name, operation: operation,
                message:
                    "the server runs PostgreSQL \(connection.serverVersion / 10000); PostgresLock needs 15 or later (unlogged sequences)"
            )
        }
        try claim(connection, for: operation)
        try prepare(connection, for: operation)
        open = connection
        return connection
    }

    /// Claims the server session for this client (`interlock.client`) and sets the server
    /// side's keepalives; refuses a session that another client claimed, and (when a pooler
    /// seems to be in between) a pooler that hands this client's session to the next client.
    private func claim(_ connection: _PGConnection, for operation: String) throws(PostgresLockError) {
        let nonce = Self.makeNonce()
        // The server's keepalives mirror libpq's for the client's socket (the lock's defaults,
        // or the connection string's); "0" is the kernel's default, as keepalives=0 asks.
        let keepalives = connection.option("keepalives") != "0"
        let server = ["keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout"].map {
            keepalives || $0 == "tcp_user_timeout"
                ? connection.option($0).flatMap { Int($0) }.map(String.init) ?? "0" : "0"
        }
        let row: [String?]
        do {
            row = try connection.run(_PostgresLockSQL.claim, parameters: [nonce] + server).first ?? []
        } catch {
            throw PostgresLockError(
                error, lockName: name, operation: operation, doing: "cannot set up the lock's session",
                lost: .connectionFailed)
        }
        if let prior = row.first ?? nil, !prior.isEmpty {
            throw pooler(
                operation,
                "the server session it was given already belongs to another client (its interlock.client is set)")
        }
        let backend = row.count > 1 ? row[1].flatMap { Int32($0) } : nil
        if probingPoolers, backend != connection.reportedBackendProcessID {
            // A pooler or proxy is in between (PgBouncer reports a random backend pid). A
            // second client's first statement lands on the session this one just used when the
            // pooler shares sessions; a failed probe proves nothing either way, and the
            // statements' own-session test still guards every operation.
            if let probe = try? _PGConnection(connectionString: connectionString) {
                let seen = try? probe.run(_PostgresLockSQL.probe).first?[0]
                probe.close()
                if seen == nonce {
                    throw pooler(operation, "a second connection was given the same server session")
                }
            }
        }
        self.nonce = nonce
    }

    /// A random nonce: 128 bits from the system's generator, in hex.
    static func makeNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return [generator.next(), generator.next()].map { (word: UInt64) in
            let digits = String(word, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }

    /// The refusal of a pooler that shares server sessions, with `evidence` and the way out.
    func pooler(_ operation: String, _ evidence: String) -> PostgresLockError {
        Self.pooler(name, operation, evidence)
    }

    /// The refusal of a pooler that shares server sessions, for the lock `name`.
    static func pooler(_ name: String, _ operation: String, _ evidence: String) -> PostgresLockError {
        PostgresLockError(
            code: .unsupportedPooler, lockName: name, operation: operation,
            message:
                "the connection passes through a pooler that shares server sessions between clients (PgBouncer in transaction or statement mode, or a session pool that does not reset sessions): \(evidence). A session-level advisory lock would stay with whichever client uses that session next. Connect to the server directly, or through a pool in session mode (PgBouncer: pool_mode = session, for instance on a [databases] entry of its own for the locks)"
        )
    }

    /// Whether `failure` says that a prepared statement of this session is missing: the
    /// statement reached a server session that this client did not prepare (a pooler).
    static func missingStatement(_ failure: _PGFailure) -> Bool { failure.sqlState == "26000" }

    /// The epoch of the tokens, starting a new one when the server has none (after a crash,
    /// or at first use): a durable increment, flushed before any token carries it. Called only
    /// when an acquiring statement read no epoch. One round trip (`newEpoch` ends by reading it).
    func startEpoch(_ connection: _PGConnection, for operation: String) throws(PostgresLockError) -> Int64 {
        try startedEpoch(Result { () throws(_PGFailure) in try connection.run(_PostgresLockSQL.newEpoch) }, operation)
    }

    /// After noting a token for fencing (the acquisition that started an epoch): a failure
    /// closes the session, which releases the lock, and is thrown.
    func noted(_ token: Int64, _ operation: String, _ outcome: Result<[[String?]], _PGFailure>)
        throws(PostgresLockError)
    {
        guard case .failure(let error) = outcome else { return }
        held = false
        close()
        throw PostgresLockError(
            error, lockName: name, operation: operation,
            doing:
                "cannot note the fencing token \(token) (interlock.note_token); the session was closed, which released the lock"
        )
    }

    /// The epoch that `newEpoch`'s outcome reads.
    func startedEpoch(_ outcome: Result<[[String?]], _PGFailure>, _ operation: String) throws(PostgresLockError)
        -> Int64
    {
        switch outcome {
        case .failure(let error):
            throw PostgresLockError(
                error, lockName: name, operation: operation, doing: "cannot read or start the fencing-token epoch",
                lost: .connectionFailed)
        case .success(let rows):
            if let started = rows.first?[0].flatMap({ Int64($0) }) { return started }
            throw PostgresLockError(
                code: .serverError, lockName: name, operation: operation,
                message: "interlock.fencing_current has no epoch after one was started")
        }
    }

    /// Prepares the statements (a lock's, or a semaphore's with its session setting); when the
    /// schema is missing, creates it and prepares again. The first statement of each list
    /// reads the schema, so a missing schema fails before anything was prepared.
    private func prepare(_ connection: _PGConnection, for operation: String) throws(PostgresLockError) {
        let statements =
            slots == nil
            ? _PostgresLockSQL.statements
            : _PostgresSemaphoreSQL.statements
                + _PostgresLockSQL.statements.filter { $0.name == _PostgresLockSQL.check }
        for attempt in 0..<2 {
            do {
                if slots != nil { _ = try connection.run(_PostgresSemaphoreSQL.sessionSettings) }
                for statement in statements {
                    try connection.prepare(statement.name, statement.sql, parameterCount: statement.parameters)
                }
                return
            } catch  where attempt == 0 && ["42P01", "3F000", "42883"].contains(error.sqlState ?? "") {
                // undefined_table, invalid_schema_name: the first use on this database;
                // undefined_function: a schema from before interlock.note_token.
                do {
                    _ = try connection.run(_PostgresLockSQL.setup)
                } catch {
                    throw PostgresLockError(
                        error, lockName: name, operation: operation,
                        doing: "cannot create the schema interlock (PostgresLock.setupSQL)", lost: .connectionFailed)
                }
            } catch {
                throw PostgresLockError(
                    error, lockName: name, operation: operation,
                    doing: "cannot prepare the lock's statements", lost: .connectionFailed)
            }
        }
    }

    /// Ends the session (the server releases whatever it held: invariant 3).
    func close() {
        stopWatching()
        open?.close()
        open = nil
    }

    // MARK: - Acquiring

    /// What an acquiring statement's row (`mine, counter, epoch`) says.
    enum Grant {
        case notGranted
        case granted(counter: String, epoch: Int64?)
    }

    /// Reads an acquiring statement's row; a row from another client's session closes this one
    /// and throws `unsupportedPooler`.
    func grant(from row: [String?], operation: String) throws(PostgresLockError) -> Grant {
        guard row.first == "t", row.count >= 3 else {
            close()
            throw pooler(operation, "the statement ran on a server session that this client does not own")
        }
        guard let counter = row[1] else { return .notGranted }
        if slots != nil {
            guard row.count > 4, let slot = row[4].flatMap({ Int64($0) }) else {
                close()
                throw PostgresLockError(
                    code: .serverError, lockName: name, operation: operation,
                    message: "internal error: a granted permit without its slot; the session was closed")
            }
            heldKey = slot
        }
        return .granted(counter: counter, epoch: row[2].flatMap { Int64($0) })
    }

    /// Records a granted acquisition whose epoch is known. - Returns: its token. A token that
    /// would overflow closes the session, which releases the lock.
    func granted(counter text: String, epoch: Int64, operation: String) throws(PostgresLockError) -> Int64 {
        guard let counter = Int64(text), let token = _PostgresLockSQL.token(epoch: epoch, counter: counter) else {
            close()
            throw PostgresLockError(
                code: .tokensExhausted, lockName: name, operation: operation,
                message:
                    "the fencing token would overflow (epoch \(epoch), counter \(text)); the session was closed, which released the lock"
            )
        }
        held = true
        lost = false
        return token
    }

    /// What a failed acquiring statement means: a missing prepared statement is a pooler; a lost
    /// session is retried once when `retry` (it held nothing); anything else is thrown. The
    /// session is closed first: it may hold the lock (invariant 3).
    func acquisitionFailed(_ error: _PGFailure, operation: String, retry: inout Bool) throws(PostgresLockError) {
        close()
        if Self.missingStatement(error) {
            throw pooler(operation, "a prepared statement of the session was missing: \(error.message)")
        }
        if error.sessionLost && retry {
            retry = false
            return
        }
        throw PostgresLockError(error, lockName: name, operation: operation, doing: "cannot take the lock")
    }

    /// `lock_timeout` for the time left until `deadline`, in whole milliseconds rounded up (the
    /// server never gives up before the deadline); nil when it has passed. lock_timeout takes at
    /// most 2^31 - 1 ms (24.8 days): a later deadline waits that long and loops (and
    /// seconds * 1000 must not overflow).
    static func lockTimeout(until deadline: ContinuousClock.Instant) -> Int64? {
        let left = deadline - .now
        if left <= .zero { return nil }
        let (seconds, attoseconds) = left.components
        let milliseconds =
            seconds >= Int64(Int32.max) / 1000
            ? Int64(Int32.max)
            : seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return max(1, milliseconds)
    }

    /// Takes the lock: one try, then (with a deadline) waits in the server until `deadline`.
    /// - Returns: the acquisition's fencing token, or nil when the lock was not taken.
    func acquire(operation: String, waitingUntil deadline: ContinuousClock.Instant?) throws(PostgresLockError) -> Int64?
    {
        precondition(!held, "PostgresLock: internal error, acquiring while held")
        if let token = try attempt(
            operation: operation, retryOnLostSession: true,
            { connection, nonce throws(_PGFailure) in
                try connection.run(prepared: _PostgresLockSQL.tryLock, [String(key), nonce, name]).first ?? []
            })
        {
            return token
        }
        guard let deadline else { return nil }
        let probe = _PGContention.begin()
        while let timeout = Self.lockTimeout(until: deadline) {
            let token = try attempt(
                operation: operation, retryOnLostSession: false,
                { [key, name] connection, nonce throws(_PGFailure) in
                    let sql = _PostgresLockSQL.waitingLock(
                        key: key, nonce: nonce, nameLiteral: try connection.literal(name), timeoutMilliseconds: timeout)
                    do throws(_PGFailure) {
                        return try connection.run(sql).first ?? []
                    } catch  where error.sqlState == "55P03" {
                        // lock_not_available: lock_timeout passed. The server may have granted
                        // the lock just as the timeout fired: the statement fails, but the
                        // session keeps a session-level lock (the stress workload saw it; a
                        // C client, 506 of 2,467 timeouts). Ask, and if it holds the lock,
                        // the acquisition succeeded: take its counter.
                        let check = try connection.run(prepared: _PostgresLockSQL.check, [String(key), nonce])
                        guard Self.holds(check.first) else { return Self.notGrantedRow(check.first) }
                        return try connection.run(prepared: _PostgresLockSQL.counter, [nonce, name]).first ?? []
                    }
                })
            if let token {
                _PGContention.end(probe, self, name: name, semaphore: false)
                return token
            }
        }
        return nil
    }

    /// Whether a `check` row says that this client's session holds the lock.
    static func holds(_ row: [String?]?) -> Bool { row?.first == "t" && row?.count == 2 && row?[1] == "1" }

    /// The acquiring row for "not granted", passing on a `check` row's `mine`.
    static func notGrantedRow(_ check: [String?]?) -> [String?] { [check?.first ?? "t", nil, nil] }

    /// One acquisition statement on the session, which returns the row `mine, counter, epoch`
    /// (counter NULL when the lock was not granted); a granted lock gets its token. Any
    /// failure after the grant closes the session, which releases the lock (invariant 3).
    func attempt(
        operation: String, retryOnLostSession: Bool,
        _ statement: (_PGConnection, String) throws(_PGFailure) -> [String?]
    ) throws(PostgresLockError) -> Int64? {
        var retry = retryOnLostSession
        while true {
            let connection = try self.connection(for: operation)
            let row: [String?]
            do {
                row = try statement(connection, nonce)
            } catch {
                try acquisitionFailed(error, operation: operation, retry: &retry)
                continue
            }
            switch try grant(from: row, operation: operation) {
            case .notGranted:
                return nil
            case .granted(let counter, let epoch?):
                return try granted(counter: counter, epoch: epoch, operation: operation)
            case .granted(let counter, nil):
                // No epoch: the first acquisition since a crash (or ever). The lock is held:
                // any failure here closes the session, which releases it.
                let epoch: Int64
                do {
                    epoch = try startEpoch(connection, for: operation)
                } catch {
                    close()
                    throw error
                }
                let token = try granted(counter: counter, epoch: epoch, operation: operation)
                guard slots == nil else { return token }  // a semaphore's tokens are not noted
                try noted(
                    token, operation,
                    Result { () throws(_PGFailure) in
                        try connection.run(prepared: _PostgresLockSQL.note, [name, String(token)])
                    })
                return token
            }
        }
    }

    // MARK: - Holding and releasing

    /// The connection to ask whether the lock is still held, or nil when the answer is known
    /// without asking (not held, or known lost: false).
    func connectionForCheck() -> _PGConnection? {
        guard held, !lost else { return nil }
        guard let open, open.isUsable else {
            lost = true
            close()
            return nil
        }
        return open
    }

    /// What the `check` statement's outcome says: held, or lost (recorded).
    func checked(_ outcome: Result<[[String?]], _PGFailure>) throws(PostgresLockError) -> Bool {
        let row: [String?]
        switch outcome {
        case .success(let rows): row = rows.first ?? []
        case .failure(let error):
            if error.sessionLost {
                lost = true
                close()
                return false
            }
            if Self.missingStatement(error) {
                lost = true
                close()
                throw pooler("checkHeld", "a prepared statement of the session was missing: \(error.message)")
            }
            throw PostgresLockError(error, lockName: name, operation: "checkHeld", doing: "cannot ask the server")
        }
        guard row.first == "t" else {
            // Another client's session answered: where the lock is, this client cannot tell.
            lost = true
            close()
            throw pooler("checkHeld", "the statement ran on a server session that this client does not own")
        }
        if Self.holds(row) { return true }
        lost = true  // the session lives but no longer holds it: treat it as lost
        close()
        return false
    }

    /// Whether the session still holds the lock (one round trip while held).
    func checkHeld() throws(PostgresLockError) -> Bool {
        guard let open = connectionForCheck() else { return false }
        return try checked(
            Result { () throws(_PGFailure) in
                try open.run(prepared: _PostgresLockSQL.check, [String(heldKey), nonce])
            })
    }

    /// The error of an unlock that found the lock lost.
    private var lostError: PostgresLockError {
        PostgresLockError(
            code: .lockLost, lockName: name, operation: "unlock",
            message:
                "the session holding the lock died (connection lost, server restarted or backend terminated); the server released the lock"
        )
    }

    /// Starts a release: from here on the object does not hold the lock, whatever happens.
    /// - Returns: the connection to send the unlock on. - Throws: `notHeld`, or `lockLost` when
    ///   the session is known dead (nothing to send).
    func beginRelease() throws(PostgresLockError) -> _PGConnection {
        guard held else {
            throw PostgresLockError(
                code: .notHeld, lockName: name, operation: "unlock", message: "this object does not hold the lock")
        }
        held = false
        let lostBefore = lost
        lost = false
        guard !lostBefore, let open, open.isUsable else {
            close()
            throw lostError
        }
        return open
    }

    /// Finishes a release with the unlock statement's outcome.
    func released(_ outcome: Result<[[String?]], _PGFailure>) throws(PostgresLockError) {
        let row: [String?]
        switch outcome {
        case .success(let rows): row = rows.first ?? []
        case .failure(let error):
            close()
            if error.sessionLost {
                throw PostgresLockError(
                    code: .lockLost, lockName: name, operation: "unlock", message: lostError.message,
                    sqlState: error.sqlState, serverMessage: error.message)
            }
            if Self.missingStatement(error) {
                throw pooler("unlock", "a prepared statement of the session was missing: \(error.message)")
            }
            throw PostgresLockError(
                error, lockName: name, operation: "unlock",
                doing: "the server refused the unlock; the session was closed, which released the lock")
        }
        guard row.first == "t" else {
            close()
            throw pooler("unlock", "the statement ran on a server session that this client does not own")
        }
        if row.count > 1, row[1] == "t" { return }
        // The session lives but did not hold the lock: treat it as lost, and start afresh.
        close()
        throw lostError
    }

    /// Releases the lock; afterwards it is not held, whatever happens.
    func release() throws(PostgresLockError) {
        let open = try beginRelease()
        let (statement, parameters) = releaseStatement
        try released(
            Result { () throws(_PGFailure) in
                try open.run(prepared: statement, parameters)
            })
    }

    /// The prepared statement that releases what is held, and its parameters: a lock's unlock,
    /// or a semaphore's release, which also wakes its waiters (PostgresSemaphoreSQL.swift).
    var releaseStatement: (String, [String]) {
        guard slots != nil else { return (_PostgresLockSQL.unlock, [String(key), nonce]) }
        return (
            _PostgresSemaphoreSQL.release,
            [String(heldKey), nonce, _PostgresSemaphoreSQL.channel(name: name), String(key)]
        )
    }

    // MARK: - Who holds it

    func holder() throws(PostgresLockError) -> PostgresLock.Holder? {
        if held, !lost, !(open?.isUsable ?? false) {
            lost = true  // invariant 4: the dead session's loss is recorded before another opens
        }
        var rows: [[String?]] = []
        // A session that broke since the last call is reopened once, silently, as tryLock does
        // (a dead session held nothing; one that held the lock is recorded lost first).
        for retry in [true, false] {
            let connection = try self.connection(for: "holderInfo")
            do {
                rows = try connection.run(prepared: _PostgresLockSQL.holder, [String(key), nonce])
                break
            } catch {
                if error.sessionLost {
                    if held { lost = true }
                    close()
                    if retry { continue }
                }
                throw PostgresLockError(error, lockName: name, operation: "holderInfo", doing: "cannot read pg_locks")
            }
        }
        return PostgresLock.Holder(holderRow: rows.first)
    }
}
