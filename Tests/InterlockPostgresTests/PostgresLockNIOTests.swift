// PostgresLock over a postgres-nio PostgresClient (the package trait PostgresNIO; these tests
// exist only with it: `swift test --traits PostgresNIO`, make test-nio): exclusion with a lock on
// its own libpq session, a connection leased for exactly the hold (a pool of one connection
// serves hold after hold, its claim cleared in between), a waiting lock(before:) granted at the
// release, a cancelled wait that holds nothing, a terminated backend seen by waitUntilLost,
// checkHeld and unlock, and the blocking forms from a thread.

#if INTERLOCK_POSTGRES_NIO
import Interlock
import PostgresNIO
import Testing

@testable import InterlockPostgres

/// Runs `body` with a running client of `server` (a pool of `connections`, over its socket).
func withNIOClient<R>(
    _ server: PostgresServer, connections: Int = 4, _ body: (PostgresClient) async throws -> R
) async throws -> R {
    var configuration = PostgresClient.Configuration(
        unixSocketPath: "\(server.directory)/.s.PGSQL.\(server.port)", username: "postgres", password: nil,
        database: "postgres")
    configuration.options.maximumConnections = connections
    configuration.options.minimumConnections = 0
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    return try await body(client)
}

@Suite("PostgresLock over a PostgresClient", .timeLimit(.minutes(2)))
struct PostgresLockNIOTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    func withClient<R>(connections: Int = 4, _ body: (PostgresClient) async throws -> R) async throws -> R {
        try await withNIOClient(server, connections: connections, body)
    }

    @Test("exclusion with a lock on its own session; tokens grow; holderInfo names the leased connection")
    func exclusionAndTokens() async throws {
        try await withClient { client in
            let name = "nio-exclusion"
            let first = PostgresLock(client: client, name: name)
            let second = PostgresLock(client: client, name: name)
            let own = try PostgresLock(connectionString: server.connectionString, name: name)
            #expect(try await first.tryLock())
            let token = try #require(first.fencingToken)
            #expect(try await !second.tryLock())
            #expect(try await !own.tryLock())
            #expect(try await !first.tryLock(), "a held lock is not taken again")
            #expect(try await first.checkHeld())
            let holder = try #require(try await onThread { try first.holderInfo() })
            #expect(holder.isThisObject)
            #expect(try PGTest.holderPID(server, key: first.key) == holder.backendProcessID)
            try await first.unlock()
            #expect(first.fencingToken == nil)
            #expect(try await own.tryLock())
            #expect(try #require(own.fencingToken) > token)
            try await own.unlock()
            #expect(try await second.tryLock())
            #expect(try #require(second.fencingToken) > token)
            try await second.unlock()
            let error = await #expect(throws: PostgresLockError.self) { try await second.unlock() }
            #expect(error?.code == .notHeld)
        }
    }

    @Test("a connection is leased for exactly the hold: a pool of one serves hold after hold")
    func leaseForTheHold() async throws {
        try await withClient(connections: 1) { client in
            let locks = (0..<3).map { PostgresLock(client: client, name: "nio-lease-\($0)") }
            var backends: Set<Int32> = []
            for _ in 0..<2 {
                for lock in locks {
                    #expect(try await lock.tryLock())
                    backends.insert(try #require(try await onThread { try lock.holderInfo() }).backendProcessID)
                    try await lock.unlock()
                }
            }
            // A hold that waited: its lock_timeout slices must not stay on the pool's connection.
            let own = try PostgresLock(connectionString: server.connectionString, name: "nio-lease-0")
            #expect(try await own.tryLock())
            let waited = Task { try await locks[0].lock(before: .now + .seconds(30)) }
            while try !PGTest.someoneWaits(server, key: own.key) { try await Task.sleep(for: .milliseconds(5)) }
            try await own.unlock()
            #expect(try await waited.value)
            backends.insert(try #require(try await onThread { try locks[0].holderInfo() }).backendProcessID)
            try await locks[0].unlock()
            let settings = try await client.withConnection { connection in
                var values: [String] = []
                let rows = try await connection.query(
                    "SELECT current_setting('lock_timeout'), coalesce(current_setting('interlock.client', true), '')",
                    logger: connection.logger)
                for try await (timeout, claim) in rows.decode((String, String).self) { values = [timeout, claim] }
                return values
            }
            #expect(settings == ["0", ""], "the pool's connection came back with \(settings)")
            // One connection served all seven holds: each unlock gave it back, claim cleared.
            #expect(backends.count == 1)
            let claimed = try server.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = \(backends.first ?? 0)")
            #expect(claimed.first?.first == "1", "the pool's connection is still open")
        }
    }

    @Test("a waiting lock(before:) is granted at the release; a cancelled one holds nothing")
    func waitingAndCancellation() async throws {
        try await withClient { client in
            let name = "nio-waiting"
            let holder = PostgresLock(client: client, name: name)
            let waiter = PostgresLock(client: client, name: name)
            #expect(try await holder.tryLock())
            let held = try #require(holder.fencingToken)
            let waiting = Task { try await waiter.lock(before: .now + .seconds(60)) }
            while try !PGTest.someoneWaits(server, key: holder.key) { try await Task.sleep(for: .milliseconds(5)) }
            try await holder.unlock()
            #expect(try await waiting.value)
            #expect(try #require(waiter.fencingToken) > held)

            // Now the waiter holds it; a third object waits and is cancelled.
            let third = PostgresLock(client: client, name: name)
            let cancelled = Task { try await third.lock(before: .now + .seconds(60)) }
            while try !PGTest.someoneWaits(server, key: holder.key) { try await Task.sleep(for: .milliseconds(5)) }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            #expect(third.fencingToken == nil)
            // The cancelled wait's connection was closed; its backend leaves the queue as it exits.
            #expect(
                try PGTest.eventually { try PGTest.advisoryLockRows(server, key: holder.key).count == 1 },
                "only the holder's row")
            try await waiter.unlock()
            #expect(try PGTest.advisoryLockRows(server, key: holder.key).isEmpty)
            #expect(try await third.tryLock(), "the cancelled object works afterwards")
            try await third.unlock()
            let gaveUp = ContinuousClock.now
            #expect(try await holder.tryLock())
            #expect(try await !third.lock(before: gaveUp + .milliseconds(600)))
            #expect(ContinuousClock.now - gaveUp >= .milliseconds(600))
            try await holder.unlock()
        }
    }

    @Test("a terminated backend: waitUntilLost returns, checkHeld is false, unlock throws lockLost")
    func terminatedBackend() async throws {
        try await withClient { client in
            let name = "nio-terminated"
            let lock = PostgresLock(client: client, name: name)
            let other = PostgresLock(client: client, name: name)
            #expect(try await lock.tryLock())
            let pid = try #require(try PGTest.holderPID(server, key: lock.key))
            let lost = Task { await lock.waitUntilLost() }
            let terminated = try server.execute("SELECT pg_terminate_backend(\(pid), 10000)")
            #expect(terminated.first?.first == "t")
            await lost.value
            #expect(lock.fencingToken == nil)
            #expect(try await !lock.checkHeld())
            let error = await #expect(throws: PostgresLockError.self) { try await lock.unlock() }
            #expect(error?.code == .lockLost)
            #expect(try await other.tryLock())
            try await other.unlock()
            #expect(try await lock.tryLock(), "a new lease after the loss")
            try await lock.unlock()
        }
    }

    @Test("the blocking forms, from a thread of their own")
    func blockingForms() async throws {
        try await withClient { client in
            let lock = PostgresLock(client: client, name: "nio-blocking")
            let (taken, held, again) = try await onThread { () throws -> (Bool, Bool, Bool) in
                let taken = try lock.lock(before: .now + .seconds(5))
                let held = try lock.checkHeld()
                try lock.unlock()
                return (taken, held, try lock.tryLock())
            }
            #expect(taken && held && again)
            try await lock.unlock()
        }
    }
}
#endif

#if INTERLOCK_POSTGRES_NIO
@Suite("PostgresSemaphore over a PostgresClient", .timeLimit(.minutes(2)))
struct PostgresSemaphoreNIOTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    func withClient<R>(connections: Int = 4, _ body: (PostgresClient) async throws -> R) async throws -> R {
        try await withNIOClient(server, connections: connections, body)
    }

    /// How many sessions hold a slot of the semaphore `name` of `permits`.
    func slotHolders(_ name: String, permits: Int) throws -> Int {
        try _PostgresSemaphoreSQL.slotKeys(name: name, permits: permits).reduce(0) {
            $0 + (try PGTest.advisoryLockRows(server, key: $1).filter(\.granted).count)
        }
    }

    /// How many sessions wait for a permit of `name` (they hold its wait key).
    func waiters(_ name: String) throws -> Int {
        try PGTest.advisoryLockRows(server, key: _PostgresSemaphoreSQL.waitKey(name: name)).filter(\.granted).count
    }

    @Test("permits counted with a semaphore on its own session; a waiter woken by the release's notification")
    func countingAndWaking() async throws {
        try await withClient { client in
            let name = "nio-semaphore"
            let pooled = PostgresSemaphore(client: client, name: name, permits: 2)
            let own = try PostgresSemaphore(connectionString: server.connectionString, name: name, permits: 2)
            let waiter = PostgresSemaphore(client: client, name: name, permits: 2)
            (waiter.engine as! _PGLeasedLock).recheckInterval = .seconds(600)  // woken by the release only
            #expect(try await pooled.tryAcquire())
            #expect(try await own.tryAcquire())
            #expect(try await !waiter.tryAcquire())
            #expect(try slotHolders(name, permits: 2) == 2)
            let first = try #require(pooled.fencingToken)
            let waiting = Task { try await waiter.acquire(before: .now + .seconds(60)) }
            while try waiters(name) == 0 { try await Task.sleep(for: .milliseconds(5)) }
            try await own.release()
            #expect(try await waiting.value)
            #expect(try #require(waiter.fencingToken) > first)
            #expect(try await waiter.checkHeld())
            #expect(try waiters(name) == 0)
            try await pooled.release()
            try await waiter.release()
            #expect(try slotHolders(name, permits: 2) == 0)
            let error = await #expect(throws: PostgresLockError.self) { try await waiter.release() }
            #expect(error?.code == .notHeld)
            #expect(error?.description.hasPrefix("PostgresSemaphore.unlock") == true, "\(String(describing: error))")
        }
    }

    @Test("a cancelled wait holds nothing; a pool of one connection serves the semaphore after it")
    func cancellation() async throws {
        try await withClient(connections: 2) { client in
            let name = "nio-semaphore-cancel"
            let holder = try PostgresSemaphore(connectionString: server.connectionString, name: name, permits: 1)
            let waiter = PostgresSemaphore(client: client, name: name, permits: 1)
            #expect(try await holder.tryAcquire())
            let waiting = Task { try await waiter.acquire(before: .now + .seconds(60)) }
            while try waiters(name) == 0 { try await Task.sleep(for: .milliseconds(5)) }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(waiter.fencingToken == nil)
            #expect(try PGTest.eventually { try waiters(name) == 0 }, "the cancelled waiter's wait key stayed")
            #expect(try slotHolders(name, permits: 1) == 1)
            try await holder.release()
            #expect(try await waiter.acquire(before: .now + .seconds(10)))
            try await waiter.release()
        }
    }
}
#endif
