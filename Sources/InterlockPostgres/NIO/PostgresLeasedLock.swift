// The engine of a PostgresLock made with a postgres-nio PostgresClient (the trait PostgresNIO):
// the lock's statements (PostgresLockSQL.swift) on a connection leased from the client's pool
// for exactly the length of a hold (PostgresLease.swift), so that a Vapor or Hummingbird
// application locks through the connections it configured (TLS, credentials).
//
// A hold, as the state of the engine (under `state`; calls come one at a time, the owning
// PostgresLock's gate held, but waitUntilLost and the close callback read it from elsewhere):
//
//   lease    held   lost   meaning                                      next
//   nil      no     no     idle: no connection taken from the pool      acquire leases one
//   leased   no     no     acquiring: claimed, trying or waiting        granted, or unclaimed and
//                                                                       returned to the pool
//   leased   yes    no     holding: the connection holds the lock       release returns it
//   nil      yes    yes    the connection closed while holding (the     release throws lockLost
//                          server released the lock)
//
// Invariants: (1) a connection goes back to the pool only after an unlock that the server
// confirmed, the claim cleared (`interlock.client` set to '') and `lock_timeout` reset, or
// closed (end(closing:)): never holding the lock, carrying this engine's nonce, or a waiting
// slice's lock_timeout; (2) `held` is true from a grant until
// release; (3) the engine never opens a second lease while one is out.
//
// The session rules are PostgresLock's own: the claim (a nonce in `interlock.client`, refused
// when another client's is there) and the own-session test in every statement keep a pooler
// that shares sessions from letting two holders in (there is no second-connection probe: the
// pool's other connections are its own); the claim also sets the server side's TCP keepalives
// (10 s idle, 5 s interval, 3 probes, tcp_user_timeout 30 s), which release a vanished holder's
// lock. Waiting: `lock_timeout` chunks of at most 250 ms in the server, with the task's
// cancellation checked between them; postgres-nio also ends a running query's wait when its task
// is cancelled, without ending it in the server, so a cancelled acquisition closes its
// connection: the server ends the wait with the session and releases anything it granted. The
// server grants at the release within a chunk; a release that falls between two chunks may go
// to another waiter first.

#if INTERLOCK_POSTGRES_NIO
import Interlock
import PostgresNIO

/// A PostgresLock's engine over a PostgresClient's leased connections (see the file comment).
final class _PGLeasedLock: _PGLockEngine, Sendable {
    let client: PostgresClient
    let name: String
    /// A lock's key; a semaphore's wait key (PostgresSemaphoreSQL.swift).
    let key: Int64
    /// A semaphore's slots; nil for a lock.
    let slots: [Int64]?

    private struct State {
        var lease: _PGLease?
        var nonce = ""
        /// The advisory lock held: `key` for a lock, the granted slot for a semaphore.
        var heldKey: Int64 = 0
        var held = false
        var lost = false
        var lossWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// A semaphore's longest sleep without a notification (tests lengthen it).
        var recheckInterval = _PostgresSemaphoreSQL.recheckInterval
        var nextWaiter: UInt64 = 0
    }
    private let state = _PGProtected(State())

    /// The longest single wait in the server between two checks for cancellation, in ms.
    static let chunkMilliseconds: Int64 = 250

    /// What a connection goes back to the pool with: no claim, and `lock_timeout` as RESET
    /// would leave it (a wait set it; the application's next use of the connection must not
    /// inherit it). The server side's keepalives and `client_connection_check_interval` stay,
    /// harmless to other uses. One round trip.
    static let unclaim = """
        SELECT set_config('\(_PostgresLockSQL.clientSetting)', '', false), set_config('lock_timeout', s.reset_val, false)
        FROM pg_settings AS s WHERE s.name = 'lock_timeout'
        """

    init(client: PostgresClient, name: String, key: Int64, slots: [Int64]? = nil) {
        self.client = client
        self.name = name
        self.key = key
        self.slots = slots
    }

    deinit {
        // A lock dropped while held: close its connection, which releases the lock.
        state.withLock { $0.lease }?.abandon()
    }

    var isHeld: Bool { state.withLock { $0.held } }

    /// A semaphore waiter's longest sleep without a notification (tests lengthen it to prove
    /// that a release's notification wakes the waiter).
    var recheckInterval: Duration {
        get { state.withLock { $0.recheckInterval } }
        set { state.withLock { $0.recheckInterval = newValue } }
    }
    var isHeldAndAlive: Bool { state.withLock { $0.held && !$0.lost } }

    private var lease: _PGLease? { state.withLock { $0.lease } }
    private var nonce: String { state.withLock { $0.nonce } }
    private var heldKey: Int64 { state.withLock { $0.heldKey } }

    private func error(_ failure: _PGFailure, _ operation: String, _ doing: String) -> PostgresLockError {
        PostgresLockError(failure, lockName: name, operation: operation, doing: doing, lost: .connectionFailed)
    }

    // MARK: - Acquiring

    func acquire(operation: String, before deadline: ContinuousClock.Instant?) async throws -> Int64? {
        precondition(!isHeld, "PostgresLock: internal error, acquiring while held")
        let lease: _PGLease
        do {
            lease = try await _PGLease.take(from: client)
        } catch {
            throw PostgresLockError(
                code: .connectionFailed, lockName: name, operation: operation,
                message: "the PostgresClient could not lend a connection", serverMessage: "\(error)")
        }
        let nonce = _PostgresSession.makeNonce()
        state.withLock {
            $0.lease = lease
            $0.nonce = nonce
        }
        do {
            try await claim(lease, nonce, operation)
            let granted = try await attempt(lease, nonce, operation, deadline)
            if let granted { return granted }
            await endLease(unclaiming: true)
            return nil
        } catch {
            // Whatever the connection holds now is unknown: close it (invariant 1), which ends a
            // wait that the server may still be in and releases anything it was granted.
            await endLease(closing: true)
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
    }

    /// Claims the leased session for this engine and sets the server side's keepalives.
    private func claim(_ lease: _PGLease, _ nonce: String, _ operation: String) async throws(PostgresLockError) {
        let row: [String?]
        do {
            row = try await lease.run(_PostgresLockSQL.claim, [nonce, "10", "5", "3", "30000"]).first ?? []
        } catch {
            throw self.error(error, operation, "cannot set up the lock's session")
        }
        if let prior = row.first ?? nil, !prior.isEmpty {
            throw _PostgresSession.pooler(
                name, operation,
                "the server session it was given already belongs to another client (its interlock.client is set)")
        }
    }

    /// The try, then (with a deadline) the waits in chunks. - Returns: the token, or nil.
    private func attempt(
        _ lease: _PGLease, _ nonce: String, _ operation: String, _ deadline: ContinuousClock.Instant?
    ) async throws -> Int64? {
        if slots != nil { return try await attemptPermit(lease, nonce, operation, deadline) }
        let parameters = [String(key), nonce, name]
        var row = try await withSchema(lease, operation) { () async throws(_PGFailure) -> [String?] in
            let tryLock = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.tryLock }!.sql
            return try await lease.run(tryLock, parameters).first ?? []
        }
        while true {
            guard row.first == "t", row.count >= 3 else {
                throw _PostgresSession.pooler(
                    name, operation, "the statement ran on a server session that this client does not own")
            }
            if let counter = row[1] { return try await granted(lease, counter, row[2], operation) }
            guard let deadline, let left = _PostgresSession.lockTimeout(until: deadline) else { return nil }
            try Task.checkCancellation()
            row = try await wait(lease, parameters, min(left, Self.chunkMilliseconds), operation)
        }
    }

    /// One chunk of waiting in the server. - Returns: the acquiring row.
    private func wait(_ lease: _PGLease, _ parameters: [String], _ milliseconds: Int64, _ operation: String)
        async throws(PostgresLockError) -> [String?]
    {
        do {
            _ = try await lease.run("SET lock_timeout = \(milliseconds)")
            do {
                return try await lease.run(_PostgresLockSQL.waitingLockParameterized, parameters).first ?? []
            } catch  where error.sqlState == "55P03" {
                // lock_timeout passed, perhaps as the lock was granted (PostgresSession.acquire).
                let check = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.check }!.sql
                let held = try await lease.run(check, [parameters[0], parameters[1]]).first
                guard _PostgresSession.holds(held) else { return _PostgresSession.notGrantedRow(held) }
                let counter = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.counter }!.sql
                return try await lease.run(counter, [parameters[1], parameters[2]]).first ?? []
            }
        } catch {
            throw self.error(error, operation, "cannot take the lock")
        }
    }

    /// A statement that needs the schema: run the schema's setup once when it is missing.
    func withSchema<R>(
        _ lease: _PGLease, _ operation: String, _ body: () async throws(_PGFailure) -> R
    ) async throws(PostgresLockError) -> R {
        do {
            return try await body()
        } catch  where ["42P01", "3F000", "42883"].contains(error.sqlState ?? "") {
            do {
                _ = try await lease.runScript(_PostgresLockSQL.setup)
                return try await body()
            } catch {
                throw self.error(error, operation, "cannot create or use the schema interlock (PostgresLock.setupSQL)")
            }
        } catch {
            throw self.error(error, operation, "cannot take the lock")
        }
    }

    /// A granted acquisition: its token (starting an epoch when there is none), the hold recorded.
    func granted(
        _ lease: _PGLease, _ counterText: String, _ epochText: String?, _ operation: String, slot: Int64? = nil
    )
        async throws(PostgresLockError) -> Int64
    {
        var epoch = epochText.flatMap { Int64($0) }
        let noted = epoch != nil
        if epoch == nil {
            do {
                epoch = try await lease.runScript(_PostgresLockSQL.newEpoch).first?[0].flatMap { Int64($0) }
            } catch {
                throw self.error(error, operation, "cannot read or start the fencing-token epoch")
            }
        }
        guard let epoch, let counter = Int64(counterText),
            let token = _PostgresLockSQL.token(epoch: epoch, counter: counter)
        else {
            throw PostgresLockError(
                code: .tokensExhausted, lockName: name, operation: operation,
                message: "the fencing token would overflow (epoch \(epoch ?? 0), counter \(counterText))")
        }
        if !noted, slots == nil {
            do {
                _ = try await lease.run("SELECT interlock.note_token($1, $2::bigint)", [name, String(token)])
            } catch {
                throw self.error(error, operation, "cannot note the fencing token \(token) (interlock.note_token)")
            }
        }
        state.withLock {
            $0.held = true
            $0.lost = false
            $0.heldKey = slot ?? key
        }
        // The end of the connection is the end of the hold: the server released the lock.
        lease.connection.closeFuture.whenComplete { [weak self] _ in self?.connectionClosed(lease) }
        return token
    }

    // MARK: - Holding and releasing

    /// The leased connection closed: if it held the lock, the hold is lost.
    private func connectionClosed(_ closed: _PGLease) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.lease === closed, state.held else { return [] }
            state.lost = true
            state.lease = nil
            defer { state.lossWaiters = [:] }
            return Array(state.lossWaiters.values)
        }
        Task { await closed.end() }
        for waiter in waiters { waiter.resume() }
    }

    func release() async throws {
        let (wasHeld, wasLost, lease, nonce) = state.withLock { state in
            defer {
                state.held = false
                state.lost = false
            }
            return (state.held, state.lost, state.lease, state.nonce)
        }
        defer { resumeLossWaiters() }
        guard wasHeld else {
            throw PostgresLockError(
                code: .notHeld, lockName: name, operation: "unlock", message: "this object does not hold the lock")
        }
        guard !wasLost, let lease, !lease.connection.isClosed else {
            await endLease(closing: true)
            throw lostError
        }
        let row: [String?]
        do {
            if slots != nil {
                let release = _PostgresSemaphoreSQL.statements.first { $0.name == _PostgresSemaphoreSQL.release }!.sql
                row =
                    try await lease.run(
                        release, [String(heldKey), nonce, _PostgresSemaphoreSQL.channel(name: name), String(key)]
                    ).first ?? []
            } else {
                let unlock = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.unlock }!.sql
                row = try await lease.run(unlock, [String(key), nonce]).first ?? []
            }
        } catch {
            await endLease(closing: true)
            if error.sessionLost { throw lostError }
            throw self.error(
                error, "unlock", "the server refused the unlock; the connection was closed, which released the lock")
        }
        guard row.first == "t" else {
            await endLease(closing: true)
            throw _PostgresSession.pooler(
                name, "unlock", "the statement ran on a server session that this client does not own")
        }
        guard row.count > 1, row[1] == "t" else {
            await endLease(closing: true)
            throw lostError
        }
        await endLease(unclaiming: true)
    }

    private var lostError: PostgresLockError {
        PostgresLockError(
            code: .lockLost, lockName: name, operation: "unlock",
            message:
                "the connection holding the lock closed (connection lost, server restarted or backend terminated); the server released the lock"
        )
    }

    func checkHeld() async throws -> Bool {
        let (held, lost, lease, nonce) = state.withLock { ($0.held, $0.lost, $0.lease, $0.nonce) }
        guard held, !lost, let lease else { return false }
        do {
            let check = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.check }!.sql
            let row = try await lease.run(check, [String(heldKey), nonce]).first
            guard row?.first == "t" else {
                markLost()
                await endLease(closing: true)
                throw _PostgresSession.pooler(
                    name, "checkHeld", "the statement ran on a server session that this client does not own")
            }
            if _PostgresSession.holds(row) { return true }
        } catch let error as PostgresLockError {
            throw error
        } catch let failure as _PGFailure where !failure.sessionLost {
            throw self.error(failure, "checkHeld", "cannot ask the server")
        } catch {}
        markLost()
        await endLease(closing: true)
        return false
    }

    private func markLost() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.lost = true
            defer { state.lossWaiters = [:] }
            return Array(state.lossWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func holder() async throws -> PostgresLock.Holder? {
        let (own, nonce) = state.withLock { ($0.held && !$0.lost ? $0.lease : nil, $0.nonce) }
        let lease: _PGLease
        if let own {
            lease = own
        } else {
            do {
                lease = try await _PGLease.take(from: client)
            } catch {
                throw PostgresLockError(
                    code: .connectionFailed, lockName: name, operation: "holderInfo",
                    message: "the PostgresClient could not lend a connection", serverMessage: "\(error)")
            }
        }
        defer { if own == nil { Task { await lease.end() } } }
        let rows: [[String?]]
        do {
            let holder = _PostgresLockSQL.statements.first { $0.name == _PostgresLockSQL.holder }!.sql
            rows = try await lease.run(holder, [String(key), own == nil ? "" : nonce])
        } catch {
            throw self.error(error, "holderInfo", "cannot read pg_locks")
        }
        return PostgresLock.Holder(holderRow: rows.first)
    }

    // MARK: - The lease and the loss waiters

    /// Ends the hold's lease: `unclaiming` clears the claim first (a connection that refuses is
    /// closed); `closing` closes the connection (invariant 1).
    private func endLease(unclaiming: Bool = false, closing: Bool = false) async {
        guard
            let lease = state.withLock({ state -> _PGLease? in
                defer {
                    state.lease = nil
                    state.nonce = ""
                }
                return state.lease
            })
        else { return }
        var close = closing
        if unclaiming, !close {
            do {
                _ = try await lease.run(Self.unclaim)
            } catch {
                close = true
            }
        }
        await lease.end(closing: close)
    }

    func waitUntilLost() async {
        let id = state.withLock { state -> UInt64? in
            guard state.held, !state.lost else { return nil }
            state.nextWaiter += 1
            return state.nextWaiter
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard state.held, !state.lost, !Task.isCancelled else { return true }
                    state.lossWaiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.lossWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    private func resumeLossWaiters() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.lossWaiters = [:] }
            return Array(state.lossWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension PostgresLock {
    /// A lock on the advisory lock of `name`, taken through the connections of a postgres-nio
    /// `PostgresClient` (package trait `PostgresNIO`): the application's own pool, with its TLS
    /// and credentials.
    ///
    /// Each hold leases one connection from the client for exactly its length: from the
    /// acquisition (also while it waits) to ``unlock()-3pv7r``. The client must be running
    /// (`client.run()` in a task). Nothing connects until the first call, which creates the
    /// schema `interlock` when it is missing, as ``init(connectionString:name:)`` does.
    ///
    /// What differs from a lock on its own libpq session: a waiting ``lock(before:)`` waits in
    /// the server in slices of at most 250 ms; a cancelled wait closes its leased connection
    /// (which ends the wait in the server and releases anything granted meanwhile), and the pool
    /// opens another;
    /// the client-side keepalives are the client's configuration (the server side's are set as
    /// for every lock); the blocking forms block the calling thread until the async work ends
    /// (never call them on an event loop or from a task). The pooler and fencing rules are the
    /// same.
    /// - Parameters:
    ///   - client: a running PostgresClient.
    ///   - name: the lock's name; every process that uses the same name and database shares it.
    public convenience init(client: PostgresClient, name: String) {
        self.init(client: client, name: name, key: _PostgresLockSQL.key(for: name))
    }

    /// A lock on the advisory lock `key` through a PostgresClient's connections (see
    /// ``init(client:name:)``).
    /// - Parameters:
    ///   - client: a running PostgresClient.
    ///   - name: the lock's name in errors and ``holderInfo()``.
    ///   - key: the advisory lock's bigint key.
    public convenience init(client: PostgresClient, name: String, key: Int64) {
        self.init(name: name, key: key, engine: _PGLeasedLock(client: client, name: name, key: key))
    }
}
#endif
