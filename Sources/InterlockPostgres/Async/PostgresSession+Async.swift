// The async drivers of _PostgresSession: the same round trips as the blocking ones, each sent
// with libpq's asynchronous interface and awaited in the reactor (PostgresConnection+Async.swift),
// the same interpretation of their results (PostgresSession.swift); and the idle watcher, which
// turns the end of a held session into a signal for PostgresLock.waitUntilLost().
//
// Opening a session blocks in libpq (name resolution, the start-up exchange, the claim and the
// prepared statements: several round trips): it runs on a thread of its own (`_PGReactor.offload`)
// while the task is suspended, once per session.
//
// Cancellation of a waiting acquisition: the task's cancellation sends a cancel request for the
// waiting statement. Three outcomes, one rule (a cancelled lock(before:) never returns holding):
//   the statement ends with 57014 (query_canceled)  ask whether the session holds the lock (the
//                                                   grant can race the cancel, as it races
//                                                   lock_timeout); if it does, release it
//   the statement was granted before the cancel     release it
//   lock_timeout passed first (55P03)               as in the blocking form, then not granted
// and then throw CancellationError. A 57014 while the task is not cancelled (an administrator's
// pg_cancel_backend) is "not granted" and the wait goes on.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The session of an object, passed to a thread for the blocking open; the object's gate is
/// held by the task that passes it, and no one else touches the session until it resumes.
final class _PGSessionBox: @unchecked Sendable {
    let session: _PostgresSession
    init(_ session: _PostgresSession) { self.session = session }
}

extension _PostgresSession {
    // MARK: - The idle watcher

    /// Registers `handler` with the reactor, called once when the held session's socket becomes
    /// readable or fails. Call with the gate held, while no statement runs.
    func startWatching(_ handler: @escaping @Sendable () -> Void) {
        guard !watching, heldAndAlive, let open, open.isUsable else { return }
        let fd = open.socket
        if _PGReactor.shared.watch(fd, handler) {
            watching = true
            watchedSocket = fd
        }
    }

    /// Removes the watcher's registration, if any (it may have fired already). Call with the
    /// gate held, before a statement, and before the connection closes.
    func stopWatching() {
        guard watching else { return }
        watching = false
        _PGReactor.shared.cancel(fd: watchedSocket)
    }

    /// After the watcher fired (with the gate held, the watcher unregistered): reads what
    /// arrived, and records a loss when the session ended.
    func pollIdle() {
        guard heldAndAlive, let open else { return }
        if !open.consumeIdleInput() { markLost() }
    }

    // MARK: - Async round trips

    /// The open session, opening one on a thread of its own when there is none.
    func connectionAsync(for operation: String, box: _PGSessionBox) async throws(PostgresLockError) -> _PGConnection {
        if let open, open.isUsable { return open }
        let opened = await _PGReactor.offload { () -> Result<Void, PostgresLockError> in
            Result { () throws(PostgresLockError) in _ = try box.session.connection(for: operation) }
        }
        try opened.get()
        guard let open else {
            throw PostgresLockError(
                code: .connectionFailed, lockName: name, operation: operation,
                message: "internal error: no session after opening one")
        }
        return open
    }

    /// `acquire(operation:waitingUntil:)`, suspending the task instead of blocking.
    func acquireAsync(operation: String, waitingUntil deadline: ContinuousClock.Instant?, box: _PGSessionBox)
        async throws -> Int64?
    {
        precondition(!held, "PostgresLock: internal error, acquiring while held")
        let key = String(self.key)
        let name = self.name
        if let token = try await attemptAsync(
            operation: operation, retryOnLostSession: true, box: box,
            { connection, nonce throws(_PGFailure) in
                try await connection.runAsync(prepared: _PostgresLockSQL.tryLock, [key, nonce, name]).first ?? []
            })
        {
            return token
        }
        guard let deadline else { return nil }
        let probe = _PGContention.begin()
        while let timeout = Self.lockTimeout(until: deadline) {
            try Task.checkCancellation()
            let token = try await attemptAsync(
                operation: operation, retryOnLostSession: false, box: box,
                { [self] connection, nonce throws(_PGFailure) in
                    let sql = _PostgresLockSQL.waitingLock(
                        key: self.key, nonce: nonce, nameLiteral: try connection.literal(self.name),
                        timeoutMilliseconds: timeout)
                    do throws(_PGFailure) {
                        return try await connection.runAsync(sql, cancellable: true).first ?? []
                    } catch  where error.sqlState == "55P03" || error.sqlState == "57014" {
                        // lock_timeout passed, or the statement was cancelled: either may race
                        // the grant (see the blocking form). Ask; if the session holds the lock,
                        // the acquisition succeeded (a cancelled task then gives it back).
                        let check = try await connection.runAsync(prepared: _PostgresLockSQL.check, [key, nonce])
                        guard Self.holds(check.first) else { return Self.notGrantedRow(check.first) }
                        return try await connection.runAsync(prepared: _PostgresLockSQL.counter, [nonce, name]).first
                            ?? []
                    }
                })
            if let token {
                guard Task.isCancelled else {
                    _PGContention.end(probe, self, name: name, semaphore: false)
                    return token
                }
                // Cancelled while (or just after) it was granted: give it back. A failed unlock
                // closed the session, which released the lock.
                _ = try? await releaseAsync()
                throw CancellationError()
            }
        }
        return nil
    }

    func attemptAsync(
        operation: String, retryOnLostSession: Bool, box: _PGSessionBox,
        _ statement: (_PGConnection, String) async throws(_PGFailure) -> [String?]
    ) async throws -> Int64? {
        var retry = retryOnLostSession
        while true {
            let connection = try await connectionAsync(for: operation, box: box)
            let row: [String?]
            do {
                row = try await statement(connection, nonce)
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
                let outcome = await Result { () async throws(_PGFailure) in
                    try await connection.runAsync(_PostgresLockSQL.newEpoch)
                }
                let epoch: Int64
                do {
                    epoch = try startedEpoch(outcome, operation)
                } catch {
                    close()
                    throw error
                }
                let token = try granted(counter: counter, epoch: epoch, operation: operation)
                guard slots == nil else { return token }  // a semaphore's tokens are not noted
                let name = self.name
                try noted(
                    token, operation,
                    await Result { () async throws(_PGFailure) in
                        try await connection.runAsync(prepared: _PostgresLockSQL.note, [name, String(token)])
                    })
                return token
            }
        }
    }

    /// `release()`, suspending the task instead of blocking.
    func releaseAsync() async throws(PostgresLockError) {
        let open = try beginRelease()
        let (statement, parameters) = releaseStatement
        try released(
            await Result { () async throws(_PGFailure) in
                try await open.runAsync(prepared: statement, parameters)
            })
    }

    /// `checkHeld()`, suspending the task instead of blocking.
    func checkHeldAsync() async throws(PostgresLockError) -> Bool {
        guard let open = connectionForCheck() else { return false }
        let key = String(self.heldKey)
        let nonce = self.nonce
        return try checked(
            await Result { () async throws(_PGFailure) in
                try await open.runAsync(prepared: _PostgresLockSQL.check, [key, nonce])
            })
    }
}

extension Result {
    /// The outcome of an async throwing closure with a typed error.
    init(catching body: () async throws(Failure) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
