// PostgresLock behind PgBouncer (scripts/pgbouncer-throwaway.sh, on 127.0.0.1 in front of a
// throwaway server). Transaction and statement pooling hand one server session to many clients,
// so a session-level advisory lock taken by one client is held for whoever lands on that session
// next (advisory locks are re-entrant per session): PostgresLock refuses them. Session pooling
// gives each client its own server session until it disconnects, then resets it (DISCARD ALL),
// and works.
//
// Regression (issue 29): behind PgBouncer 1.18 in transaction mode, a second process's
// tryLock() returned true while the first process held the lock, both with valid tokens.
// `secondClientOnTheHoldersSessionIsRefused` replays it with the init's probe turned off, so
// that the statements' own-session test alone has to stop it. PgBouncer reuses its idle server
// connections last-in first-out (server_round_robin = 0), which makes the replay deterministic.

import Interlock
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("PostgresLock behind PgBouncer", .serialized, .timeLimit(.minutes(2)))
struct PostgresLockPoolerTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test(
        "transaction and statement pooling are refused when the lock is created",
        arguments: ["transaction", "statement"])
    func sharingPoolersAreRefused(mode: String) throws {
        let bouncer = try PgBouncerServer(proxying: server, mode: mode)
        defer { bouncer.stop() }
        let name = "pooler-refused-\(mode)"
        // Again and again: the first object claims a fresh server session (the probe finds it),
        // the later ones are handed a session that an earlier one claimed.
        for attempt in 0..<4 {
            let error = try #require(throws: PostgresLockError.self, "attempt \(attempt)") {
                _ = try PostgresLock(connectionString: bouncer.connectionString, name: name)
            }
            #expect(error.code == .unsupportedPooler)
            #expect(error.operation == "init")
            #expect(error.description.contains("transaction or statement mode"), "\(error)")
            #expect(error.description.contains("pool_mode = session"), "\(error)")
        }
        #expect(try PGTest.advisoryLockRows(server, key: _PostgresLockSQL.key(for: name)).isEmpty)
    }

    /// A lock (without the init's probe) taken through `bouncer`, and a second connection with
    /// an open transaction on the holder's server session, which PgBouncer hands it as the last
    /// one idle. - Returns: the lock, the holder's backend pid, the pinning connection.
    func holdAndPin(_ bouncer: PgBouncerServer, name: String, key: Int64) throws -> (
        PostgresLock, Int32, _PGConnection
    ) {
        let lock = try PostgresLock(
            connectionString: bouncer.connectionString, name: name, key: key, probingPoolers: false)
        #expect(try lock.tryLock())
        let holderSession = try #require(try PGTest.holderPID(server, key: key))
        let pin = try _PGConnection(connectionString: bouncer.connectionString)
        _ = try pin.run("BEGIN")
        let pinned = try pin.run("SELECT pg_backend_pid()").first?[0]
        try #require(pinned == String(holderSession), "PgBouncer did not reuse its last idle server session")
        return (lock, holderSession, pin)
    }

    @Test("regression: a second client sent to the holder's server session is refused, never granted", .blocking)
    func secondClientOnTheHoldersSessionIsRefused() throws {
        let bouncer = try PgBouncerServer(proxying: server, mode: "transaction")
        defer { bouncer.stop() }
        let name = "pooler-replay"
        let key = _PostgresLockSQL.key(for: name)
        // A third client pins the holder's server session with an open transaction, so that the
        // second object is given another one when it claims its own.
        let (first, holderSession, pin) = try holdAndPin(bouncer, name: name, key: key)
        defer { pin.close() }
        let second = try PostgresLock(
            connectionString: bouncer.connectionString, name: name, key: key, probingPoolers: false)
        _ = try pin.run("COMMIT")

        // The second object's tryLock now lands on the holder's session (the last one idle),
        // where pg_try_advisory_lock would say true: the own-session test refuses instead.
        let error = try #require(throws: PostgresLockError.self) { _ = try second.tryLock() }
        #expect(error.code == .unsupportedPooler)
        #expect(error.description.contains("does not own"), "\(error)")
        #expect(second.fencingToken == nil)
        let rows = try PGTest.advisoryLockRows(server, key: key)
        #expect(rows.count == 1 && rows[0].pid == holderSession && rows[0].granted, "\(rows)")

        // The first object's unlock lands on its own session again and releases the lock.
        try first.unlock()
        #expect(try PGTest.advisoryLockRows(server, key: key).isEmpty)
    }

    @Test("an unlock sent to another client's server session is refused and releases nothing there", .blocking)
    func unlockOnAnotherSessionIsRefused() throws {
        let bouncer = try PgBouncerServer(proxying: server, mode: "transaction")
        defer { bouncer.stop() }
        let name = "pooler-unlock-elsewhere"
        let key = _PostgresLockSQL.key(for: name)
        let (holder, holderSession, pin) = try holdAndPin(bouncer, name: name, key: key)

        // The holder's session is busy: the unlock goes to another one, whose session-level
        // state is not the holder's.
        let error = try #require(throws: PostgresLockError.self) { try holder.unlock() }
        #expect(error.code == .unsupportedPooler)
        #expect(holder.fencingToken == nil)
        let rows = try PGTest.advisoryLockRows(server, key: key)
        #expect(rows.count == 1 && rows[0].pid == holderSession, "\(rows)")
        // Stuck on the pooled session until PgBouncer closes it: what the refusal at init spares.
        _ = try pin.run("COMMIT")
        pin.close()
        bouncer.stop()
        #expect(try PGTest.eventually { try PGTest.advisoryLockRows(server, key: key).isEmpty })
    }

    @Test("session pooling works: exclusion, a hand-off to a waiter, and a vanished client's lock released", .blocking)
    func sessionPoolingWorks() throws {
        let bouncer = try PgBouncerServer(proxying: server, mode: "session")
        defer { bouncer.stop() }
        let name = "pooler-session"
        let first = try PostgresLock(connectionString: bouncer.connectionString, name: name)
        let second = try PostgresLock(connectionString: bouncer.connectionString, name: name)
        #expect(try first.tryLock())
        let firstToken = try #require(first.fencingToken)
        #expect(try !second.tryLock())
        #expect(try first.checkHeld())

        let waiter = PGThread { try second.lock(before: .now + .seconds(30)) }
        #expect(try PGTest.eventually { try PGTest.someoneWaits(server, key: second.key) })
        try first.unlock()
        #expect(try waiter.join().get())
        let secondToken = try #require(second.fencingToken)
        #expect(secondToken > firstToken)
        try second.unlock()
        #expect(try PGTest.advisoryLockRows(server, key: first.key).isEmpty)

        // A holder process killed through the pooler: PgBouncer resets its server session
        // (DISCARD ALL), which releases the lock.
        let child = try PGHelper.spawn(["hold", bouncer.connectionString, name])
        let line = try #require(child.readLine(within: .seconds(20)), "the child did not report holding")
        #expect(line.hasPrefix("held "))
        #expect(try !first.tryLock())
        child.kill(SIGKILL)
        #expect(try PGTest.eventually { try first.tryLock() }, "the killed holder's lock was not released")
        #expect(try #require(first.fencingToken) > secondToken)
        try first.unlock()
    }

    @Test("tokens keep growing across a server crash behind a session pooler", .blocking)
    func tokensGrowAcrossACrashBehindAPooler() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let bouncer = try PgBouncerServer(proxying: server, mode: "session")
        defer { bouncer.stop() }
        let lock = try PostgresLock(connectionString: bouncer.connectionString, name: "pooler-crash")
        var last: Int64 = 0
        for round in 0..<3 {
            for _ in 0..<3 {
                // The first call after a crash may find PgBouncer still reconnecting.
                let taken = PGTest.eventually(within: .seconds(20)) { (try? lock.tryLock()) == true }
                try #require(taken, "round \(round)")
                let token = try #require(lock.fencingToken)
                #expect(token > last, "round \(round): \(token) after \(last)")
                last = token
                try lock.unlock()
            }
            try server.control("stop-immediate")
            try server.control("start")
        }
        // The last crash reset the counter: only the epoch, read with it, keeps the order.
        let after = PGTest.eventually(within: .seconds(20)) { (try? lock.tryLock()) == true }
        #expect(after)
        #expect(try #require(lock.fencingToken) > last)
        try lock.unlock()
    }

    @Test("PostgresSemaphore: transaction pooling refused; session pooling counts permits and wakes a waiter")
    func semaphoreBehindPoolers() async throws {
        let name = "pooler-semaphore"
        let sharing = try PgBouncerServer(proxying: server, mode: "transaction")
        for attempt in 0..<3 {
            let error = try #require(throws: PostgresLockError.self, "attempt \(attempt)") {
                _ = try PostgresSemaphore(connectionString: sharing.connectionString, name: name, permits: 2)
            }
            #expect(error.code == .unsupportedPooler)
            #expect(error.description.hasPrefix("PostgresSemaphore.init \"\(name)\""), "\(error)")
        }
        sharing.stop()

        let bouncer = try PgBouncerServer(proxying: server, mode: "session")
        defer { bouncer.stop() }
        let semaphores = try (0..<3).map { _ in
            try PostgresSemaphore(connectionString: bouncer.connectionString, name: name, permits: 2)
        }
        semaphores[2].box.session.recheckInterval = .seconds(600)  // woken by the release only
        #expect(try await semaphores[0].tryAcquire())
        #expect(try await semaphores[1].tryAcquire())
        #expect(try await !semaphores[2].tryAcquire())
        let waiting = Task { try await semaphores[2].acquire(before: .now + .seconds(60)) }
        let waitKey = _PostgresSemaphoreSQL.waitKey(name: name)
        while try PGTest.advisoryLockRows(server, key: waitKey).isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        try await semaphores[0].release()
        #expect(try await waiting.value)
        try await semaphores[1].release()
        try await semaphores[2].release()
    }
}
