// PostgresSemaphore over a postgres-nio PostgresClient (the trait PostgresNIO): the lease engine
// of PostgresLeasedLock.swift with the semaphore's statements (PostgresSemaphoreSQL.swift), and
// its wait: the same protocol as on a libpq session (W1-W5 there), with postgres-nio's listener
// for the notifications:
//
//   W1  addListener on the semaphore's channel: postgres-nio sends LISTEN on the leased
//       connection before any later statement of ours, so it is committed when W2 returns
//   W2  pg_advisory_lock_shared(waitKey)
//   W3  try every slot
//   W4  wait on a Semaphore that the listener signals, until a notification, 0.5 s or the
//       deadline; then W3
//   W5  pg_advisory_unlock_shared(waitKey); the listener stopped (postgres-nio sends UNLISTEN)
//
// A cancelled wait throws; the acquisition then closes its connection (PostgresLeasedLock's
// acquire), which ends the listener, the wait key and anything granted meanwhile. The session
// keeps synchronous_commit as the pool's connection has it: a contended release's NOTIFY then
// waits for its commit record's flush (a semaphore on its own libpq session turns that off; a
// pooled connection must not be changed for its other users).

#if INTERLOCK_POSTGRES_NIO
import Interlock
import PostgresNIO

extension _PGLeasedLock {
    /// The slots in a random rotation, as a bigint[] parameter.
    private func slotOrder() -> String {
        let keys = slots ?? []
        let start = keys.isEmpty ? 0 : Int.random(in: 0..<keys.count)
        return _PostgresSemaphoreSQL.slotArray(Array(keys[start...] + keys[..<start]))
    }

    /// One try of every slot. - Returns: the token, or nil when none was free.
    private func tryPermit(_ lease: _PGLease, _ nonce: String, _ operation: String) async throws -> Int64? {
        let order = slotOrder()
        let statement = _PostgresSemaphoreSQL.statements.first { $0.name == _PostgresSemaphoreSQL.tryAcquire }!.sql
        let row = try await withSchema(lease, operation) { () async throws(_PGFailure) -> [String?] in
            try await lease.run(statement, [order, nonce]).first ?? []
        }
        guard row.first == "t", row.count >= 5 else {
            throw _PostgresSession.pooler(
                name, operation, "the statement ran on a server session that this client does not own")
        }
        guard let counter = row[1] else { return nil }
        guard let slot = row[4].flatMap({ Int64($0) }) else {
            throw PostgresLockError(
                code: .serverError, lockName: name, operation: operation,
                message: "internal error: a granted permit without its slot")
        }
        return try await granted(lease, counter, row[2], operation, slot: slot)
    }

    /// The semaphore's acquisition (see the file comment). - Returns: the token, or nil when the
    /// deadline passed first.
    func attemptPermit(
        _ lease: _PGLease, _ nonce: String, _ operation: String, _ deadline: ContinuousClock.Instant?
    ) async throws -> Int64? {
        if let token = try await tryPermit(lease, nonce, operation) { return token }
        guard let deadline, ContinuousClock.now < deadline else { return nil }
        let wake = Interlock.Semaphore(value: 0)
        let listener = lease.connection.addListener(channel: _PostgresSemaphoreSQL.channel(name: name)) { _, _ in
            wake.signal()
        }
        defer { listener.stop() }
        let waitKey = [String(key)]
        do {
            _ = try await lease.run("SELECT pg_advisory_lock_shared($1::bigint)", waitKey)
        } catch {
            throw PostgresLockError(
                error, lockName: name, operation: operation, doing: "cannot start waiting for a permit",
                lost: .connectionFailed)
        }
        var token: Int64?
        while true {
            try Task.checkCancellation()
            token = try await tryPermit(lease, nonce, operation)
            let now = ContinuousClock.now
            if token != nil || now >= deadline { break }
            _ = try await wake.wait(before: min(deadline, now + recheckInterval))
        }
        do {
            _ = try await lease.run("SELECT pg_advisory_unlock_shared($1::bigint)", waitKey)
        } catch {
            // The connection is in doubt: the acquisition's failure path closes it.
            throw PostgresLockError(
                error, lockName: name, operation: operation, doing: "cannot stop waiting for a permit",
                lost: .connectionFailed)
        }
        return token
    }
}

extension PostgresSemaphore {
    /// A semaphore of `permits` holders of `name`, taken through the connections of a
    /// postgres-nio `PostgresClient` (package trait `PostgresNIO`): each hold leases one
    /// connection for exactly its length, as ``PostgresLock/init(client:name:)`` does.
    ///
    /// Waiters are woken by the releases' notifications (postgres-nio's listener on the leased
    /// connection) or try again every 0.5 s; a cancelled wait closes its connection. The pooled
    /// connection's `synchronous_commit` is left as it is, so a release that wakes waiters waits
    /// for its commit record to reach disk. The blocking forms must not be called on an event
    /// loop or from a task.
    /// - Parameters:
    ///   - client: a running PostgresClient.
    ///   - name: the semaphore's name.
    ///   - permits: how many holders at once, 1 through ``maximumPermits`` (else a trap); every
    ///     process must pass the same number.
    public convenience init(client: PostgresClient, name: String, permits: Int) {
        self.init(
            name: name, permits: permits,
            engine: _PGLeasedLock(
                client: client, name: name, key: _PostgresSemaphoreSQL.waitKey(name: name),
                slots: _PostgresSemaphoreSQL.slotKeys(
                    name: name, permits: PostgresSemaphore.checkPermits(permits, name))))
    }
}
#endif
